package tradovatefake

import (
	"cmp"
	"errors"
	"slices"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// trailState is how the fake runs a trailing order, which the simulator
// lacks: the simulator holds a plain stop (or stop-limit), and on each
// quote of the contract the fake moves its stop to the best price the
// order's side trades at, minus the distance for a Sell (the bid) or plus
// it for a Buy (the ask), whenever that is nearer the market than the
// stop; the stop never moves back. A TrailingStopLimit's limit moves with
// its stop, keeping offset. The order's versions report the broker's
// type, the trail (pegDifference) and where the stop stands.
type trailState struct {
	typ      string  // tradovatewire.OrderTypeTrailingStop or TrailingStopLimit
	peg      float64 // the trail as placed: negative for a Sell
	distance float64 // |peg|
	offset   float64 // a TrailingStopLimit's limit minus its stop
	stop     float64 // the stop in the simulator, as the fake last set it
}

// errNoQuote refuses a TrailingStop without a stopPrice when the contract
// has no price to start the trail from.
var errNoQuote = errors.New("tradovatefake: no quote to start the trail from")

// startTerms sets where a trailing order's stop starts: the stop sent,
// unless it is farther from the market than the trail (or absent), when
// the stop starts the distance below the bid (Sell) or above the ask
// (Buy); a TrailingStopLimit's limit moves with it. It runs in the loop.
func (s *Server) startTerms(o *orderState, t *orderTerms) error {
	q, err := s.market.Quote(s.ctx, o.contract.simName)
	if err != nil {
		return err
	}
	var start float64
	if o.action == tradovatewire.ActionSell {
		if q.Bid <= 0 {
			return errNoQuote
		}
		if start = roundPrice(q.Bid - t.trail.distance); t.stop != 0 && t.stop >= start {
			return nil
		}
	} else {
		if q.Ask <= 0 {
			return errNoQuote
		}
		if start = roundPrice(q.Ask + t.trail.distance); t.stop != 0 && t.stop <= start {
			return nil
		}
	}
	if t.stop != 0 && t.limit != 0 {
		t.limit = roundPrice(start + t.trail.offset)
	}
	t.stop = start
	return nil
}

// startTrail makes the fake follow a trailing order's contract. It runs
// in the loop.
func (s *Server) startTrail(o *orderState) {
	if err := s.follow(o.contract); err != nil {
		s.log.Warn("quotes of a trailing order's contract not followed", zap.Error(err))
		return
	}
	s.st.trailing[o.id] = o
}

// stopTrail forgets a trailing order that ended (or can no longer move).
// It runs in the loop.
func (s *Server) stopTrail(o *orderState) {
	if s.st.trailing[o.id] != o {
		return
	}
	delete(s.st.trailing, o.id)
	s.unfollow(o.contract)
}

// trailQuote moves the stops of the contract's trailing orders after a
// quote. It runs in the loop.
func (s *Server) trailQuote(q protocol.Quote) {
	c := s.st.contractBySim[q.Instrument]
	if c == nil || len(s.st.trailing) == 0 {
		return
	}
	for _, o := range s.sortedTrailing() {
		if o.contract != c {
			continue
		}
		tr := o.trail
		var stop float64
		if o.action == tradovatewire.ActionSell {
			if q.Bid <= 0 {
				continue
			}
			if stop = roundPrice(q.Bid - tr.distance); stop <= tr.stop {
				continue
			}
		} else {
			if q.Ask <= 0 {
				continue
			}
			if stop = roundPrice(q.Ask + tr.distance); stop >= tr.stop {
				continue
			}
		}
		req := bridge.ChangeRequest{Account: o.acct.name, OrderID: o.simID, StopPrice: stop}
		if tr.typ == tradovatewire.OrderTypeTrailingStopLimit {
			req.LimitPrice = roundPrice(stop + tr.offset)
		}
		rec, err := s.market.ChangeOrder(s.ctx, req)
		if err != nil {
			// Filled, cancelled or triggered meanwhile: the trail is over.
			s.log.Debug("trailing stop not moved", zap.Error(err))
			s.stopTrail(o)
			continue
		}
		tr.stop = rec.StopPrice
	}
}

// sortedTrailing returns the trailing orders by id, so that their moves
// are made in one order.
func (s *Server) sortedTrailing() []*orderState {
	out := make([]*orderState, 0, len(s.st.trailing))
	for _, o := range s.st.trailing {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b *orderState) int { return cmp.Compare(a.id, b.id) })
	return out
}

// follow makes the simulator publish a contract's quotes while something
// follows them: a market-data socket, a trailing order. It runs in the
// loop.
func (s *Server) follow(c *contractState) error {
	if s.st.quoteRefs[c.id] == 0 {
		if err := s.market.Subscribe(s.ctx, []string{c.simName}); err != nil {
			return err
		}
	}
	s.st.quoteRefs[c.id]++
	return nil
}

// unfollow drops one follower of a contract's quotes; the simulator stops
// publishing them with the last. It runs in the loop.
func (s *Server) unfollow(c *contractState) {
	s.st.quoteRefs[c.id]--
	if s.st.quoteRefs[c.id] > 0 {
		return
	}
	delete(s.st.quoteRefs, c.id)
	if err := s.market.Unsubscribe(s.ctx, []string{c.simName}); err != nil {
		s.log.Debug("simulator unsubscription failed", zap.Error(err))
	}
}
