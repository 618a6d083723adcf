package dispatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/dispatch"
	"tradebridge/trading/ops"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// countingPlatform is a bridge.Platform that fills every order and counts
// submissions; gate, when set, holds SubmitOrder until closed, and entered
// receives a value each time SubmitOrder starts. Primitives the dispatcher
// tests do not use are left to the embedded nil interface.
type countingPlatform struct {
	bridge.Platform
	submits atomic.Int64
	gate    chan struct{}
	entered chan struct{}
	panics  bool
}

func (p *countingPlatform) Kind() string { return "fake" }
func (p *countingPlatform) Connections(context.Context) ([]protocol.Connection, error) {
	return nil, nil
}
func (p *countingPlatform) Accounts(context.Context) ([]protocol.Account, error) {
	return []protocol.Account{{Name: "A1"}}, nil
}
func (p *countingPlatform) Account(_ context.Context, name string) (protocol.Account, error) {
	if name != "A1" {
		return protocol.Account{}, bridge.ErrAccountNotFound
	}
	return protocol.Account{Name: "A1"}, nil
}
func (p *countingPlatform) Positions(context.Context, string) ([]protocol.Position, error) {
	return nil, nil
}
func (p *countingPlatform) Instrument(_ context.Context, name string) (protocol.InstrumentInfo, error) {
	if name != "ES 12-26" && name != "ES" {
		return protocol.InstrumentInfo{}, bridge.ErrInstrumentUnknown
	}
	return protocol.InstrumentInfo{Instrument: "ES 12-26", Root: "ES", TickSize: 0.25}, nil
}
func (p *countingPlatform) SubmitOrder(ctx context.Context, req bridge.OrderRequest) (protocol.Order, error) {
	if p.entered != nil {
		p.entered <- struct{}{}
	}
	if p.gate != nil {
		<-p.gate
	}
	if err := ctx.Err(); err != nil {
		return protocol.Order{}, err
	}
	if p.panics {
		panic("platform bug")
	}
	n := p.submits.Add(1)
	return protocol.Order{OrderID: fmt.Sprintf("o-%d", n), Account: req.Account, OrderState: protocol.OrderStateFilled}, nil
}
func (p *countingPlatform) Close() error { return nil }

func newDispatcher(t *testing.T, p bridge.Platform, now func() time.Time) *dispatch.Dispatcher {
	return newDispatcherWith(t, p, dispatch.Options{Now: now, RememberMax: 3, RememberFor: time.Hour})
}

// newDispatcherWith serves the operations over p with opts.
func newDispatcherWith(t *testing.T, p bridge.Platform, opts dispatch.Options) *dispatch.Dispatcher {
	o, err := ops.New(ops.Options{Platform: p})
	require.NoError(t, err)
	opts.Explain = o.Explain
	d, err := dispatch.New(opts)
	require.NoError(t, err)
	for name, h := range o.Functions() {
		require.NoError(t, d.Register(name, h))
	}
	return d
}

const orderArgs = `{"account":"A1","action":"BUY","instrument":"ES 12-26","orderType":"market","quantity":1,"timeInForce":"day"}`

func place(d *dispatch.Dispatcher, ctx context.Context, id, args string) (json.RawMessage, *protocol.Error) {
	return d.Handle(ctx, &protocol.Request{Fn: protocol.FnPlaceOrder, RequestID: id, Args: json.RawMessage(args)})
}

func TestNewFillsDefaults(t *testing.T) {
	d, err := dispatch.New(dispatch.Options{})
	require.NoError(t, err)
	opts := dispatch.OptionsOf(d)
	require.Equal(t, 30*time.Second, opts.WriteTimeout)
	require.Equal(t, 10_000, opts.RememberMax)
	require.Equal(t, 24*time.Hour, opts.RememberFor)
	require.Empty(t, d.Functions(), "a new dispatcher has no functions")
}

// Register takes functions of the protocol only, each once.
func TestRegister(t *testing.T) {
	t.Parallel()
	d, err := dispatch.New(dispatch.Options{})
	require.NoError(t, err)
	h := dispatch.Func(func(context.Context, protocol.NoArgs) (int, error) { return 7, nil })
	require.NoError(t, d.Register(protocol.FnListAccounts, h))
	require.Error(t, d.Register(protocol.FnListAccounts, h), "twice")
	require.Error(t, d.Register("NoSuchFunction", h), "not a function of the protocol")
	require.Error(t, d.Register(protocol.FnGetAccount, nil), "nil handler")
	out, perr := d.Handle(context.Background(), &protocol.Request{Fn: protocol.FnListAccounts})
	require.Nil(t, perr)
	require.Equal(t, "7", string(out))
	_, perr = d.Handle(context.Background(), &protocol.Request{Fn: protocol.FnGetAccount})
	require.Equal(t, protocol.CodeUnknownFunction, perr.Code, "a function of the protocol nobody registered")
	require.Equal(t, []string{protocol.FnListAccounts}, d.Functions())
}

// A request's BypassWindows reaches the operation as the context's
// protocol.CallOptions, and so as ops.SourceAPIBypassWindows; a request
// without it runs as plain SourceAPI, whatever its caller's context held.
func TestBypassWindowsReachesTheOperation(t *testing.T) {
	t.Parallel()
	d, err := dispatch.New(dispatch.Options{})
	require.NoError(t, err)
	require.NoError(t, d.Register(protocol.FnListAccounts, dispatch.Func(func(ctx context.Context, _ protocol.NoArgs) (ops.Source, error) {
		return ops.SourceOf(ctx), nil
	})))
	for _, tc := range []struct {
		ctx    context.Context
		bypass bool
		want   ops.Source
	}{
		{context.Background(), true, ops.SourceAPIBypassWindows},
		{context.Background(), false, ops.SourceAPI},
		{protocol.WithCallOptions(context.Background(), protocol.CallOptions{BypassWindows: true}), false, ops.SourceAPI},
	} {
		out, perr := d.Handle(tc.ctx, &protocol.Request{Fn: protocol.FnListAccounts, BypassWindows: tc.bypass})
		require.Nil(t, perr)
		require.JSONEq(t, `"`+string(tc.want)+`"`, string(out))
	}
}

// The operations cover every public function of the protocol and the
// relay's own functions that are operations.
func TestOperationsRegistered(t *testing.T) {
	d := newDispatcher(t, &countingPlatform{}, nil)
	for _, f := range protocol.Functions {
		require.Contains(t, d.Functions(), f.Name)
	}
}

func TestRepeatedWriteRunsOnce(t *testing.T) {
	p := &countingPlatform{}
	d := newDispatcher(t, p, nil)
	first, perr := place(d, context.Background(), "k1", orderArgs)
	require.Nil(t, perr)
	again, perr := place(d, context.Background(), "k1", orderArgs)
	require.Nil(t, perr)
	require.JSONEq(t, string(first), string(again))
	require.Equal(t, int64(1), p.submits.Load())

	_, perr = place(d, context.Background(), "k1", `{"account":"A1","action":"Sell","instrument":"ES 12-26","orderType":"Market","quantity":1,"timeInForce":"Day"}`)
	require.NotNil(t, perr)
	require.Equal(t, protocol.CodeInvalidArgument, perr.Code)

	_, perr = place(d, context.Background(), "k2", orderArgs)
	require.Nil(t, perr)
	require.Equal(t, int64(2), p.submits.Load())

	// Without a request id every call runs.
	_, perr = place(d, context.Background(), "", orderArgs)
	require.Nil(t, perr)
	require.Equal(t, int64(3), p.submits.Load())
}

// A write that failed is answered with the same failure, and not run again.
func TestRepeatedFailureRunsOnce(t *testing.T) {
	p := &countingPlatform{}
	d := newDispatcher(t, p, nil)
	bad := `{"account":"A1","action":"Buy","instrument":"ZZ","orderType":"Market","quantity":1,"timeInForce":"Day"}`
	_, first := place(d, context.Background(), "f", bad)
	require.Equal(t, protocol.CodeInvalidInstrument, first.Code)
	_, again := place(d, context.Background(), "f", bad)
	require.Equal(t, first, again)
	require.Zero(t, p.submits.Load())
}

// Every write function is exactly-once, not only PlaceOrder.
func TestEveryWriteIsExactlyOnce(t *testing.T) {
	d := newDispatcher(t, &countingPlatform{}, nil)
	for _, f := range protocol.Functions {
		if !f.Write {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			// The arguments miss what every write needs, so the operation
			// fails at once; the outcome is recorded all the same.
			_, first := d.Handle(context.Background(), &protocol.Request{Fn: f.Name, RequestID: "w-" + f.Name, Args: json.RawMessage(`{"account":"A1"}`)})
			_, again := d.Handle(context.Background(), &protocol.Request{Fn: f.Name, RequestID: "w-" + f.Name, Args: json.RawMessage(`{"account":"A1"}`)})
			require.Equal(t, first, again)
			_, other := d.Handle(context.Background(), &protocol.Request{Fn: f.Name, RequestID: "w-" + f.Name, Args: json.RawMessage(`{"account":"A2"}`)})
			require.NotNil(t, other)
			require.Equal(t, protocol.CodeInvalidArgument, other.Code)
		})
	}
}

func TestRepeatWhileRunningWaitsForFirst(t *testing.T) {
	p := &countingPlatform{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	d := newDispatcher(t, p, nil)
	var wg sync.WaitGroup
	results := make([]json.RawMessage, 5)
	wg.Add(1)
	go func() {
		defer wg.Done()
		results[0], _ = place(d, context.Background(), "same", orderArgs)
	}()
	<-p.entered
	for i := 1; i < len(results); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = place(d, context.Background(), "same", orderArgs)
		}()
	}
	require.Eventually(t, func() bool { return dispatch.Waiting(d) == 4 }, testkit.Medium, time.Millisecond,
		"the repeats wait for the first outcome")
	close(p.gate)
	wg.Wait()
	require.Equal(t, int64(1), p.submits.Load())
	for _, r := range results {
		require.JSONEq(t, string(results[0]), string(r))
	}
}

func TestCallerLeavingDoesNotAbandonWrite(t *testing.T) {
	p := &countingPlatform{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	d := newDispatcher(t, p, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		place(d, ctx, "k", orderArgs)
	}()
	<-p.entered
	cancel()
	// A retry while the first is still running learns it is in progress...
	gone, cancelGone := context.WithCancel(context.Background())
	cancelGone()
	_, perr := place(d, gone, "k", orderArgs)
	require.Equal(t, protocol.CodeRequestInProgress, perr.Code)
	close(p.gate)
	<-done
	// ...and once it ends, the true outcome.
	out, perr := place(d, context.Background(), "k", orderArgs)
	require.Nil(t, perr)
	require.Contains(t, string(out), `"orderId":"o-1"`)
	require.Equal(t, int64(1), p.submits.Load())
}

// A panicking write is recorded as internal_error and never run again.
func TestPanickingWriteRecorded(t *testing.T) {
	p := &countingPlatform{panics: true}
	d := newDispatcher(t, p, nil)
	_, perr := place(d, context.Background(), "p", orderArgs)
	require.Equal(t, protocol.CodeInternal, perr.Code)
	p.panics = false
	_, perr = place(d, context.Background(), "p", orderArgs)
	require.Equal(t, protocol.CodeInternal, perr.Code)
	require.Zero(t, p.submits.Load())
}

func TestOutcomesBounded(t *testing.T) {
	now := time.Unix(0, 0)
	p := &countingPlatform{}
	d := newDispatcher(t, p, func() time.Time { return now })
	for i := range 5 {
		place(d, context.Background(), fmt.Sprint("k", i), orderArgs)
	}
	require.Equal(t, 3, dispatch.Remembered(d), "at most RememberMax outcomes")
	now = now.Add(2 * time.Hour)
	place(d, context.Background(), "fresh", orderArgs)
	require.Equal(t, 1, dispatch.Remembered(d), "outcomes older than RememberFor are forgotten")
}

func TestDispatchErrors(t *testing.T) {
	d := newDispatcher(t, &countingPlatform{}, nil)
	for _, tc := range []struct {
		fn, args, code string
	}{
		{"NoSuchFunction", `{}`, protocol.CodeUnknownFunction},
		{protocol.FnGetAccount, `{"account":"nope"}`, protocol.CodeAccountNotFound},
		{protocol.FnGetAccount, `{}`, protocol.CodeMissingFields},
		{protocol.FnGetAccount, `{"account":7}`, protocol.CodeInvalidArgument},
		{protocol.FnGetAccount, `[1]`, protocol.CodeInvalidArgument},
		{protocol.FnGetAccount, `"A1"`, protocol.CodeInvalidArgument},
		{protocol.FnListAccounts, `[]`, protocol.CodeInvalidArgument},
		{protocol.FnPlaceOrder, `{"account":"A1"}`, protocol.CodeMissingFields},
		{protocol.FnPlaceOrder, `{"account":"A1","action":"Hold","instrument":"ES 12-26","orderType":"Market","quantity":1,"timeInForce":"Day"}`, protocol.CodeInvalidArgument},
		{protocol.FnPlaceOrder, `{"account":"A1","action":"Buy","instrument":"ES 12-26","orderType":"Limit","quantity":1,"timeInForce":"Day"}`, protocol.CodeMissingFields},
		{protocol.FnPlaceOrder, `{"account":"A1","action":"Buy","instrument":"ES 12-26","orderType":"Limit","limitPrice":-1,"quantity":1,"timeInForce":"Day"}`, protocol.CodeInvalidArgument},
		{protocol.FnPlaceOrder, `{"account":"A1","action":"Buy","instrument":"ES 12-26","orderType":"Market","quantity":-2,"timeInForce":"Day"}`, protocol.CodeInvalidArgument},
		// Strict types: text where numbers and booleans belong, fractions
		// where integers belong.
		{protocol.FnPlaceOrder, `{"account":"A1","action":"Buy","instrument":"ES 12-26","orderType":"Market","quantity":"1","timeInForce":"Day"}`, protocol.CodeInvalidArgument},
		{protocol.FnPlaceOrder, `{"account":"A1","action":"Buy","instrument":"ES 12-26","orderType":"Market","quantity":1.5,"timeInForce":"Day"}`, protocol.CodeInvalidArgument},
		{protocol.FnPlaceOrder, `{"account":"A1","action":"Buy","instrument":"ES 12-26","orderType":"Market","quantity":1,"timeInForce":"Day","force":"true"}`, protocol.CodeInvalidArgument},
		{protocol.FnPlaceOrder, `{"account":"A1","action":"Buy","instrument":"ES 12-26","orderType":"Market","quantity":1,"timeInForce":"Day","smartOptions":{"teleport":true}}`, protocol.CodeInvalidArgument},
		{protocol.FnListOrders, `{"account":"A1","activeOnly":"false"}`, protocol.CodeInvalidArgument},
		{protocol.FnListOrders, `{"account":"A1","lookbackTime":"320"}`, protocol.CodeInvalidArgument},
		{protocol.FnStartStrategy, `{"account":"A1","strategyClass":"X","strategy_class":"Y","instrument":"ES"}`, protocol.CodeInvalidArgument},
		{protocol.FnStartStrategy, `{"account":"A1","strategyClass":"X","instrument":"ES","period":"five"}`, protocol.CodeInvalidArgument},
		{protocol.FnGetBars, `{"instrument":"ES","periodType":"minute","period_type":"day"}`, protocol.CodeInvalidArgument},
	} {
		_, perr := d.Handle(context.Background(), &protocol.Request{Fn: tc.fn, Args: json.RawMessage(tc.args)})
		require.NotNil(t, perr, tc.fn+" "+tc.args)
		require.Equal(t, tc.code, perr.Code, tc.fn+" "+tc.args)
		require.NotContains(t, perr.Detail, "nope")
		require.NotContains(t, perr.Detail, "five")
		require.NotContains(t, perr.Detail, "teleport")
	}
	out, perr := d.Handle(context.Background(), &protocol.Request{Fn: protocol.FnListAccounts})
	require.Nil(t, perr)
	require.JSONEq(t, `[{"name":"A1","displayName":"","provider":"","connection":"","connectionStatus":"","denomination":"","status":"","item":{"buyingPower":0,"cashValue":0,"netLiquidation":0,"realizedProfitLoss":0,"unrealizedProfitLoss":0,"grossRealizedProfitLoss":0,"commission":0,"initialMargin":0,"maintenanceMargin":0,"dailyLossLimit":0,"trailingMaxDrawdown":0,"weeklyProfitLoss":0}}]`, string(out))
	// Unknown fields are ignored; null and {} are no arguments.
	for _, args := range []string{`{"account":"A1","somethingNew":1}`} {
		_, perr := d.Handle(context.Background(), &protocol.Request{Fn: protocol.FnGetAccount, Args: json.RawMessage(args)})
		require.Nil(t, perr)
	}
	for _, args := range []string{``, `null`, `{}`, ` {} `} {
		_, perr := d.Handle(context.Background(), &protocol.Request{Fn: protocol.FnListAccounts, Args: json.RawMessage(args)})
		require.Nil(t, perr, args)
	}
}

// A write without a request id is not exactly-once, but it is not
// abandoned halfway either when its caller leaves.
func TestWriteWithoutIDRunsToItsEnd(t *testing.T) {
	p := &countingPlatform{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	d := newDispatcher(t, p, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *protocol.Error, 1)
	go func() {
		_, perr := place(d, ctx, "", orderArgs)
		done <- perr
	}()
	<-p.entered
	cancel()
	close(p.gate)
	require.Nil(t, <-done)
	require.Equal(t, int64(1), p.submits.Load())
}
