// Package dispatch is the agent's RPC dispatcher: it decodes a Request's
// arguments, runs the function registered under the request's name, and
// encodes the result. Functions come from a registry (Register): the
// operations of package ops, the configuration push and the engines'
// queries of package agent; a bridge may add its own without editing the
// dispatcher. Only functions of the protocol (protocol.LookupFunction)
// may be registered, since the protocol says which are writes.
//
// Writes run exactly once per request id: a repeated id returns the first
// outcome (result or error) and runs nothing, also across tunnel
// reconnects, because the dispatcher outlives any one tunnel, and across
// agent restarts when a Journal keeps the outcomes. A repeat that
// arrives while the first is still running waits for its outcome (or
// answers request_in_progress when its own deadline passes first); the
// same id with other arguments is invalid_argument. A write, once started,
// runs to its end even if its caller goes away, within WriteTimeout.
//
// Arguments are decoded by type into the function's argument struct of
// package protocol: Args must be absent, null or a JSON object, and a value
// of the wrong JSON type (a string for a number or a boolean, a fraction
// for an integer) is invalid_argument before anything runs. Unknown fields
// are ignored, as everywhere in the protocol: a newer relay may send fields
// an older agent does not know, and the relay is the edge that decides what
// bot authors may send. A field that changes what a write does is therefore
// added together with a new protocol version, never silently. (The one
// object whose keys are checked is PlaceOrder's smartOptions, because its
// options change what is placed: an unknown option is refused.)
package dispatch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
)

// Options configure a Dispatcher.
type Options struct {
	Logger *zap.Logger
	// Explain, when set, may add to the detail of an error a function
	// returned (ops.Ops.Explain names the accounts there are).
	Explain func(ctx context.Context, pe *protocol.Error) *protocol.Error
	// Journal keeps write outcomes across agent restarts; nil keeps them in
	// memory only.
	Journal Journal
	// WriteTimeout bounds a write once it started; a write is not abandoned
	// when its caller goes away, so that its outcome can be recorded.
	// Default 30 s.
	WriteTimeout time.Duration
	// Remember bounds the recorded write outcomes: at most RememberMax
	// (default 10,000) for at most RememberFor (default 24 h).
	RememberMax int
	RememberFor time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Dispatcher implements tunnel.Handler.
type Dispatcher struct {
	opts    Options
	log     *zap.Logger
	mu      sync.RWMutex
	table   map[string]Handler
	results *outcomes
	// waiting counts repeats of a running write waiting for its outcome
	// (for tests).
	waiting atomic.Int64
	// finished counts journaled writes, to prune the journal now and then.
	finished atomic.Uint64
}

// Handler runs one function: it decodes args and returns the result to
// encode, or an error (a *protocol.Error travels as is; any other error is
// internal_error, logged). Func adapts a typed operation.
type Handler func(ctx context.Context, args json.RawMessage) (any, error)

// New returns a Dispatcher with no functions; Register adds them.
func New(opts Options) (*Dispatcher, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 30 * time.Second
	}
	if opts.RememberMax <= 0 {
		opts.RememberMax = 10_000
	}
	if opts.RememberFor <= 0 {
		opts.RememberFor = 24 * time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	d := &Dispatcher{
		opts:    opts,
		log:     opts.Logger.Named("dispatch"),
		results: newOutcomes(opts.RememberMax, opts.RememberFor, opts.Now),
	}
	d.table = make(map[string]Handler)
	if opts.Journal != nil {
		if err := d.results.load(opts.Journal); err != nil {
			return nil, fmt.Errorf("dispatch: loading the journal of write outcomes: %w", err)
		}
	}
	return d, nil
}

// Register makes h the function name. name must be a function of the
// protocol and not registered yet. Functions are registered before the
// dispatcher serves.
func (d *Dispatcher) Register(name string, h Handler) error {
	if _, ok := protocol.LookupFunction(name); !ok {
		return fmt.Errorf("dispatch: %q is not a function of the protocol", name)
	}
	if h == nil {
		return fmt.Errorf("dispatch: nil handler for %q", name)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, dup := d.table[name]; dup {
		return fmt.Errorf("dispatch: %q is registered twice", name)
	}
	d.table[name] = h
	return nil
}

// Functions returns the names of the registered functions.
func (d *Dispatcher) Functions() []string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	names := make([]string, 0, len(d.table))
	for n := range d.table {
		names = append(names, n)
	}
	return names
}

// Func adapts an operation taking typed arguments. Args must be absent,
// null or a JSON object whose fields have the types of A: a string where a
// number belongs, a fraction where an integer belongs, or a string where a
// boolean belongs is invalid_argument, and nothing runs. Unknown fields are
// ignored (see the package documentation).
func Func[A, R any](op func(context.Context, A) (R, error)) Handler {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var args A
		if err := decodeArgs(raw, &args); err != nil {
			return nil, err
		}
		return op(ctx, args)
	}
}

// decodeArgs decodes a request's Args into dst.
func decodeArgs(raw json.RawMessage, dst any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	if raw[0] != '{' {
		return protocol.NewError(protocol.CodeInvalidArgument, "the arguments must be a JSON object")
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			return pe
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return protocol.NewError(protocol.CodeInvalidArgument, "the field "+te.Field+" does not have the function's type for it")
		}
		return protocol.NewError(protocol.CodeInvalidArgument, "the arguments do not have the function's types")
	}
	return nil
}

// Handle runs one request and logs it (debug level) with the relay's trace
// id, so that a bot author's X-Request-Id can be followed into the agent.
func (d *Dispatcher) Handle(ctx context.Context, req *protocol.Request) (json.RawMessage, *protocol.Error) {
	start := time.Now()
	raw, perr := d.handle(ctx, req)
	if ce := d.log.Check(zap.DebugLevel, "call"); ce != nil {
		fields := []zap.Field{zap.String("fn", req.Fn), traceField(req), zap.Duration("took", time.Since(start))}
		if req.RequestID != "" {
			fields = append(fields, zap.String("requestId", req.RequestID))
		}
		if perr != nil {
			fields = append(fields, zap.String("code", perr.Code))
		}
		ce.Write(fields...)
	}
	return raw, perr
}

// traceField is the request's trace id for a log line; a trace that breaks
// protocol.ValidTrace is not written as is.
func traceField(req *protocol.Request) zap.Field {
	switch {
	case req.Trace == "":
		return zap.Skip()
	case !protocol.ValidTrace(req.Trace):
		return zap.String("trace", "(invalid)")
	}
	return zap.String("trace", req.Trace)
}

func (d *Dispatcher) handle(ctx context.Context, req *protocol.Request) (json.RawMessage, *protocol.Error) {
	if protocol.CallOptionsOf(ctx).BypassWindows != req.BypassWindows {
		// The operations read what the call asks of them from the
		// context (trading/ops.SourceOf).
		ctx = protocol.WithCallOptions(ctx, protocol.CallOptions{BypassWindows: req.BypassWindows})
	}
	d.mu.RLock()
	h, ok := d.table[req.Fn]
	d.mu.RUnlock()
	if !ok {
		return nil, protocol.NewError(protocol.CodeUnknownFunction, "this agent does not implement the function")
	}
	fn, _ := protocol.LookupFunction(req.Fn)
	if !fn.Write {
		return d.run(ctx, req, h)
	}
	if req.RequestID == "" {
		// Not exactly-once, but still never abandoned halfway (a reverse
		// that closed and did not place yet).
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.opts.WriteTimeout)
		defer cancel()
		return d.run(wctx, req, h)
	}
	sum := sha256.New()
	sum.Write([]byte(req.Fn))
	sum.Write([]byte{0})
	sum.Write(req.Args)
	var fp [32]byte
	sum.Sum(fp[:0])
	o, first := d.results.claim(req.RequestID, fp)
	if !first {
		if o.fingerprint != fp {
			return nil, protocol.NewError(protocol.CodeInvalidArgument, "the request id was already used for a different call")
		}
		d.waiting.Add(1)
		defer d.waiting.Add(-1)
		select {
		case <-o.done:
			d.log.Info("repeated write answered from its first outcome", zap.String("fn", req.Fn), zap.String("requestId", req.RequestID), traceField(req))
			return o.result, o.err
		case <-ctx.Done():
			return nil, protocol.NewError(protocol.CodeRequestInProgress, "a write with this request id is still running")
		}
	}
	if j := d.opts.Journal; j != nil {
		if err := j.BeginWrite(req.RequestID, fp, o.at); errors.Is(err, ErrJournaled) {
			// Remembered by the journal, forgotten by memory: answer from it.
			o.result, o.err = d.fromJournal(req.RequestID, fp)
			close(o.done)
			return o.result, o.err
		} else if err != nil {
			// Without the record a restart could run the write twice.
			d.log.Error("recording a write before it runs failed; the write is refused", zap.String("fn", req.Fn), zap.String("requestId", req.RequestID), zap.Error(err))
			o.err = protocol.NewError(protocol.CodeInternal, "the agent could not record the write before running it; nothing was done, retry later")
			d.results.forget(o)
			close(o.done)
			return nil, o.err
		}
	}
	// The write runs to the end even if its caller leaves, so that a retry
	// learns its true outcome instead of placing it again.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.opts.WriteTimeout)
	defer cancel()
	o.result, o.err = d.run(wctx, req, h)
	if j := d.opts.Journal; j != nil {
		if err := j.FinishWrite(req.RequestID, o.result, o.err); err != nil {
			d.log.Error("recording a write's outcome failed: a repeat after a restart answers outcome_unknown", zap.String("fn", req.Fn), zap.String("requestId", req.RequestID), zap.Error(err))
		}
		if d.finished.Add(1)%pruneEvery == 0 {
			if err := j.PruneWrites(d.opts.Now().Add(-d.opts.RememberFor)); err != nil {
				d.log.Warn("pruning old write outcomes failed", zap.Error(err))
			}
		}
	}
	close(o.done)
	return o.result, o.err
}

// fromJournal answers a repeated write from the journal's record of it.
func (d *Dispatcher) fromJournal(id string, fp [32]byte) (json.RawMessage, *protocol.Error) {
	recs, err := d.opts.Journal.LoadWrites(d.opts.Now().Add(-d.opts.RememberFor))
	if err != nil {
		d.log.Error("reading a write's outcome from the journal failed", zap.String("requestId", id), zap.Error(err))
		return nil, protocol.NewError(protocol.CodeInternal, "the agent could not read the outcome of this request id; retry later")
	}
	for _, r := range recs {
		if r.ID != id {
			continue
		}
		switch {
		case r.Fingerprint != fp:
			return nil, protocol.NewError(protocol.CodeInvalidArgument, "the request id was already used for a different call")
		case r.Done:
			return r.Result, r.Err
		}
		return nil, outcomeUnknown()
	}
	return nil, outcomeUnknown()
}

// outcomeUnknown answers a write that began and never finished.
func outcomeUnknown() *protocol.Error {
	return protocol.NewError(protocol.CodeOutcomeUnknown, "the agent stopped while this write ran; check the account's orders and positions before placing again")
}

// pruneEvery is how many journaled writes pass between two prunes of the
// journal's records older than RememberFor.
const pruneEvery = 256

// run runs one operation. A panic in it becomes internal_error, so that a
// write's outcome is recorded (and never run again) even then.
func (d *Dispatcher) run(ctx context.Context, req *protocol.Request, h Handler) (raw json.RawMessage, perr *protocol.Error) {
	defer func() {
		if r := recover(); r != nil {
			d.log.Error("operation panicked", zap.String("fn", req.Fn), traceField(req), zap.Any("panic", r))
			raw, perr = nil, protocol.NewError(protocol.CodeInternal, "the agent failed to run the operation")
		}
	}()
	v, err := h(ctx, req.Args)
	if err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			if d.opts.Explain != nil {
				pe = d.opts.Explain(ctx, pe)
			}
			return nil, pe
		}
		d.log.Error("operation failed", zap.String("fn", req.Fn), traceField(req), zap.Error(err))
		return nil, protocol.NewError(protocol.CodeInternal, "the agent failed to run the operation")
	}
	raw, err = protocol.Marshal(v)
	if err != nil {
		d.log.Error("encoding result", zap.String("fn", req.Fn), zap.Error(err))
		return nil, protocol.NewError(protocol.CodeInternal, "the agent failed to encode the result")
	}
	return raw, nil
}
