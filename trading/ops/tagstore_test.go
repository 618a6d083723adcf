package ops

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/protocol"
	"tradebridge/trading/engine"
)

// restart returns a new Ops over f's platform and store p, as the agent
// builds after a restart; the platform kept its orders and positions.
func (f *fixture) restart(p Persist) *Ops {
	f.t.Helper()
	o, err := New(Options{Platform: f.rec, Now: f.clock.Now, Sleep: f.sleep, Persist: p})
	require.NoError(f.t, err)
	return o
}

// A tag's ownership and share outlive the Ops that recorded them: after a
// restart another tag is still refused, naming the owner, and a flatten
// of the tag still closes only the tag's share.
func TestTagOwnershipSurvivesRestart(t *testing.T) {
	t.Parallel()
	store := engine.NewMemStore()
	f := newFixture(t, func(o *Options) { o.Persist = store })
	_, err := f.ops.PlaceOrder(bg, tagged("botA", "Buy", 2))
	require.NoError(t, err)
	tagStop := tagged("botA", "Sell", 2)
	tagStop.OrderType, tagStop.StopPrice = "StopMarket", ptr(5950.0)
	stopRes, err := f.ops.PlaceOrder(bg, tagStop)
	require.NoError(t, err)
	// The trader adds 3 of their own, with their own stop.
	f.market("Sim101", protocol.ActionBuy, 3)
	own := f.resting("Sim101", protocol.ActionSell, protocol.OrderTypeStopMarket, 5940, 3)
	require.Equal(t, 5, f.position("Sim101"))

	kept, err := store.Load(TagsBucket)
	require.NoError(t, err)
	require.Contains(t, kept, "Sim101\x00"+es)

	again := f.restart(store)
	require.Equal(t, "botA", again.book.owner(key{"Sim101", es}))
	_, err = again.PlaceOrder(bg, tagged("botB", "Sell", 1))
	requireCode(t, err, protocol.CodePositionOwned, "botB")
	require.Contains(t, err.Error(), `"botA"`)
	require.Equal(t, 5, f.position("Sim101"))

	ps, err := again.ListPositions(bg, protocol.AccountArgs{Account: "Sim101"})
	require.NoError(t, err)
	require.Equal(t, "botA", ps[0].Tag)

	res, err := again.Flatten(bg, protocol.FlattenArgs{Account: "Sim101", StrategyTag: "botA"})
	require.NoError(t, err)
	require.Equal(t, 3, f.position("Sim101"), "only the tag's 2 were closed")
	require.Equal(t, []string{stopRes.OrderID}, res.CancelledOrderIDs)
	require.Len(t, res.Positions, 1)
	require.Equal(t, 2, res.Positions[0].Quantity)
	require.Equal(t, protocol.OrderStateAccepted, f.order("Sim101", own.OrderID).OrderState, "the trader's stop stays")

	// The released ownership is gone from the store too: a third start
	// finds no owner, and the rest is the trader's.
	_, err = again.Flatten(bg, protocol.FlattenArgs{Account: "Sim101", StrategyTag: "botA"})
	require.NoError(t, err)
	kept, err = store.Load(TagsBucket)
	require.NoError(t, err)
	require.Empty(t, kept)
	third := f.restart(store)
	require.Empty(t, third.book.owner(key{"Sim101", es}))
	ps, err = third.ListPositions(bg, protocol.AccountArgs{Account: "Sim101"})
	require.NoError(t, err)
	require.Empty(t, ps[0].Tag)
}

// A share corrected while the agent ran (the trader closed part of the
// tag's position by hand) is kept corrected after a restart.
func TestTagShareAdjustmentSurvivesRestart(t *testing.T) {
	t.Parallel()
	store := engine.NewMemStore()
	f := newFixture(t, func(o *Options) { o.Persist = store })
	_, err := f.ops.PlaceOrder(bg, tagged("botA", "Buy", 3))
	require.NoError(t, err)
	// Each refused write of another tag reconciles the book: first it
	// counts the tag's fill of 3, then, after the trader closed 2 by
	// hand, it corrects the share down to 1.
	_, err = f.ops.PlaceOrder(bg, tagged("botB", "Buy", 1))
	requireCode(t, err, protocol.CodePositionOwned)
	f.market("Sim101", protocol.ActionSell, 2)
	_, err = f.ops.PlaceOrder(bg, tagged("botB", "Buy", 1))
	requireCode(t, err, protocol.CodePositionOwned)
	f.market("Sim101", protocol.ActionBuy, 4) // the trader's own 4
	require.Equal(t, 5, f.position("Sim101"))

	again := f.restart(store)
	res, err := again.Flatten(bg, protocol.FlattenArgs{Account: "Sim101", StrategyTag: "botA"})
	require.NoError(t, err)
	require.Len(t, res.Positions, 1)
	require.Equal(t, 1, res.Positions[0].Quantity, "the tag's corrected share")
	require.Equal(t, 4, f.position("Sim101"), "the trader's 4 stay")
}

// failingPersist is a Persist whose writes fail while fail is set.
type failingPersist struct {
	engine.MemStore
	mu   sync.Mutex
	fail bool
}

var errDiskFull = errors.New("disk full")

func (p *failingPersist) failing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fail
}

func (p *failingPersist) Put(bucket, key string, value []byte) error {
	if p.failing() {
		return errDiskFull
	}
	return p.MemStore.Put(bucket, key, value)
}

func (p *failingPersist) Delete(bucket, key string) error {
	if p.failing() {
		return errDiskFull
	}
	return p.MemStore.Delete(bucket, key)
}

// A failed write of the ownership is logged at Error level; the trade is
// not refused and the ownership in memory holds.
func TestTagPersistFailureLogged(t *testing.T) {
	t.Parallel()
	p := &failingPersist{MemStore: engine.NewMemStore(), fail: true}
	core, logs := observer.New(zapcore.ErrorLevel)
	f := newFixture(t, func(o *Options) { o.Persist = p; o.Logger = zap.New(core) })
	_, err := f.ops.PlaceOrder(bg, tagged("botA", "Buy", 1))
	require.NoError(t, err, "the trade is not refused")
	require.Equal(t, 1, f.position("Sim101"))
	require.Equal(t, "botA", f.ops.book.owner(key{"Sim101", es}))
	_, err = f.ops.PlaceOrder(bg, tagged("botB", "Buy", 1))
	requireCode(t, err, protocol.CodePositionOwned)

	entries := logs.FilterMessageSnippet("keeping strategy-tag ownership failed").All()
	require.NotEmpty(t, entries)
	fields := entries[0].ContextMap()
	require.Equal(t, "Sim101", fields["account"])
	require.Equal(t, es, fields["instrument"])
	require.Equal(t, "botA", fields["tag"])
	kept, err := p.Load(TagsBucket)
	require.NoError(t, err)
	require.Empty(t, kept)
}

// loadFailing is a Persist whose Load fails.
type loadFailing struct{ engine.MemStore }

func (loadFailing) Load(string) (map[string][]byte, error) { return nil, errDiskFull }

func TestTagPersistLoad(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	_, err := New(Options{Platform: f.rec, Persist: loadFailing{engine.NewMemStore()}})
	require.ErrorIs(t, err, errDiskFull, "an unreadable store refuses to start: ownership would be lost")

	// Unreadable values are logged and skipped; good ones load.
	store := engine.NewMemStore()
	require.NoError(t, store.Put(TagsBucket, "no-separator", []byte(`{"tag":"x"}`)))
	require.NoError(t, store.Put(TagsBucket, "Sim101\x00NQ 12-26", []byte(`not json`)))
	require.NoError(t, store.Put(TagsBucket, "Sim101\x00CL 12-26", []byte(`{"filled":{}}`)))
	require.NoError(t, store.Put(TagsBucket, "Sim102\x00"+es,
		[]byte(`{"tag":"botC","filled":{"o-1":2},"ignore":["o-0"],"adj":-1}`)))
	core, logs := observer.New(zapcore.ErrorLevel)
	o, err := New(Options{Platform: f.rec, Persist: store, Logger: zap.New(core)})
	require.NoError(t, err)
	require.Equal(t, 3, logs.Len())
	require.Len(t, o.book.m, 1)
	own := o.book.m[key{"Sim102", es}]
	require.NotNil(t, own)
	require.Equal(t, &ownership{tag: "botC", filled: map[string]int{"o-1": 2}, ignore: map[string]bool{"o-0": true}, adj: -1}, own)
}

func TestOwnershipEncoding(t *testing.T) {
	t.Parallel()
	for _, own := range []*ownership{
		{tag: "a", filled: map[string]int{}, ignore: map[string]bool{}},
		{tag: "bot-7", filled: map[string]int{"o1": 2, "o2": -1}, ignore: map[string]bool{"x": true, "y": true}, adj: -3},
	} {
		b, err := encodeOwnership(own)
		require.NoError(t, err)
		got, err := decodeOwnership(b)
		require.NoError(t, err)
		require.Equal(t, own, got)
	}
	k, ok := parsePersistKey(persistKey(key{"Sim101", es}))
	require.True(t, ok)
	require.Equal(t, key{"Sim101", es}, k)
}
