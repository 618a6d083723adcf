package dispatch

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

	"tradebridge/agent/bridge"
	"tradebridge/agent/ops"
	"tradebridge/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// countingPlatform is a bridge.Platform that fills every order and counts
// submissions; gate, when set, holds SubmitOrder until closed. Primitives the
// dispatcher tests do not use are left to the embedded nil interface.
type countingPlatform struct {
	bridge.Platform
	submits atomic.Int64
	gate    chan struct{}
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
func (p *countingPlatform) SubmitOrder(ctx context.Context, req bridge.OrderRequest) (protocol.Order, error) {
	if p.gate != nil {
		<-p.gate
	}
	n := p.submits.Add(1)
	return protocol.Order{OrderID: fmt.Sprintf("o-%d", n), Account: req.Account, OrderState: protocol.OrderStateFilled}, nil
}
func (p *countingPlatform) Close() error { return nil }

func newDispatcher(t *testing.T, p bridge.Platform, now func() time.Time) *Dispatcher {
	o, err := ops.New(p)
	require.NoError(t, err)
	d, err := New(Options{Ops: o, Now: now, RememberMax: 3, RememberFor: time.Hour})
	require.NoError(t, err)
	return d
}

const orderArgs = `{"account":"A1","action":"BUY","instrument":"ES 12-26","orderType":"market","quantity":1,"timeInForce":"day"}`

func place(d *Dispatcher, ctx context.Context, id, args string) (json.RawMessage, *protocol.Error) {
	return d.Handle(ctx, &protocol.Request{Fn: protocol.FnPlaceOrder, RequestID: id, Args: json.RawMessage(args)})
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

func TestRepeatWhileRunningWaitsForFirst(t *testing.T) {
	p := &countingPlatform{gate: make(chan struct{})}
	d := newDispatcher(t, p, nil)
	var wg sync.WaitGroup
	results := make([]json.RawMessage, 5)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = place(d, context.Background(), "same", orderArgs)
		}()
	}
	time.Sleep(20 * time.Millisecond)
	close(p.gate)
	wg.Wait()
	require.Equal(t, int64(1), p.submits.Load())
	for _, r := range results {
		require.JSONEq(t, string(results[0]), string(r))
	}
}

func TestCallerLeavingDoesNotAbandonWrite(t *testing.T) {
	p := &countingPlatform{gate: make(chan struct{})}
	d := newDispatcher(t, p, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		place(d, ctx, "k", orderArgs)
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	// A retry while the first is still running learns it is in progress...
	short, cancelShort := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelShort()
	_, perr := place(d, short, "k", orderArgs)
	require.Equal(t, protocol.CodeRequestInProgress, perr.Code)
	close(p.gate)
	<-done
	// ...and once it ends, the true outcome.
	out, perr := place(d, context.Background(), "k", orderArgs)
	require.Nil(t, perr)
	require.Contains(t, string(out), `"orderId":"o-1"`)
	require.Equal(t, int64(1), p.submits.Load())
}

func TestOutcomesBounded(t *testing.T) {
	now := time.Unix(0, 0)
	p := &countingPlatform{}
	d := newDispatcher(t, p, func() time.Time { return now })
	for i := range 5 {
		place(d, context.Background(), fmt.Sprint("k", i), orderArgs)
	}
	require.Equal(t, 3, d.results.len(), "at most RememberMax outcomes")
	now = now.Add(2 * time.Hour)
	place(d, context.Background(), "fresh", orderArgs)
	require.Equal(t, 1, d.results.len(), "outcomes older than RememberFor are forgotten")
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
		{protocol.FnPlaceOrder, `{"account":"A1"}`, protocol.CodeMissingFields},
		{protocol.FnPlaceOrder, `{"account":"A1","action":"Hold","instrument":"ES 12-26","orderType":"Market","quantity":1,"timeInForce":"Day"}`, protocol.CodeInvalidArgument},
		{protocol.FnPlaceOrder, `{"account":"A1","action":"Buy","instrument":"ES 12-26","orderType":"Limit","quantity":1,"timeInForce":"Day"}`, protocol.CodeMissingFields},
		{protocol.FnPlaceOrder, `{"account":"A1","action":"Buy","instrument":"ES 12-26","orderType":"Limit","limitPrice":-1,"quantity":1,"timeInForce":"Day"}`, protocol.CodeInvalidArgument},
		{protocol.FnPlaceOrder, `{"account":"A1","action":"Buy","instrument":"ES 12-26","orderType":"Market","quantity":-2,"timeInForce":"Day"}`, protocol.CodeInvalidArgument},
	} {
		_, perr := d.Handle(context.Background(), &protocol.Request{Fn: tc.fn, Args: json.RawMessage(tc.args)})
		require.NotNil(t, perr, tc.fn+" "+tc.args)
		require.Equal(t, tc.code, perr.Code, tc.fn+" "+tc.args)
	}
	out, perr := d.Handle(context.Background(), &protocol.Request{Fn: protocol.FnListAccounts})
	require.Nil(t, perr)
	require.JSONEq(t, `[{"name":"A1","displayName":"","provider":"","connection":"","connectionStatus":"","denomination":"","status":"","item":{"buyingPower":0,"cashValue":0,"netLiquidation":0,"realizedProfitLoss":0,"unrealizedProfitLoss":0,"grossRealizedProfitLoss":0,"commission":0,"initialMargin":0,"maintenanceMargin":0,"dailyLossLimit":0,"trailingMaxDrawdown":0,"weeklyProfitLoss":0}}]`, string(out))
}
