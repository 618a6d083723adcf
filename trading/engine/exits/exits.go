// Package exits is the engine that places the exits of entries placed with
// them (protocol.Exits: a take profit and a stop loss, as a TradingView
// alert's take_profit and stop_loss ask), and cancels entries whose
// cancel-after passed. It runs beside the copier, the monitor and the
// controls in every trading stack (trading/stack): in the agent for the
// desktop family and in the relay for the broker family.
//
// The operations (trading/ops) check an entry's exits and place the entry;
// then they hand it to the engine (ops.Ops.SetEntryWatcher), which records
// it in its Store (bucket Bucket) before the operation returns, so that a
// watch survives an agent or relay restart and is taken up again by the
// next Run.
//
// The engine is level-triggered: on every order or fill event of the
// entry's account and instrument, right after an entry is registered (a
// fill that raced the registration is seen), when it starts, when its
// cancel-after is due, after a look that failed, and every sweepEvery
// ticks, it reads the entry and brings its exits to what it sees:
//
//   - the entry has filled F > 0 contracts and has no exits yet: the exit
//     orders are placed for F (Gtc, on the other side, an OCO pair when
//     there are two, with an id of their own), at their absolute prices
//     or at their offsets from the entry's average fill price, in the
//     exit's direction, rounded to the tick (ops.ExitOrders);
//   - the entry filled more: the exits' quantity changes to F (their
//     prices stay);
//   - the entry ended with nothing filled: the watch ends, with no exits;
//   - the entry ended and its exits are sized to what filled: the watch
//     ends.
//
// An entry with a cancel-after that still works when its time passes (the
// engine's clock, looked at every tick) is cancelled; its exits stay sized
// to what filled. The exits pass the trading gate as closing orders
// (ops.Ops.PlaceExits, source ops.SourceEngine). A leg the platform or the
// gate refuses is not tried again: the watch keeps only its cancel-after.
// What the engine did is reported as activity (exits.placed,
// exits.failed).
package exits

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/engine"
	"tradebridge/trading/ops"
)

// Bucket is the Store bucket of the watched entries: one value per entry,
// keyed by its account and order id.
const Bucket = "exits.watch"

// DefaultTickInterval is how often Run looks at the watched entries when
// Options.TickInterval is zero.
const DefaultTickInterval = time.Second

// Trader is what the engine needs of the operations (trading/ops.Ops
// implements it). The engine calls it with ops.SourceEngine in the
// context.
type Trader interface {
	// GetOrder finds an order by its current or original id.
	GetOrder(ctx context.Context, a protocol.OrderArgs) (protocol.Order, error)
	// PlaceExits places one or two exit orders through the gate, as
	// closing orders.
	PlaceExits(ctx context.Context, legs []bridge.OrderRequest) ([]protocol.Order, error)
	// ChangeOrder changes a working order's quantity.
	ChangeOrder(ctx context.Context, a protocol.ChangeOrderArgs) (protocol.OrderResult, error)
	// CancelOrder cancels a working order.
	CancelOrder(ctx context.Context, a protocol.OrderArgs) (protocol.OrderResult, error)
}

// Options configure an Engine.
type Options struct {
	// Platform is the trading platform whose events the engine follows;
	// required.
	Platform bridge.Platform
	// Trader places, resizes and cancels orders; required.
	Trader Trader
	// Store keeps the watched entries; required.
	Store engine.Store
	// Reporter receives what the engine did; required.
	Reporter engine.Reporter
	// Now is the engine's clock, the operations' one (cancel-after
	// deadlines are on it); default time.Now.
	Now engine.Clock
	// Wall is the real time: what the engine reports (its activity
	// entries) is stamped with it, as every time a resource carries is
	// wall-clock time, whatever the platform's clock says. Default
	// time.Now.
	Wall engine.Clock
	// Logger receives the engine's logs; nil discards them.
	Logger *zap.Logger
	// TickInterval is how often Run looks at every watched entry.
	// Default DefaultTickInterval; negative is invalid.
	TickInterval time.Duration
	// NewOcoID returns the OCO id of a pair of exits. Default: "exits-"
	// and 16 random hex digits.
	NewOcoID func() string
}

// Engine follows the watched entries. It is safe for concurrent use.
type Engine struct {
	opts Options
	log  *zap.Logger

	mu      sync.Mutex
	watches map[string]*watch
	dirty   map[string]bool
	wake    chan struct{}
	ticks   int // counts Tick's calls, for the sweeps

	storeMu sync.Mutex // orders Store writes
}

// watch is one watched entry and what the engine did for it, as stored.
type watch struct {
	Entry ops.Entry `json:"entry"`
	// OcoID, Legs and Sized are the exits placed: their OCO id ("" for
	// a lone exit), their order ids and the quantity they are sized to.
	OcoID  string         `json:"ocoId,omitempty"`
	Legs   []string       `json:"legs,omitempty"`
	Sized  int            `json:"sized,omitempty"`
	Prices ops.ExitPrices `json:"prices"`
	// Failed is set once a leg was refused: nothing more is tried for the
	// exits.
	Failed bool `json:"failed,omitempty"`
	// CancelSent is set once the cancel-after cancelled the entry.
	CancelSent bool `json:"cancelSent,omitempty"`
	// retry is set when the last look failed for a reason that may pass
	// (the platform unreachable): the next tick looks again.
	retry bool
}

// sweepEvery is how many ticks pass between two looks at every watched
// entry; in between, a tick looks at those whose cancel-after is due or
// whose last look failed, and the platform's events at the others.
const sweepEvery = 15

// New validates opts, fills its defaults, loads the watched entries from
// the Store and returns the Engine. Nothing runs until Run.
func New(opts Options) (*Engine, error) {
	switch {
	case opts.Platform == nil:
		return nil, errors.New("exits: Options.Platform is required")
	case opts.Trader == nil:
		return nil, errors.New("exits: Options.Trader is required")
	case opts.Store == nil:
		return nil, errors.New("exits: Options.Store is required")
	case opts.Reporter == nil:
		return nil, errors.New("exits: Options.Reporter is required")
	case opts.TickInterval < 0:
		return nil, errors.New("exits: Options.TickInterval must not be negative")
	}
	if opts.TickInterval == 0 {
		opts.TickInterval = DefaultTickInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Wall == nil {
		opts.Wall = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.NewOcoID == nil {
		opts.NewOcoID = newOcoID
	}
	e := &Engine{
		opts:    opts,
		log:     opts.Logger.Named("exits"),
		watches: make(map[string]*watch),
		dirty:   make(map[string]bool),
		wake:    make(chan struct{}, 1),
	}
	recs, err := opts.Store.Load(Bucket)
	if err != nil {
		return nil, fmt.Errorf("exits: loading the watched entries: %w", err)
	}
	for k, raw := range recs {
		var w watch
		if err := json.Unmarshal(raw, &w); err != nil || w.Entry.OrderID == "" {
			e.log.Error("a watched entry's record is unreadable; it is dropped", zap.Error(err))
			_ = opts.Store.Delete(Bucket, k)
			continue
		}
		e.watches[k] = &w
		e.dirty[k] = true
	}
	return e, nil
}

func newOcoID() string { return "exits-" + engine.NewReportID()[16:] }

// watchKey is the Store key of an entry.
func watchKey(account, orderID string) string { return account + "\x1f" + orderID }

// WatchEntry implements ops.EntryWatcher: it records e in the Store and
// has Run look at it at once. It never blocks on the platform.
func (e *Engine) WatchEntry(en ops.Entry) error {
	if en.Account == "" || en.OrderID == "" {
		return errors.New("exits: an entry needs its account and order id")
	}
	w := &watch{Entry: en}
	k := watchKey(en.Account, en.OrderID)
	if err := e.save(k, w); err != nil {
		return err
	}
	e.mu.Lock()
	e.watches[k] = w
	e.dirty[k] = true
	e.mu.Unlock()
	e.poke()
	return nil
}

// poke wakes Run without blocking.
func (e *Engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Watching returns how many entries the engine follows.
func (e *Engine) Watching() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.watches)
}

// save writes w to the Store.
func (e *Engine) save(k string, w *watch) error {
	raw, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("exits: encoding a watched entry: %w", err)
	}
	e.storeMu.Lock()
	defer e.storeMu.Unlock()
	if err := e.opts.Store.Put(Bucket, k, raw); err != nil {
		return fmt.Errorf("exits: recording a watched entry: %w", err)
	}
	return nil
}

// Run follows the platform's events and looks at the watched entries
// every TickInterval, until ctx ends; it returns nil then, or an error when
// the platform closes its event stream first. It looks at every watched
// entry when it starts. Run starts no goroutine.
func (e *Engine) Run(ctx context.Context) error {
	events := e.opts.Platform.Events(ctx)
	e.markAll()
	e.process(ctx)
	t := time.NewTicker(e.opts.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return errors.New("exits: the platform closed its event stream")
			}
			e.handle(ev)
		case <-e.wake:
		case <-t.C:
			e.markDue()
		}
		e.process(ctx)
	}
}

// Tick looks at every watched entry once; tests call it with a manual
// clock.
func (e *Engine) Tick(ctx context.Context) {
	e.markAll()
	e.process(ctx)
}

// markDue marks the entries a tick looks at: those whose cancel-after is
// due or whose last look failed, and every one each sweepEvery ticks.
func (e *Engine) markDue() {
	now := e.opts.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ticks++
	sweep := e.ticks%sweepEvery == 0
	for k, w := range e.watches {
		due := !w.Entry.CancelAt.IsZero() && !w.CancelSent && !now.Before(w.Entry.CancelAt)
		if sweep || due || w.retry {
			e.dirty[k] = true
		}
	}
}

// handle marks the entries an event may concern.
func (e *Engine) handle(ev bridge.Event) {
	var account, instrument string
	switch {
	case ev.Lost:
		e.markAll()
		return
	case ev.Kind == bridge.EventOrder && ev.Order != nil:
		account, instrument = ev.Order.Account, ev.Order.Instrument
	case ev.Kind == bridge.EventExecution && ev.Execution != nil:
		account, instrument = ev.Execution.Account, ev.Execution.Instrument
	default:
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, w := range e.watches {
		if w.Entry.Account == account && w.Entry.Instrument == instrument {
			e.dirty[k] = true
		}
	}
}

func (e *Engine) markAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k := range e.watches {
		e.dirty[k] = true
	}
}

// process looks at the marked entries, one at a time.
func (e *Engine) process(ctx context.Context) {
	for ctx.Err() == nil {
		e.mu.Lock()
		var k string
		var w *watch
		for k = range e.dirty {
			w = e.watches[k]
			delete(e.dirty, k)
			break
		}
		e.mu.Unlock()
		if k == "" {
			return
		}
		if w != nil {
			e.step(ctx, k, w)
		}
	}
}

// step brings one entry's exits to what the entry is now. Only Run's
// goroutine calls it, so w is changed by no one else.
func (e *Engine) step(ctx context.Context, k string, w *watch) {
	ctx = ops.WithSource(ctx, ops.SourceEngine)
	en := w.Entry
	ord, err := e.opts.Trader.GetOrder(ctx, protocol.OrderArgs{Account: en.Account, OrderID: en.OrderID})
	var pe *protocol.Error
	switch {
	case errors.As(err, &pe) && pe.Code == protocol.CodeOrderNotFound:
		// The platform no longer lists it (an earlier session's order):
		// nothing more can be learnt of it.
		e.log.Info("a watched entry is no longer listed; its watch ends")
		e.end(k)
		return
	case err != nil:
		e.log.Warn("reading a watched entry failed; it is looked at again", zap.Error(err))
		e.setRetry(w, true)
		return
	}
	e.setRetry(w, false)
	changed := false
	if !en.CancelAt.IsZero() && !w.CancelSent && !protocol.TerminalOrderState(ord.OrderState) && !e.opts.Now().Before(en.CancelAt) {
		w.CancelSent, changed = true, true
		if _, err := e.opts.Trader.CancelOrder(ctx, protocol.OrderArgs{Account: en.Account, OrderID: ord.OrderID}); err != nil {
			if transient(err) {
				w.CancelSent = false // the next tick tries again
				e.setRetry(w, true)
			}
			e.log.Info("cancelling an entry whose time passed failed", zap.Error(err))
		}
		if now, err := e.opts.Trader.GetOrder(ctx, protocol.OrderArgs{Account: en.Account, OrderID: en.OrderID}); err == nil {
			ord = now
		}
	}
	filled := ord.Filled
	if en.Exits != nil && !w.Failed && filled > 0 {
		switch {
		case len(w.Legs) == 0:
			e.place(ctx, w, ord)
			changed = true
		case filled > w.Sized:
			e.resize(ctx, w, filled)
			changed = true
		}
	}
	terminal := protocol.TerminalOrderState(ord.OrderState)
	if terminal && (filled == 0 || en.Exits == nil || w.Failed || w.Sized >= filled) {
		e.end(k)
		return
	}
	if changed {
		if err := e.save(k, w); err != nil {
			e.log.Error("recording a watched entry's exits failed", zap.Error(err))
		}
	}
}

// setRetry records whether w's next look is due at the next tick.
func (e *Engine) setRetry(w *watch, retry bool) {
	e.mu.Lock()
	w.retry = retry
	e.mu.Unlock()
}

// transient reports whether err may pass by itself: the platform
// unreachable, a call that ran out of time.
func transient(err error) bool {
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		return true
	}
	switch pe.Code {
	case protocol.CodePlatformUnavailable, protocol.CodeDeadlineExceeded, protocol.CodeCancelled, protocol.CodeInternal:
		return true
	}
	return false
}

// end forgets a watched entry.
func (e *Engine) end(k string) {
	e.mu.Lock()
	delete(e.watches, k)
	delete(e.dirty, k)
	e.mu.Unlock()
	e.storeMu.Lock()
	defer e.storeMu.Unlock()
	if err := e.opts.Store.Delete(Bucket, k); err != nil {
		e.log.Error("forgetting a watched entry failed", zap.Error(err))
	}
}

// legID is the order id of an entry's exit leg i: the same on every look
// at the entry, so that legs placed just before a crash (placed, but not
// yet recorded in the Store) are found again rather than placed twice,
// and a platform that refuses a second order of one id refuses the
// duplicate anyway.
func legID(en ops.Entry, i int) string {
	sum := sha256.Sum256([]byte(en.Account + "\x00" + en.OrderID))
	return "exit-" + hex.EncodeToString(sum[:10]) + "-" + strconv.Itoa(i+1)
}

// adopt looks for legs of w's entry already on the platform (placed by an
// earlier look whose record was lost): when it finds any, they become w's
// exits, and it reports true.
func (e *Engine) adopt(ctx context.Context, w *watch, n int) bool {
	var found []protocol.Order
	for i := range n {
		o, err := e.opts.Trader.GetOrder(ctx, protocol.OrderArgs{Account: w.Entry.Account, OrderID: legID(w.Entry, i)})
		if err == nil {
			found = append(found, o)
		}
	}
	if len(found) == 0 {
		return false
	}
	w.Legs = make([]string, len(found))
	for i, o := range found {
		w.Legs[i] = o.OrderID
		w.OcoID = o.Oco
		if i == 0 || o.Quantity < w.Sized {
			w.Sized = o.Quantity
		}
	}
	e.log.Info("exits placed before a restart were found again", zap.String("entryOrderId", w.Entry.OrderID))
	return true
}

// place places the exits of w's entry ord for what it filled.
func (e *Engine) place(ctx context.Context, w *watch, ord protocol.Order) {
	en := w.Entry
	oco := e.opts.NewOcoID()
	legs, prices, err := ops.ExitOrders(en, ord.AverageFillPrice, ord.Filled, oco)
	if err == nil && e.adopt(ctx, w, len(legs)) {
		w.Prices = prices
		if ord.Filled > w.Sized {
			e.resize(ctx, w, ord.Filled)
		}
		return
	}
	for i := range legs {
		legs[i].OrderID = legID(en, i)
	}
	if err == nil {
		var placed []protocol.Order
		if placed, err = e.opts.Trader.PlaceExits(ctx, legs); err == nil {
			w.Legs = make([]string, len(placed))
			for i, p := range placed {
				w.Legs[i] = p.OrderID
			}
			w.OcoID, w.Sized, w.Prices = legs[0].Oco, ord.Filled, prices
			e.reportPlaced(w, "Exits placed")
			return
		}
	}
	w.Failed = true
	e.reportFailed(w, "the exits could not be placed", err)
}

// resize changes the quantity of w's exits to filled.
func (e *Engine) resize(ctx context.Context, w *watch, filled int) {
	en := w.Entry
	for i, id := range w.Legs {
		q := filled
		res, err := e.opts.Trader.ChangeOrder(ctx, protocol.ChangeOrderArgs{Account: en.Account, OrderID: id, Quantity: &q})
		if err != nil {
			w.Failed = true
			e.reportFailed(w, "the exits could not be resized to the entry's later fills", err)
			return
		}
		w.Legs[i] = res.OrderID
	}
	w.Sized = filled
	e.reportPlaced(w, "Exits resized")
}

// placedDetail is the detail of exits.placed.
type placedDetail struct {
	EntryOrderID string         `json:"entryOrderId"`
	OrderIDs     []string       `json:"orderIds"`
	OcoID        string         `json:"ocoId,omitempty"`
	Quantity     int            `json:"quantity"`
	Prices       ops.ExitPrices `json:"prices"`
}

// failedDetail is the detail of exits.failed.
type failedDetail struct {
	EntryOrderID string `json:"entryOrderId"`
	Reason       string `json:"reason"`
}

// source is who the engine's reports come from: the agent's (or the
// broker family's) own, as a strategy lock's.
var source = protocol.ActivitySource{Kind: protocol.SourceAgent, ID: "exits"}

func (e *Engine) reportPlaced(w *watch, what string) {
	en := w.Entry
	summary := fmt.Sprintf("%s for order %s: %d %s on %s", what, en.OrderID, w.Sized, en.Instrument, en.Account)
	e.opts.Reporter.ReportActivity(engine.NewActivity(e.opts.Wall(), protocol.ActivityExitsPlaced, en.Account, source, summary,
		placedDetail{EntryOrderID: en.OrderID, OrderIDs: append([]string(nil), w.Legs...), OcoID: w.OcoID, Quantity: w.Sized, Prices: w.Prices}))
}

func (e *Engine) reportFailed(w *watch, what string, err error) {
	en := w.Entry
	reason := what
	var pe *protocol.Error
	if errors.As(err, &pe) {
		reason += ": " + pe.Code + ": " + pe.Detail
	}
	e.log.Warn("exits failed", zap.String("account", en.Account), zap.String("entryOrderId", en.OrderID), zap.Error(err))
	summary := fmt.Sprintf("Exits failed for order %s on %s: %s", en.OrderID, en.Account, strings.TrimPrefix(reason, "the "))
	e.opts.Reporter.ReportActivity(engine.NewActivity(e.opts.Wall(), protocol.ActivityExitsFailed, en.Account, source, summary,
		failedDetail{EntryOrderID: en.OrderID, Reason: reason}))
}
