// Package dispatch is the agent's RPC dispatcher: it decodes a Request's
// arguments, runs the matching operation of package ops, and encodes the
// result. Writes run exactly once per request id: a repeated id returns the
// first outcome and runs nothing, also across tunnel reconnects, because the
// dispatcher outlives any one tunnel.
package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"time"

	"go.uber.org/zap"

	"tradebridge/agent/ops"
	"tradebridge/protocol"
)

// Options configure a Dispatcher.
type Options struct {
	Ops    *ops.Ops
	Logger *zap.Logger
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
	table   map[string]handlerFunc
	results *outcomes
}

type handlerFunc func(ctx context.Context, args json.RawMessage) (any, error)

// New returns a Dispatcher.
func New(opts Options) (*Dispatcher, error) {
	if opts.Ops == nil {
		return nil, errors.New("dispatch: Options.Ops is required")
	}
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
	d.table = d.functions(opts.Ops)
	return d, nil
}

// functions maps RPC function names to operations.
func (d *Dispatcher) functions(o *ops.Ops) map[string]handlerFunc {
	return map[string]handlerFunc{
		protocol.FnListAccounts: func(ctx context.Context, _ json.RawMessage) (any, error) {
			return o.ListAccounts(ctx)
		},
		protocol.FnGetAccount:    with(o.GetAccount),
		protocol.FnListPositions: with(o.ListPositions),
		protocol.FnPlaceOrder:    with(o.PlaceOrder),
	}
}

// with adapts an operation taking typed arguments.
func with[A, R any](op func(context.Context, A) (R, error)) handlerFunc {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var args A
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &args); err != nil {
				return nil, protocol.NewError(protocol.CodeInvalidArgument, "the arguments do not have the function's types")
			}
		}
		return op(ctx, args)
	}
}

// Handle runs one request.
func (d *Dispatcher) Handle(ctx context.Context, req *protocol.Request) (json.RawMessage, *protocol.Error) {
	h, ok := d.table[req.Fn]
	if !ok {
		return nil, protocol.NewError(protocol.CodeUnknownFunction, "this agent does not implement the function")
	}
	fn, _ := protocol.LookupFunction(req.Fn)
	if !fn.Write || req.RequestID == "" {
		return d.run(ctx, req, h)
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
		select {
		case <-o.done:
			d.log.Info("repeated write answered from its first outcome", zap.String("fn", req.Fn), zap.String("requestId", req.RequestID))
			return o.result, o.err
		case <-ctx.Done():
			return nil, protocol.NewError(protocol.CodeRequestInProgress, "a write with this request id is still running")
		}
	}
	// The write runs to the end even if its caller leaves, so that a retry
	// learns its true outcome instead of placing it again.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.opts.WriteTimeout)
	defer cancel()
	o.result, o.err = d.run(wctx, req, h)
	close(o.done)
	return o.result, o.err
}

func (d *Dispatcher) run(ctx context.Context, req *protocol.Request, h handlerFunc) (json.RawMessage, *protocol.Error) {
	v, err := h(ctx, req.Args)
	if err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			return nil, pe
		}
		d.log.Error("operation failed", zap.String("fn", req.Fn), zap.Error(err))
		return nil, protocol.NewError(protocol.CodeInternal, "the agent failed to run the operation")
	}
	raw, err := json.Marshal(v)
	if err != nil {
		d.log.Error("encoding result", zap.String("fn", req.Fn), zap.Error(err))
		return nil, protocol.NewError(protocol.CodeInternal, "the agent failed to encode the result")
	}
	return raw, nil
}
