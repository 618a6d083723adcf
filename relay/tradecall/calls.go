package tradecall

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"go.uber.org/zap"

	"tradebridge/relay/auth"
	"tradebridge/relay/events"
)

// CallsOptions configure Calls.
type CallsOptions struct {
	// Caller reaches the agents (or the broker). Required.
	Caller Caller
	// Keyed runs the writes that carry an idempotency key. Required.
	Keyed *KeyedWrites
	// Events receives the activity log's entries of writes (Record); nil
	// records nothing.
	Events events.Publisher
	// Now times the entries; nil means time.Now.
	Now func() time.Time
	// Source is the door's kind of source in the activity log
	// (protocol.SourceStream, …), which also names its calls in the log
	// ("stream call failed"); Family the family of routes as
	// Write.Family spells it ("" for the desktop family, "tv").
	Source string
	Family string
	// CallTimeout bounds the answer of a call without a key. Default 30 s.
	CallTimeout time.Duration
	Logger      *zap.Logger
}

// Calls runs checked calls (SocketCall) for a door that calls functions
// by name, the WebSocket form of RPC and the MCP tools alike: a write
// with an idempotency key through KeyedWrites, any other call to the
// agent under a timeout (a write under a fresh request id, so the agent
// runs it at most once however the tunnel behaves), and, once the
// caller has its answer, the activity log's entry of a write (Record).
type Calls struct {
	caller   Caller
	keyed    *KeyedWrites
	activity *Activity
	source   string
	family   string
	timeout  time.Duration
	log      *zap.Logger
}

// NewCalls returns the runner of a door's calls.
func NewCalls(o CallsOptions) (*Calls, error) {
	if o.Caller == nil || o.Keyed == nil {
		return nil, errors.New("tradecall: CallsOptions.Caller and CallsOptions.Keyed are required")
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return &Calls{caller: o.Caller, keyed: o.Keyed, activity: NewActivity(o.Events, o.Now),
		source: o.Source, family: o.Family, timeout: o.CallTimeout, log: o.Logger}, nil
}

// NewRequestID names a write that has no idempotency key: "rly:" and 32
// random hex digits, so that the agent still runs it at most once however
// the tunnel behaves.
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "rly:" + hex.EncodeToString(b[:])
}

// Run runs call for p and returns its Outcome, as CallOutcome makes it: a
// success, Err set on a failure (a failure of the relay itself is logged
// and answered 500 internal_error), or Gone when ctx, the caller's, ended
// before the outcome was known. A write with a key is answered its
// recorded outcome when it is a repeat.
func (c *Calls) Run(ctx context.Context, p auth.Principal, call SocketCall) Outcome {
	if call.Write && call.Key != "" {
		return c.keyed.Run(ctx, p.UserID, call.Fn, call.Key, call.Args)
	}
	requestID := ""
	if call.Write {
		requestID = NewRequestID()
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := c.caller.Call(cctx, p.UserID, call.Fn, requestID, call.Args)
	gone := ctx.Err() != nil
	if err == nil && call.Write {
		if cerr := CheckWriteResult(call.Fn, res); cerr != nil {
			c.log.Error("agent answered a write with a malformed result", zap.String("user", p.UserID), zap.String("fn", call.Fn), zap.Error(cerr))
			err = cerr // CallOutcome answers it as CallError does: malformedResult
		}
	}
	if err != nil && !gone {
		if _, ok := CallError(err, call.Write); !ok {
			c.log.Error(c.source+" call failed", zap.String("user", p.UserID), zap.String("fn", call.Fn), zap.Error(err))
		}
	}
	return CallOutcome(call.Fn, res, err, gone)
}

// Record publishes the activity log's entry of call's outcome o when call
// is a write (nothing for a read), with the door's Source and Family. A
// door calls it once the caller has its answer.
func (c *Calls) Record(p auth.Principal, call SocketCall, o Outcome) {
	c.activity.Record(Write{Principal: p, Source: c.source, Family: c.family, Fn: call.Fn, Args: call.Args, Key: call.Key}, o)
}
