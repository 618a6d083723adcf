// Package agentcalltest is the one fake of agentcall.Caller for the
// relay's tests: a table of connected agents, each with its Info, whose
// calls a test's function answers, and a record of every call. The
// packages that reach agents through an interface of their own (the
// Management API, the support route, the cluster's local hub) test against
// it instead of a hub with real tunnels.
package agentcalltest

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
)

// Answer answers a call that reached a connected agent.
type Answer func(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error)

// Call is a call that reached a connected agent.
type Call struct {
	UserID, Fn, RequestID string
	Args                  json.RawMessage
}

// Agents is the fake: safe for concurrent use. Its zero value has no agent
// connected and answers every call with an empty object.
type Agents struct {
	mu      sync.Mutex
	infos   map[string]agentcall.Info
	answer  Answer
	calls   []Call
	evicted []string
	// onStatus, when set, learns every connect and disconnect, as the
	// hub publishes them (outside the lock).
	onStatus func(userID string, connected bool)
}

// New returns the fake with answer (nil: an empty object).
func New(answer Answer) *Agents { return &Agents{answer: answer} }

// OnStatus makes the fake report its connects and disconnects to fn, as
// the hub publishes statuses; call it before any Connect.
func (a *Agents) OnStatus(fn func(userID string, connected bool)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.onStatus = fn
}

// SetAnswer replaces the function that answers calls (nil: an empty
// object).
func (a *Agents) SetAnswer(answer Answer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.answer = answer
}

// Connect makes userID's agent connected, with info (its SessionID is
// what Evict matches).
func (a *Agents) Connect(userID string, info agentcall.Info) {
	a.mu.Lock()
	if a.infos == nil {
		a.infos = map[string]agentcall.Info{}
	}
	a.infos[userID] = info
	fn := a.onStatus
	a.mu.Unlock()
	if fn != nil {
		fn(userID, true)
	}
}

// Disconnect ends userID's agent, if connected.
func (a *Agents) Disconnect(userID string) {
	a.mu.Lock()
	_, ok := a.infos[userID]
	delete(a.infos, userID)
	fn := a.onStatus
	a.mu.Unlock()
	if ok && fn != nil {
		fn(userID, false)
	}
}

// Evict ends userID's agent of sessionID, as hub.Hub.Evict does, and
// reports whether it was connected.
func (a *Agents) Evict(userID, sessionID string) bool {
	a.mu.Lock()
	info, ok := a.infos[userID]
	if !ok || info.SessionID != sessionID {
		a.mu.Unlock()
		return false
	}
	delete(a.infos, userID)
	a.evicted = append(a.evicted, sessionID)
	fn := a.onStatus
	a.mu.Unlock()
	if fn != nil {
		fn(userID, false)
	}
	return true
}

// Connected implements agentcall.Caller.
func (a *Agents) Connected(userID string) bool {
	_, ok := a.Info(userID)
	return ok
}

// Info implements agentcall.Caller.
func (a *Agents) Info(userID string) (agentcall.Info, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	info, ok := a.infos[userID]
	return info, ok
}

// Call implements agentcall.Caller: agentcall.ErrNotConnected for a user
// without an agent, else what the answer function returns.
func (a *Agents) Call(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
	a.mu.Lock()
	_, ok := a.infos[userID]
	answer := a.answer
	if ok {
		a.calls = append(a.calls, Call{UserID: userID, Fn: fn, RequestID: requestID, Args: slices.Clone(args)})
	}
	a.mu.Unlock()
	if !ok {
		return nil, agentcall.ErrNotConnected
	}
	if answer == nil {
		return json.RawMessage(`{}`), nil
	}
	return answer(ctx, userID, fn, requestID, args)
}

// Calls returns the calls that reached an agent, of userID ("" for
// every user), in order.
func (a *Agents) Calls(userID string) []Call {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []Call
	for _, c := range a.calls {
		if userID == "" || c.UserID == userID {
			out = append(out, c)
		}
	}
	return out
}

// Evicted returns the sessions Evict ended, in order.
func (a *Agents) Evicted() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.evicted)
}

// Pushes returns the configurations pushed to userID's agent
// (protocol.FnApplyConfig), in order.
func (a *Agents) Pushes(userID string) []protocol.Config {
	var out []protocol.Config
	for _, c := range a.Calls(userID) {
		if c.Fn == protocol.FnApplyConfig {
			var cfg protocol.Config
			_ = json.Unmarshal(c.Args, &cfg)
			out = append(out, cfg)
		}
	}
	return out
}

// The fake is a Caller.
var _ agentcall.Caller = (*Agents)(nil)
