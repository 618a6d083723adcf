// Package killswitch refuses, in the relay itself, a user's desktop
// trading calls that may open or add to a position while the user's kill
// switch is stored on and the user's agent has not applied it yet.
//
// The Management API accepts the kill switch while the agent is offline
// (or connected but too old to take the configuration): the switch is
// stored, and the agent applies it when it connects. Until the agent
// acknowledges a configuration carrying it, the agent's own gate cannot
// refuse anything, so Gate, a wrapper of the relay's agentcall.Caller that
// every desktop door calls through (the HTTP trading API, the stream
// socket's rpc, the TradingView webhook), refuses the entry functions
// (Entries) with the agent's own refusal: trading_blocked, rule
// killSwitch (controls.KillBlock). The doors answer and record it (trading.blocked) as they do
// the agent's. Reads, cancels, closes and flattens pass, and answer what
// they answer today (408 addon_disconnected while offline). Once the
// agent's tunnel acknowledged (agentcall.Info.ConfigApplied) the version
// that carries the switch, the agent gates itself, letting reducing orders
// through, and Gate lets every call pass.
//
// Gate reads no store on a call while it knows the user's switch: it keeps
// each user's stored switch for TTL, told at once by the Management API of
// its node on every change (Set); another relay node's change reaches it
// when the entry expires (a read of the user's controls, Lookup).
package killswitch

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/trading/engine/controls"
	"tradebridge/trading/ops"
)

// Entries are the desktop functions that may open or add to a position:
// those the agent's gate (trading/ops) may refuse as entries. Gate refuses
// them while the user's stored kill switch waits for the agent.
var Entries = map[string]bool{
	protocol.FnPlaceOrder:       true,
	protocol.FnFlatPlace:        true,
	protocol.FnReverse:          true,
	protocol.FnReversePosition:  true,
	protocol.FnCancelAndBracket: true,
	protocol.FnCancelReplace:    true,
	protocol.FnChangeOrder:      true,
	protocol.FnStartStrategy:    true,
	protocol.FnEnableStrategy:   true,
}

// Lookup reads a user's stored kill switch and the configuration version
// it is stored in (the store's current one).
type Lookup func(ctx context.Context, userID string) (on bool, version int64, err error)

// Options configure a Gate.
type Options struct {
	// Caller reaches the agents (the hub, or the cluster); required.
	Caller agentcall.Caller
	// Lookup reads a user's stored switch when Gate does not know it;
	// required.
	Lookup Lookup
	// TTL is how long a user's switch is known before it is read again.
	// Default DefaultTTL.
	TTL time.Duration
	// LookupTimeout bounds a Lookup. Default 2 s.
	LookupTimeout time.Duration
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *zap.Logger
}

// DefaultTTL is Options.TTL's default: the longest another relay node's
// change takes to reach this one.
const DefaultTTL = 2 * time.Second

// sweepAt is how many known users make Set and a lookup forget the
// expired ones.
const sweepAt = 4096

// Gate is an agentcall.Caller that refuses entries while a user's stored
// kill switch waits for the agent. Create it with New; it starts no
// goroutine. It is safe for concurrent use.
type Gate struct {
	opts Options
	log  *zap.Logger

	mu    sync.Mutex
	users map[string]known
}

// known is a user's stored switch as Gate knows it.
type known struct {
	on      bool
	version int64 // the configuration version the switch is stored in
	until   time.Time
}

// New returns a Gate.
func New(opts Options) (*Gate, error) {
	if opts.Caller == nil || opts.Lookup == nil {
		return nil, errors.New("killswitch: Options.Caller and Lookup are required")
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.LookupTimeout <= 0 {
		opts.LookupTimeout = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	return &Gate{opts: opts, log: opts.Logger.Named("killswitch"), users: map[string]known{}}, nil
}

// Set tells Gate the user's stored switch after a change of the user's
// configuration: on, stored in configuration version version.
func (g *Gate) Set(userID string, on bool, version int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.put(userID, known{on: on, version: version})
}

// put records k for TTL; g.mu is held.
func (g *Gate) put(userID string, k known) {
	now := g.opts.Now()
	if len(g.users) >= sweepAt {
		for u, e := range g.users {
			if !now.Before(e.until) {
				delete(g.users, u)
			}
		}
	}
	k.until = now.Add(g.opts.TTL)
	g.users[userID] = k
}

// Blocked reports whether the user's entries are refused now: the stored
// switch is on and the user's agent has not acknowledged its version
// (offline, or connected without an acknowledgement yet).
func (g *Gate) Blocked(ctx context.Context, userID string) bool {
	k := g.known(ctx, userID)
	if !k.on {
		return false
	}
	info, ok := g.opts.Caller.Info(userID)
	return !ok || info.ConfigApplied < k.version
}

// known returns the user's stored switch, read again once expired. A
// failed read keeps what was known (nothing: off), logged: the agent's own
// gate still judges what reaches it.
func (g *Gate) known(ctx context.Context, userID string) known {
	g.mu.Lock()
	k, ok := g.users[userID]
	g.mu.Unlock()
	if ok && g.opts.Now().Before(k.until) {
		return k
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.opts.LookupTimeout)
	defer cancel()
	on, version, err := g.opts.Lookup(ctx, userID)
	if err != nil {
		g.log.Warn("reading a user's kill switch failed", zap.String("user", userID), zap.Error(err))
		return k
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if cur, ok := g.users[userID]; ok && cur.version > version {
		return cur // a newer Set came in meanwhile
	}
	k = known{on: on, version: version}
	g.put(userID, k)
	return k
}

// Call implements agentcall.Caller: an entry of a user whose switch waits
// for the agent is refused with the agent's trading_blocked (rule
// killSwitch), nothing sent; every other call goes through.
func (g *Gate) Call(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
	if Entries[fn] && g.Blocked(ctx, userID) {
		return nil, ops.BlockError(controls.KillBlock)
	}
	return g.opts.Caller.Call(ctx, userID, fn, requestID, args)
}

// Connected implements agentcall.Caller.
func (g *Gate) Connected(userID string) bool { return g.opts.Caller.Connected(userID) }

// Info implements agentcall.Caller.
func (g *Gate) Info(userID string) (agentcall.Info, bool) { return g.opts.Caller.Info(userID) }
