package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/events"
)

// setSubscriptions is Call of protocol.FnSetSubscriptions: args is this
// node's whole set for userID. The holding node answers with this node's
// share of the agent's answer; this node then receives the quotes of the
// contracts in it (none when the local hub holds the user: it delivers
// them itself).
func (c *Cluster) setSubscriptions(ctx context.Context, userID string, args json.RawMessage) (json.RawMessage, error) {
	if c.holds(userID) {
		return c.holderSetSubscriptions(ctx, userID, c.opts.Node, args)
	}
	if userID == "" {
		return nil, agentcall.ErrNotConnected
	}
	res, err := c.request(ctx, c.subj.agent(userID), OpCall, protocol.FnSetSubscriptions, "", args)
	switch {
	case err == nil:
		var r protocol.SubscriptionsResult
		if err := json.Unmarshal(res, &r); err != nil {
			return nil, fmt.Errorf("%w: subscriptions result: %v", ErrProtocol, err)
		}
		c.receiveQuotes(userID, contractsOf(r))
	case errors.Is(err, agentcall.ErrNotConnected):
		// Connected nowhere: no quotes will come; the stream sends its set
		// again when the agent connects.
		c.receiveQuotes(userID, nil)
	}
	return res, err
}

// holderSetSubscriptions records origin's set for userID, whose agent the
// local hub holds, sends the agent the union of every origin's set, and
// returns origin's share of the answer. Changes of one user run one at a
// time, so that the agent's last set is the union of the latest sets.
func (c *Cluster) holderSetSubscriptions(ctx context.Context, userID, origin string, args json.RawMessage) (json.RawMessage, error) {
	var a protocol.SubscriptionsArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, &protocol.Error{Code: protocol.CodeInvalidArgument, Detail: "malformed subscription set"}
	}
	c.mu.Lock()
	h := c.held[userID]
	c.mu.Unlock()
	if h == nil {
		return nil, agentcall.ErrNotConnected
	}
	select {
	case h.subLock <- struct{}{}:
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, agentcall.ErrTimeout
		}
		return nil, ctx.Err()
	}
	defer func() { <-h.subLock }()

	names := slices.Clone(a.Instruments)
	slices.Sort(names)
	names = slices.Compact(names)
	c.mu.Lock()
	if len(names) == 0 {
		delete(h.sets, origin)
	} else {
		h.sets[origin] = names
	}
	sets := make(map[string][]string, len(h.sets))
	union := []string{}
	for o, ns := range h.sets {
		sets[o] = ns
		union = append(union, ns...)
	}
	c.mu.Unlock()
	slices.Sort(union)
	union = slices.Compact(union)

	res, err := c.opts.Local.Call(ctx, userID, protocol.FnSetSubscriptions, "", mustJSON(protocol.SubscriptionsArgs{Instruments: union}))
	if err != nil {
		return nil, err
	}
	var r protocol.SubscriptionsResult
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, fmt.Errorf("%w: the agent's subscriptions result: %v", ErrProtocol, err)
	}
	mine := protocol.SubscriptionsResult{Instruments: []string{}}
	parts := make(map[string][]string, len(sets))
	for o, ns := range sets {
		share := shareOf(r, ns)
		if o == origin {
			mine = share
		}
		if o != c.opts.Node {
			parts[o] = contractsOf(share)
		}
	}
	// Quotes of the contracts other nodes asked for cross the bus.
	out := make(map[string]bool)
	for _, cs := range parts {
		for _, ct := range cs {
			out[ct] = true
		}
	}
	c.mu.Lock()
	if c.held[userID] == h {
		h.parts = parts
		c.outMu.Lock()
		if len(out) == 0 {
			delete(c.quoteOut, userID)
		} else {
			c.quoteOut[userID] = out
		}
		c.outMu.Unlock()
	}
	c.mu.Unlock()
	return mustJSON(mine), nil
}

// shareOf is the part of the agent's answer r that concerns names: the
// requested names it resolved (Resolved), the contracts they resolve to,
// and the names it does not know. From an agent that reports no
// Resolved, the share holds the contracts the names may resolve to (the
// name itself, or a contract of the root of a root or month-code name),
// which the stream server maps by its rules.
func shareOf(r protocol.SubscriptionsResult, names []string) protocol.SubscriptionsResult {
	out := protocol.SubscriptionsResult{Instruments: []string{}}
	unknown := make(map[string]bool, len(r.Unknown))
	for _, u := range r.Unknown {
		unknown[protocol.NormalizeInstrument(u)] = true
	}
	for _, n := range names {
		if unknown[protocol.NormalizeInstrument(n)] {
			out.Unknown = append(out.Unknown, n)
		}
	}
	if r.Resolved != nil {
		out.Resolved = make(map[string]string, len(names))
		for _, n := range names {
			if ct, ok := r.Resolved[n]; ok {
				out.Resolved[n] = ct
				if !slices.Contains(out.Instruments, ct) {
					out.Instruments = append(out.Instruments, ct)
				}
			}
		}
		return out
	}
	exact := make(map[string]bool, len(names))
	roots := make(map[string]bool)
	for _, n := range names {
		nn := protocol.NormalizeInstrument(n)
		exact[nn] = true
		if unknown[nn] {
			continue
		}
		if in, err := protocol.ParseInstrument(nn); err == nil && in.Form != protocol.InstrumentContract {
			roots[in.Root] = true
		}
	}
	for _, ct := range r.Instruments {
		nc := protocol.NormalizeInstrument(ct)
		keep := exact[nc]
		if !keep {
			in, err := protocol.ParseInstrument(nc)
			keep = err == nil && in.Form == protocol.InstrumentContract && roots[in.Root]
		}
		if keep && !slices.Contains(out.Instruments, ct) {
			out.Instruments = append(out.Instruments, ct)
		}
	}
	return out
}

// contractsOf lists the contracts of a subscriptions result as quotes
// name them (protocol.NormalizeInstrument).
func contractsOf(r protocol.SubscriptionsResult) []string {
	var out []string
	add := func(s string) {
		if n := protocol.NormalizeInstrument(s); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, s := range r.Instruments {
		add(s)
	}
	for _, s := range r.Resolved {
		add(s)
	}
	return out
}

// receiveQuotes makes this node subscribe to userID's quotes of exactly
// contracts (none while the local hub holds the user).
func (c *Cluster) receiveQuotes(userID string, contracts []string) {
	var drop []*nats.Subscription
	added := false
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	want := make(map[string]bool, len(contracts))
	if c.held[userID] == nil {
		for _, ct := range contracts {
			want[ct] = true
		}
	}
	cur := c.quoteIn[userID]
	if cur == nil {
		cur = make(map[string]*nats.Subscription)
	}
	for ct, s := range cur {
		if !want[ct] {
			drop = append(drop, s)
			delete(cur, ct)
			delete(c.targets, c.subj.quote(userID, ct))
		}
	}
	for ct := range want {
		if cur[ct] != nil {
			continue
		}
		subject := c.subj.quote(userID, ct)
		s, err := c.nc.ChanSubscribe(subject, c.quoteCh)
		if err != nil {
			c.log.Error("subscribing to quotes", zap.String("user", userID), zap.String("contract", ct), zap.Error(err))
			continue
		}
		cur[ct] = s
		c.targets[subject] = &target{kind: targetQuote, user: userID, sub: s}
		added = true
	}
	if len(cur) == 0 {
		delete(c.quoteIn, userID)
	} else {
		c.quoteIn[userID] = cur
	}
	c.mu.Unlock()
	for _, s := range drop {
		_ = s.Unsubscribe()
	}
	if added {
		// The quotes flow once the server has the subscriptions.
		c.flush()
	}
}

// Handle takes the event spine's local events (the relay subscribes it
// directly, before the stream sockets): statuses go to HandleStatus, the
// agents' events to HandleEvent, the activity log's entries
// (TypeRecorded) to the other nodes. Remote events are not sent on.
func (c *Cluster) Handle(e events.Event) {
	if e.Remote {
		return
	}
	switch e.Type {
	case events.TypeRecorded:
		c.publishActivity(e.UserID, e.Activity)
	case events.TypeStatus:
		c.HandleStatus(e.UserID, e.Connected)
	case events.TypeAgent:
		c.HandleEvent(e)
	}
}

// HandleEvent takes an event of the local hub's agents: a quote of a
// contract another node asked for is published for it. Other events stay
// on this node.
func (c *Cluster) HandleEvent(e events.Event) {
	if e.Agent.Kind != protocol.EventQuote {
		return
	}
	c.outMu.RLock()
	out := c.quoteOut[e.UserID]
	c.outMu.RUnlock()
	if len(out) == 0 {
		return
	}
	var q struct {
		Instrument string `json:"instrument"`
	}
	if err := json.Unmarshal(e.Agent.Data, &q); err != nil {
		return
	}
	ct := protocol.NormalizeInstrument(q.Instrument)
	if !out[ct] {
		return
	}
	msg := &nats.Msg{Subject: c.subj.quote(e.UserID, ct), Data: e.Agent.Data,
		Header: nats.Header{HeaderSeq: []string{strconv.FormatUint(e.Agent.Seq, 10)}}}
	if err := c.nc.PublishMsg(msg); err != nil {
		c.busDown("publishing a quote", err)
	}
}
