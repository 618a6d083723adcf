package tradovate

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"go.uber.org/zap"

	"tradebridge/internal/backoff"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// mdState is the market-data side of the platform. Platform.mu guards it.
// A contract is subscribed at the broker while a caller subscribed it
// (user), Quote asked for it lately (wanted), or an account holds a
// position in it (its P&L follows the market).
type mdState struct {
	sock       *socket
	quotes     map[int64]quoteState // the latest quote, by contract id
	user       map[int64]bool
	wanted     map[int64]time.Time // when Quote last asked
	subscribed map[int64]string    // at the broker, on sock: contract id → symbol
	confirmed  map[int64]bool      // subscriptions the broker answered
	// refused are the contracts whose subscription the broker refused
	// (an error, or delayed data only: no real-time entitlement), with
	// when to ask again; their positions' P&L is unknown meanwhile.
	refused map[int64]mdRefusal
	kick    chan struct{}
}

// mdRefusal is a quote subscription the broker refused.
type mdRefusal struct {
	until  time.Time // ask again from then on
	reason string    // the broker's errorText, or "delayed"
}

// mdRefusedRetry is how long a refused quote subscription waits before it
// is asked again (Options.MDRetry): a missing entitlement is not fixed in
// seconds, and asking at every pass would only load the socket.
const mdRefusedRetry = time.Minute

func newMDState() mdState {
	return mdState{quotes: make(map[int64]quoteState), user: make(map[int64]bool),
		wanted: make(map[int64]time.Time), subscribed: make(map[int64]string), confirmed: make(map[int64]bool),
		refused: make(map[int64]mdRefusal), kick: make(chan struct{}, 1)}
}

// kickLocked wakes the market-data loop to reconcile its subscriptions.
func (md *mdState) kickLocked() {
	select {
	case md.kick <- struct{}{}:
	default:
	}
}

// quoteState is the market of one contract, merged from md updates (an
// update carries only the entries that changed).
type quoteState struct {
	bid, ask, last, open, high, low float64
	bidSize, askSize, volume        float64
	at                              time.Time
}

// desiredLocked is the set of contracts to subscribe: id → symbol.
func (p *Platform) desiredLocked() map[int64]string {
	out := make(map[int64]string)
	add := func(id int64) {
		if c, ok := p.contracts.cached(id); ok {
			out[id] = c.Symbol
		}
	}
	for id := range p.md.user {
		add(id)
	}
	now := time.Now()
	for id, at := range p.md.wanted {
		if now.Sub(at) > quoteKeep {
			delete(p.md.wanted, id)
			continue
		}
		add(id)
	}
	if p.m != nil {
		for k, pos := range p.m.positions {
			if pos.NetPos != 0 {
				add(k.contract)
			}
		}
	}
	return out
}

// mdJanitor is how often the market-data loop looks for subscriptions
// nobody needs any more.
const mdJanitor = 30 * time.Second

// runMD keeps the market-data socket while anything is to be subscribed,
// and its subscriptions in line with what is, until ctx ends.
func (p *Platform) runMD(ctx context.Context) {
	tick := time.NewTicker(mdJanitor)
	defer tick.Stop()
	retry := backoff.Backoff{Min: p.opts.MinBackoff, Max: p.opts.MaxBackoff}
	wait := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-p.md.kick:
		case <-tick.C:
		}
		return true
	}
	for {
		p.mu.Lock()
		want := len(p.desiredLocked()) > 0
		p.mu.Unlock()
		if !want {
			if !wait() {
				return
			}
			continue
		}
		if !p.waitLockOut(ctx, nil) {
			return
		}
		sock, err := p.dialMD(ctx)
		if err != nil {
			if !retry.Wait(ctx) {
				return
			}
			continue
		}
		retry.Reset()
		p.mu.Lock()
		p.md.sock = sock
		p.md.subscribed = make(map[int64]string)
		p.md.confirmed = make(map[int64]bool)
		p.mu.Unlock()
		for running := true; running; {
			p.reconcileMD(ctx, sock)
			select {
			case <-ctx.Done():
				running = false
			case <-sock.Done():
				running = false
			case <-p.md.kick:
			case <-tick.C:
			}
		}
		sock.Close()
		p.mu.Lock()
		p.md.sock = nil
		p.md.subscribed = make(map[int64]string)
		p.md.confirmed = make(map[int64]bool)
		lost := sortedIDs(p.md.quotes)
		clear(p.md.quotes) // no longer followed
		p.repriceLocked(lost...)
		p.notifyLocked()
		p.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		if reason, ok := sock.shutdownReason(); ok {
			pause, _ := shutdownPause(reason)
			if !p.sess.sleep(ctx, pause) {
				return
			}
		}
	}
}

// dialMD dials and authorizes the market-data socket.
func (p *Platform) dialMD(ctx context.Context) (*socket, error) {
	tok, err := p.sess.Token(ctx)
	if err != nil {
		return nil, err
	}
	sock, err := dialSocket(ctx, socketOptions{
		URL: p.sess.Endpoints().MD(p.sess.Env()), Token: tok.MDAccessToken, HTTPClient: p.sess.HTTPClient(),
		DeadAfter: p.opts.SocketDeadAfter, Logger: p.log, OnEvent: p.onMDEvent, OnRateLimited: p.sess.rateLimited,
		Pace: p.sess.paceSocket, Ticket: p.sess.socketTicket,
	})
	if err != nil {
		p.log.Info("tradovate: the market-data socket did not open", zap.Error(err))
	}
	return sock, err
}

// reconcileMD subscribes what is desired and not subscribed, and
// unsubscribes the rest. A contract counts as subscribed from the moment
// its request is sent, so its first quote is kept even when it comes
// before the reply.
func (p *Platform) reconcileMD(ctx context.Context, sock *socket) {
	p.mu.Lock()
	want := p.desiredLocked()
	var subs, unsubs []int64
	now := time.Now()
	for id := range p.md.refused {
		if _, ok := want[id]; !ok {
			delete(p.md.refused, id) // no longer needed: nothing to retry
		}
	}
	for id, sym := range want {
		if r, ok := p.md.refused[id]; ok && now.Before(r.until) {
			continue
		}
		if _, ok := p.md.subscribed[id]; !ok {
			p.md.subscribed[id] = sym
			subs = append(subs, id)
		}
	}
	for id, sym := range p.md.subscribed {
		if _, ok := want[id]; !ok {
			delete(p.md.subscribed, id)
			delete(p.md.confirmed, id)
			delete(p.md.quotes, id)
			unsubs = append(unsubs, id)
			want[id] = sym // to name it below
		}
	}
	p.mu.Unlock()
	for i, id := range subs {
		if _, locked := p.sess.lockedOutUntil(); locked {
			// A request in the broker's lock-out starts its hour again: the
			// rest waits for a pass after it.
			p.mu.Lock()
			for _, id := range subs[i:] {
				delete(p.md.subscribed, id)
			}
			p.mu.Unlock()
			return
		}
		rctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
		reply, err := sock.request(rctx, "md/subscribequote", "", tradovatewire.SubscribeQuoteRequest{Symbol: want[id]})
		cancel()
		p.mu.Lock()
		refusal := ""
		if err == nil {
			refusal = quoteRefusal(reply)
		}
		switch {
		case err != nil:
			delete(p.md.subscribed, id)
		case refusal == "" && reply.S != http.StatusOK:
			// Not an answer about the entitlement (a rate limit, a
			// failure of the broker): asked again on the next pass.
			delete(p.md.subscribed, id)
			p.log.Warn("tradovate: the broker refused a quote subscription", zap.Int("status", reply.S))
		case refusal != "":
			delete(p.md.subscribed, id)
			if _, was := p.md.refused[id]; !was {
				p.log.Warn("tradovate: the broker refused a quote subscription; positions in it have no price",
					zap.String("symbol", want[id]), zap.Int("status", reply.S), zap.String("reason", refusal))
				if c, ok := p.contracts.cached(id); ok && p.opts.OnQuotesRefused != nil {
					p.opts.OnQuotesRefused(c.Name, refusal == mdDelayed)
				}
			}
			retry := cmp.Or(p.opts.MDRetry, mdRefusedRetry)
			p.md.refused[id] = mdRefusal{until: time.Now().Add(retry), reason: refusal}
			time.AfterFunc(retry, p.kickMD) // to ask again then
			delete(p.md.quotes, id)
			p.repriceLocked(id)
			p.notifyLocked()
		default:
			if _, was := p.md.refused[id]; was {
				delete(p.md.refused, id)
				p.repriceLocked(id) // a quote that came before the reply counts now
			}
			if _, ok := p.md.subscribed[id]; ok {
				p.md.confirmed[id] = true
				p.notifyLocked()
			}
		}
		p.mu.Unlock()
		if refusal == mdDelayed {
			// Delayed data is no price to count P&L on: let it go.
			rctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
			_, _ = sock.request(rctx, "md/unsubscribequote", "", tradovatewire.SubscribeQuoteRequest{Symbol: want[id]})
			cancel()
		}
	}
	for _, id := range unsubs {
		if _, locked := p.sess.lockedOutUntil(); locked {
			return // the broker drops them with the socket
		}
		rctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
		_, _ = sock.request(rctx, "md/unsubscribequote", "", tradovatewire.SubscribeQuoteRequest{Symbol: want[id]})
		cancel()
	}
}

// kickMD wakes the market-data loop.
func (p *Platform) kickMD() {
	p.mu.Lock()
	p.md.kickLocked()
	p.mu.Unlock()
}

// mdDelayed is the refusal of a subscription the broker serves delayed
// (no real-time entitlement for the contract).
const mdDelayed = "delayed"

// quoteRefusal is why the broker refused the quotes of a contract to the
// login, or "": an errorText (the broker's way of failing a request it
// answers 200), a mode of Delayed (no real-time entitlement), or 403. Any
// other status (a rate limit, a failure) is no refusal of the
// entitlement: the caller asks again as usual.
func quoteRefusal(reply tradovatewire.Message) string {
	switch reply.S {
	case http.StatusOK:
	case http.StatusForbidden:
		var text string
		if json.Unmarshal(reply.D, &text) != nil || text == "" {
			text = http.StatusText(reply.S)
		}
		return text
	default:
		return ""
	}
	var d struct {
		ErrorText string `json:"errorText"`
		Mode      string `json:"mode"`
	}
	if json.Unmarshal(reply.D, &d) != nil {
		return ""
	}
	switch {
	case d.ErrorText != "":
		return d.ErrorText
	case d.Mode == "Delayed":
		return mdDelayed
	}
	return ""
}

// repriceLocked republishes the positions in the contracts whose price
// was lost (their P&L is unknown now) or is live again, and their
// accounts.
func (p *Platform) repriceLocked(ids ...int64) {
	var evs []bridge.Event
	for _, id := range ids {
		evs = append(evs, p.marketMovedLocked(id)...)
	}
	p.publishLocked(evs)
}

// livePriceLocked returns the price a position in a contract is valued
// at: the last trade, else the side it would close on; false when there
// is none that is live (no quote yet, the market-data socket down, the
// subscription refused).
func (p *Platform) livePriceLocked(id int64, long bool) (float64, bool) {
	q, ok := p.md.quotes[id]
	if !ok || p.md.sock == nil {
		return 0, false
	}
	if _, refused := p.md.refused[id]; refused {
		return 0, false
	}
	price := q.last
	if price == 0 {
		price = map[bool]float64{true: q.bid, false: q.ask}[long]
	}
	return price, price != 0
}

// mdRefusedLocked lists the contracts whose quotes the broker refused, by
// name.
func (p *Platform) mdRefusedLocked() []string {
	var out []string
	for _, id := range sortedIDs(p.md.refused) {
		if c, ok := p.contracts.cached(id); ok {
			out = append(out, c.Name)
		}
	}
	return out
}

// onMDEvent applies an event of the market-data socket.
func (p *Platform) onMDEvent(msg tradovatewire.Message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.mdApplied.Add(1)
	defer p.notifyLocked()
	if msg.E != tradovatewire.EventMD {
		return
	}
	var ev tradovatewire.MDEvent
	if err := json.Unmarshal(msg.D, &ev); err != nil {
		p.log.Warn("tradovate: an md event does not decode; skipped")
		return
	}
	var evs []bridge.Event
	for _, q := range ev.Quotes {
		if _, ok := p.md.subscribed[q.ContractID]; !ok {
			continue
		}
		st := p.md.quotes[q.ContractID]
		for name, e := range q.Entries {
			switch name {
			case tradovatewire.EntryBid:
				st.bid, st.bidSize = e.Price, e.Size
			case tradovatewire.EntryOffer:
				st.ask, st.askSize = e.Price, e.Size
			case tradovatewire.EntryTrade:
				st.last = e.Price
			case tradovatewire.EntryHighPrice:
				st.high = e.Price
			case tradovatewire.EntryLowPrice:
				st.low = e.Price
			case tradovatewire.EntryOpeningPrice:
				st.open = e.Price
			case tradovatewire.EntryTotalTradeVolume:
				st.volume = e.Size
			}
		}
		if t, ok := tradovatewire.ParseTime(q.Timestamp); ok {
			st.at = t
		}
		p.md.quotes[q.ContractID] = st
		if p.md.user[q.ContractID] {
			if rec, ok := p.quoteRecordLocked(q.ContractID); ok {
				evs = append(evs, bridge.Event{Kind: bridge.EventQuote, Quote: &rec})
			}
		}
		evs = append(evs, p.marketMovedLocked(q.ContractID)...)
	}
	p.publishLocked(evs)
}

// marketMovedLocked republishes the positions in a contract whose price
// moved, and their accounts.
func (p *Platform) marketMovedLocked(contractID int64) []bridge.Event {
	if p.m == nil || p.user == nil {
		return nil
	}
	var evs []bridge.Event
	accounts := make(map[int64]bool)
	for k, pos := range p.m.positions {
		if k.contract == contractID && pos.NetPos != 0 {
			evs = append(evs, p.refreshPositionLocked(k)...)
			accounts[k.account] = true
		}
	}
	for _, id := range p.m.accOrder {
		if accounts[id] {
			evs = append(evs, p.refreshAccountLocked(id)...)
		}
	}
	return evs
}

// quoteRecordLocked makes a contract's quote record.
func (p *Platform) quoteRecordLocked(id int64) (protocol.Quote, bool) {
	st, ok := p.md.quotes[id]
	c, known := p.contracts.cached(id)
	if !ok || !known {
		return protocol.Quote{}, false
	}
	q := protocol.Quote{Instrument: c.Name, Bid: st.bid, Ask: st.ask, Last: st.last, Open: st.open, High: st.high,
		Low: st.low, Close: st.last, Volume: int64(st.volume), BidSize: int64(st.bidSize), AskSize: int64(st.askSize)}
	if c.Root != nil {
		q.TickSize, q.PointValue, q.TickValue = c.Root.TickSize, c.Root.PointValue, c.Root.TickValue
	}
	if !st.at.IsZero() {
		q.QuoteTimeUTC, q.Epoch = protocol.FormatTime(st.at), st.at.UnixMilli()
	}
	return q, true
}

// mdSettledLocked reports whether every contract to subscribe is
// subscribed and answered (a refusal is an answer).
func (p *Platform) mdSettledLocked() bool {
	for id := range p.desiredLocked() {
		if _, refused := p.md.refused[id]; !p.md.confirmed[id] && !refused {
			return false
		}
	}
	return true
}
