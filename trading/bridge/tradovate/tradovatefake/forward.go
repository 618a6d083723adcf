package tradovatefake

import (
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// props is one props event to send.
type props struct {
	entityType, eventType string
	entity                any
}

// forward turns one simulator event into the broker's events and sends
// them: props events to the synced user sockets, quotes to the market-data
// sockets that follow the contract. It runs in the loop.
func (s *Server) forward(ev bridge.Event) {
	switch {
	case ev.Lost:
		// The fake fell behind the simulator: the user sockets are cut so
		// that their clients sync again.
		s.log.Warn("simulator events lost; user sockets closed")
		for _, sock := range s.openSockets(false) {
			s.closeSocket(sock)
		}
	case ev.Order != nil:
		s.broadcastProps(s.orderProps(*ev.Order)...)
		s.sendBrackets(*ev.Order)
	case ev.Execution != nil:
		s.broadcastProps(s.fillProps(*ev.Execution)...)
	case ev.Position != nil:
		s.broadcastProps(s.positionProps(*ev.Position)...)
	case ev.Account != nil:
		s.broadcastProps(s.cashProps(*ev.Account)...)
	case ev.Quote != nil:
		s.forwardQuote(*ev.Quote)
		s.trailQuote(*ev.Quote)
	}
}

// contractCreated is the props event of a contract named for the first
// time.
func (s *Server) contractCreated(c *contractState) props {
	return props{tradovatewire.EntityContract, tradovatewire.EventCreated, c.entity(s.st.started)}
}

// orderProps are the events of an order record: the order created (and
// its contract, if new) or its status updated, and a new version when its
// terms changed.
func (s *Server) orderProps(rec protocol.Order) []props {
	s.st.see(time.UnixMilli(rec.Epoch))
	nContracts := s.st.nextContract
	o, created, ok := s.st.order(rec)
	if !ok {
		s.log.Debug("order of an unknown account or instrument ignored")
		return nil
	}
	statusChanged, versioned := s.st.update(o, rec)
	if o.trail != nil && protocol.TerminalOrderState(rec.OrderState) {
		s.stopTrail(o)
	}
	var out []props
	if s.st.nextContract != nContracts {
		out = append(out, s.contractCreated(o.contract))
	}
	switch {
	case created:
		out = append(out, props{tradovatewire.EntityOrder, tradovatewire.EventCreated, o.entity()})
	case statusChanged:
		out = append(out, props{tradovatewire.EntityOrder, tradovatewire.EventUpdated, o.entity()})
	}
	if versioned {
		out = append(out, props{tradovatewire.EntityOrderVersion, tradovatewire.EventCreated, o.version()})
	}
	return out
}

// fillProps is the event of a new fill; the fill also counts in its
// position row's buys or sells, sent with the position event that
// follows.
func (s *Server) fillProps(e protocol.Execution) []props {
	f, created, ok := s.st.fill(e)
	if !ok || !created {
		return nil
	}
	at := time.UnixMilli(e.Epoch).UTC()
	s.st.see(at)
	o := s.st.orderByID[f.OrderID]
	row := s.st.position(o.acct, o.contract)
	row.addFill(f.Fill)
	row.at = at
	return []props{{tradovatewire.EntityFill, tradovatewire.EventCreated, f},
		{tradovatewire.EntityFillFee, tradovatewire.EventCreated, fillFeeOf(f, e)}}
}

// fillFeeOf is the fees of fill f: the simulator's commission of its
// execution.
func fillFeeOf(f fillEntity, e protocol.Execution) tradovatewire.FillFee {
	return tradovatewire.FillFee{ID: f.ID, Commission: e.Commission}
}

// positionProps is the event of a position that changed: created the
// first time the account trades the contract, updated afterwards; a
// position that went flat stays, with netPos 0.
func (s *Server) positionProps(rec protocol.Position) []props {
	a := s.st.acctByName[rec.Account]
	c, newContract, ok := s.st.contract(rec.Instrument)
	if a == nil || !ok {
		return nil
	}
	var out []props
	if newContract {
		out = append(out, s.contractCreated(c))
	}
	row := s.st.position(a, c)
	row.setNet(rec)
	if row.at.IsZero() {
		row.at = s.st.now()
	}
	if !row.changed() {
		return out
	}
	kind := tradovatewire.EventUpdated
	if !row.sent {
		kind = tradovatewire.EventCreated
	}
	row.markSent()
	return append(out, props{tradovatewire.EntityPosition, kind, row.entity()})
}

// cashProps is the event of an account whose cash balance changed (its
// cash, or its day's or week's realized P&L). Moves of the unrealized P&L
// alone change no cash balance and send nothing, as at the broker.
func (s *Server) cashProps(rec protocol.Account) []props {
	a := s.st.acctByName[rec.Name]
	if a == nil || !a.setCash(rec, s.st.now()) {
		return nil
	}
	return []props{{tradovatewire.EntityCashBalance, tradovatewire.EventUpdated, a.cashEntity()}}
}

// broadcastProps sends props events, in one frame, to every synced user
// socket, and counts them in EventsSent. It runs in the loop.
func (s *Server) broadcastProps(ps ...props) {
	if len(ps) == 0 || s.strict.muted.Load() {
		return
	}
	msgs := make([]tradovatewire.Message, 0, len(ps))
	for _, p := range ps {
		if p.entityType == tradovatewire.EntityContract && s.withholding() {
			continue
		}
		m, err := tradovatewire.Event(tradovatewire.EventProps, propsData{EntityType: p.entityType, EventType: p.eventType, Entity: p.entity})
		if err != nil {
			s.log.Error("cannot encode a props event", zap.Error(err))
			return
		}
		msgs = append(msgs, m)
	}
	if len(msgs) == 0 {
		return
	}
	frame, err := tradovatewire.FormatMessages(msgs...)
	if err != nil {
		s.log.Error("cannot encode a frame", zap.Error(err))
		return
	}
	for _, sock := range s.openSockets(false) {
		if sock.synced && s.send(sock, frame) {
			s.eventsSent.Add(uint64(len(msgs)))
		}
	}
}

// propsData is the data of a props event as the fake writes it.
type propsData struct {
	EntityType string `json:"entityType"`
	EventType  string `json:"eventType"`
	Entity     any    `json:"entity"`
}

// quoteOf is the broker's quote of a simulator quote.
func quoteOf(c *contractState, q protocol.Quote) tradovatewire.Quote {
	ts := time.UnixMilli(q.Epoch)
	return tradovatewire.Quote{
		Timestamp:  tradovatewire.FormatTime(ts),
		ContractID: c.id,
		Entries: map[string]tradovatewire.QuoteEntry{
			tradovatewire.EntryBid:              {Price: q.Bid, Size: float64(q.BidSize)},
			tradovatewire.EntryOffer:            {Price: q.Ask, Size: float64(q.AskSize)},
			tradovatewire.EntryTrade:            {Price: q.Last},
			tradovatewire.EntryHighPrice:        {Price: q.High},
			tradovatewire.EntryLowPrice:         {Price: q.Low},
			tradovatewire.EntryOpeningPrice:     {Price: q.Open},
			tradovatewire.EntryTotalTradeVolume: {Size: float64(q.Volume)},
		},
	}
}

// sendQuote sends one md event of a quote to a socket.
func (s *Server) sendQuote(sock *socket, q tradovatewire.Quote) {
	m, err := tradovatewire.Event(tradovatewire.EventMD, tradovatewire.MDEvent{Quotes: []tradovatewire.Quote{q}})
	if err != nil {
		s.log.Error("cannot encode an md event", zap.Error(err))
		return
	}
	s.sendMessages(sock, m)
}

// forwardQuote sends a simulator quote to the market-data sockets that
// follow its contract.
func (s *Server) forwardQuote(q protocol.Quote) {
	s.st.see(time.UnixMilli(q.Epoch))
	c := s.st.contractBySim[q.Instrument]
	if c == nil {
		return
	}
	tq := quoteOf(c, q)
	for _, sock := range s.openSockets(true) {
		if _, ok := sock.quotes[c.id]; ok {
			sock.quotes[c.id] = false
			s.sendQuote(sock, tq)
		}
	}
}

// sendCurrentQuote sends a contract's quote as it stands to one socket.
func (s *Server) sendCurrentQuote(sock *socket, c *contractState) {
	q, err := s.market.Quote(s.ctx, c.simName)
	if err != nil {
		s.log.Debug("no quote to send", zap.Error(err))
		return
	}
	sock.quotes[c.id] = false
	s.sendQuote(sock, quoteOf(c, q))
}

// subscribeQuote makes a socket follow a contract's quotes; the simulator
// publishes them while at least one socket follows it. It runs in the
// loop.
func (s *Server) subscribeQuote(sock *socket, c *contractState) error {
	if sock.gone {
		return errSocketGone
	}
	if _, ok := sock.quotes[c.id]; ok {
		sock.quotes[c.id] = true
		return nil
	}
	if err := s.follow(c); err != nil {
		return err
	}
	sock.quotes[c.id] = true
	return nil
}

// unsubscribeQuote stops a socket following a contract. It runs in the
// loop.
func (s *Server) unsubscribeQuote(sock *socket, c *contractState) {
	if _, ok := sock.quotes[c.id]; !ok {
		return
	}
	delete(sock.quotes, c.id)
	s.unfollow(c)
}

// releaseQuotes drops the subscriptions of a closed socket. It runs in the
// loop.
func (s *Server) releaseQuotes(sock *socket) {
	sock.gone = true
	for id := range sock.quotes {
		if c := s.st.contractByID[id]; c != nil {
			s.unsubscribeQuote(sock, c)
		}
	}
}
