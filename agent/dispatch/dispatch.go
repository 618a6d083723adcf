// Package dispatch is the agent's RPC dispatcher: it decodes a Request's
// arguments, runs the matching operation of package ops, and encodes the
// result. Every function of protocol.Functions is registered.
//
// Writes run exactly once per request id: a repeated id returns the first
// outcome (result or error) and runs nothing, also across tunnel
// reconnects, because the dispatcher outlives any one tunnel. A repeat that
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
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"tradebridge/agent/mgmtconfig"
	"tradebridge/agent/ops"
	"tradebridge/protocol"
)

// Options configure a Dispatcher.
type Options struct {
	Ops *ops.Ops
	// Config holds the management configuration FnApplyConfig applies;
	// nil means a Holder of the Dispatcher's own (see Dispatcher.Config).
	Config *mgmtconfig.Holder
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
	// waiting counts repeats of a running write waiting for its outcome
	// (for tests).
	waiting atomic.Int64
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
	if opts.Config == nil {
		opts.Config = new(mgmtconfig.Holder)
	}
	d := &Dispatcher{
		opts:    opts,
		log:     opts.Logger.Named("dispatch"),
		results: newOutcomes(opts.RememberMax, opts.RememberFor, opts.Now),
	}
	d.table = d.functions(opts.Ops)
	return d, nil
}

// functions maps every RPC function of protocol.Functions to its
// operation. TestEveryFunctionRegistered keeps the two lists equal.
func (d *Dispatcher) functions(o *ops.Ops) map[string]handlerFunc {
	return map[string]handlerFunc{
		protocol.FnListAccounts:           with(o.ListAccounts),
		protocol.FnGetAccountSummary:      with(o.GetAccountSummary),
		protocol.FnGetAccount:             with(o.GetAccount),
		protocol.FnGetWatermarks:          with(o.GetWatermarks),
		protocol.FnGetPosition:            with(o.GetPosition),
		protocol.FnListPositions:          with(o.ListPositions),
		protocol.FnListOrders:             with(o.ListOrders),
		protocol.FnGetOrder:               with(o.GetOrder),
		protocol.FnListExecutions:         with(o.ListExecutions),
		protocol.FnListStrategies:         with(o.ListStrategies),
		protocol.FnGetStrategy:            with(o.GetStrategy),
		protocol.FnGetQuote:               with(o.GetQuote),
		protocol.FnGetAtmTemplates:        with(o.GetAtmTemplates),
		protocol.FnGetAllPositions:        with(o.GetAllPositions),
		protocol.FnGetAllOrders:           with(o.GetAllOrders),
		protocol.FnListAllStrategies:      with(o.ListAllStrategies),
		protocol.FnGetExecutionsByOrderID: with(o.GetExecutionsByOrderId),
		protocol.FnMarketInfo:             with(o.MarketInfo),
		protocol.FnGetBars:                with(o.GetBars),
		protocol.FnFlatten:                with(o.Flatten),
		protocol.FnFlattenEverything:      with(o.FlattenEverything),
		protocol.FnCancelAllOrders:        with(o.CancelAllOrders),
		protocol.FnClosePosition:          with(o.ClosePosition),
		protocol.FnReverse:                with(o.Reverse),
		protocol.FnReversePosition:        with(o.ReversePosition),
		protocol.FnCancelOrders:           with(o.CancelOrders),
		protocol.FnCancelOrder:            with(o.CancelOrder),
		protocol.FnChangeOrder:            with(o.ChangeOrder),
		protocol.FnPlaceOrder:             with(o.PlaceOrder),
		protocol.FnFlatPlace:              with(o.FlatPlace),
		protocol.FnCancelAndBracket:       with(o.CancelAndBracket),
		protocol.FnStartStrategy:          with(o.StartStrategy),
		protocol.FnCloseStrategy:          with(o.CloseStrategy),
		protocol.FnEnableStrategy:         with(o.EnableStrategy),
		protocol.FnDisableStrategy:        with(o.DisableStrategy),
		// The relay's own functions.
		protocol.FnSetSubscriptions:    with(o.SetSubscriptions),
		protocol.FnGetPnl:              with(o.GetPnl),
		protocol.FnApplyConfig:         with(d.applyConfig),
		protocol.FnCheckMonitorRestart: with(o.CheckMonitorRestart),
	}
}

// Config returns the holder of the management configuration the relay
// pushed.
func (d *Dispatcher) Config() *mgmtconfig.Holder { return d.opts.Config }

// applyConfig applies the relay's management configuration (the relay's
// internal FnApplyConfig) and answers the version the agent runs: the
// pushed one, or the newer one it already had. It is not a write of the
// exactly-once kind: a repeated push changes nothing by its version.
func (d *Dispatcher) applyConfig(_ context.Context, cfg protocol.Config) (protocol.ConfigApplied, error) {
	if cfg.Version <= 0 {
		return protocol.ConfigApplied{}, protocol.NewError(protocol.CodeInvalidArgument, "the configuration's version must be at least 1")
	}
	before := d.opts.Config.Version()
	v := d.opts.Config.Apply(&cfg)
	if v == cfg.Version && v != before {
		d.log.Info("management configuration applied", zap.Int64("version", v),
			zap.Int("copiers", len(cfg.Copiers)), zap.Int("monitors", len(cfg.Monitors)))
	}
	return protocol.ConfigApplied{Version: v}, nil
}

// with adapts an operation taking typed arguments. Args must be absent,
// null or a JSON object whose fields have the types of A: a string where a
// number belongs, a fraction where an integer belongs, or a string where a
// boolean belongs is invalid_argument, and nothing runs. Unknown fields are
// ignored (see the package documentation).
func with[A, R any](op func(context.Context, A) (R, error)) handlerFunc {
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
	h, ok := d.table[req.Fn]
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
	// The write runs to the end even if its caller leaves, so that a retry
	// learns its true outcome instead of placing it again.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.opts.WriteTimeout)
	defer cancel()
	o.result, o.err = d.run(wctx, req, h)
	close(o.done)
	return o.result, o.err
}

// run runs one operation. A panic in it becomes internal_error, so that a
// write's outcome is recorded (and never run again) even then.
func (d *Dispatcher) run(ctx context.Context, req *protocol.Request, h handlerFunc) (raw json.RawMessage, perr *protocol.Error) {
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
			return nil, d.opts.Ops.Explain(ctx, pe)
		}
		d.log.Error("operation failed", zap.String("fn", req.Fn), traceField(req), zap.Error(err))
		return nil, protocol.NewError(protocol.CodeInternal, "the agent failed to run the operation")
	}
	raw, err = json.Marshal(v)
	if err != nil {
		d.log.Error("encoding result", zap.String("fn", req.Fn), zap.Error(err))
		return nil, protocol.NewError(protocol.CodeInternal, "the agent failed to encode the result")
	}
	return raw, nil
}
