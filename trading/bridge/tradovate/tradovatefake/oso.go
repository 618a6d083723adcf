package tradovatefake

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// textNotAutomated answers a write without isAutomated: true. The broker's
// documentation asks every order request not made by a human to say so;
// the fake, stricter than the broker, refuses one that does not.
const textNotAutomated = "isAutomated must be true for a request not made by a human."

// writesSeen is what the fake's write requests carried that the simulator
// does not keep: the clOrdId of each order's placement (the broker echoes
// it on the placement's command entity) and the last user/syncrequest
// body. Its methods are safe for concurrent use.
type writesSeen struct {
	mu       sync.Mutex
	clOrdIDs map[int64]string
	sync     *tradovatewire.SyncRequest
	// dropOSO makes the next placeoso place its entry alone
	// (DropNextBrackets).
	dropOSO atomic.Bool
}

// DropNextBrackets makes the next order/placeoso place its entry and
// answer no bracket ids, sending no brackets: an entry left without its
// exits, as some clients report the broker answering.
func (s *Server) DropNextBrackets() { s.writes.dropOSO.Store(true) }

// ClOrdID returns the clOrdId the placement of a broker order carried, as
// the broker's command entity of that placement echoes it (command.clOrdId);
// ok is false when the placement carried none or the order is unknown.
func (s *Server) ClOrdID(orderID int64) (string, bool) {
	s.writes.mu.Lock()
	defer s.writes.mu.Unlock()
	id, ok := s.writes.clOrdIDs[orderID]
	return id, ok
}

// LastSyncRequest returns the body of the last user/syncrequest, and
// whether there was one.
func (s *Server) LastSyncRequest() (tradovatewire.SyncRequest, bool) {
	s.writes.mu.Lock()
	defer s.writes.mu.Unlock()
	if s.writes.sync == nil {
		return tradovatewire.SyncRequest{}, false
	}
	return *s.writes.sync, true
}

// seeSync records a user/syncrequest body.
func (s *Server) seeSync(body tradovatewire.SyncRequest) {
	s.writes.mu.Lock()
	s.writes.sync = &body
	s.writes.mu.Unlock()
}

// automated wraps a write endpoint: a body without isAutomated: true is
// refused (400 with errorText) before anything happens, and the clOrdIds
// of a placement are recorded against the orders its answer names.
func (s *Server) automated(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil || len(b) > maxBody {
			writeJSON(w, http.StatusBadRequest, errorBody{ErrorText: "The request body is not valid JSON of the expected shape."})
			return
		}
		var req struct {
			IsAutomated *bool                     `json:"isAutomated"`
			ClOrdID     string                    `json:"clOrdId"`
			Other       *tradovatewire.OtherOrder `json:"other"`
			Bracket1    *tradovatewire.OtherOrder `json:"bracket1"`
			Bracket2    *tradovatewire.OtherOrder `json:"bracket2"`
		}
		if json.Unmarshal(b, &req) == nil && (req.IsAutomated == nil || !*req.IsAutomated) {
			writeJSON(w, http.StatusBadRequest, errorBody{ErrorText: textNotAutomated})
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		rec := &answerRecorder{ResponseWriter: w}
		h(rec, r)
		var res struct {
			OrderID int64 `json:"orderId"`
			OcoID   int64 `json:"ocoId"`
			OSO1ID  int64 `json:"oso1Id"`
			OSO2ID  int64 `json:"oso2Id"`
		}
		if json.Unmarshal(rec.body.Bytes(), &res) != nil {
			return
		}
		s.writes.mu.Lock()
		defer s.writes.mu.Unlock()
		if s.writes.clOrdIDs == nil {
			s.writes.clOrdIDs = make(map[int64]string)
		}
		see := func(order int64, o *tradovatewire.OtherOrder, clOrdID string) {
			if o != nil {
				clOrdID = o.ClOrdID
			}
			if order != 0 && clOrdID != "" {
				s.writes.clOrdIDs[order] = clOrdID
			}
		}
		see(res.OrderID, nil, req.ClOrdID)
		see(res.OcoID, req.Other, "")
		see(res.OSO1ID, req.Bracket1, "")
		see(res.OSO2ID, req.Bracket2, "")
	}
}

// answerRecorder keeps a copy of the answer written through it.
type answerRecorder struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (a *answerRecorder) Write(b []byte) (int, error) {
	a.body.Write(b)
	return a.ResponseWriter.Write(b)
}

// osoLeg is an order an entry sends once it is filled (placeoso).
type osoLeg struct {
	o     *orderState
	terms orderTerms
	text  string
}

// placeOSO answers POST /order/placeoso: the entry is placed; its
// bracket1 (and bracket2) are answered with their ids at once and sent
// when the entry is filled, sized to what it filled, as an OCO pair when
// there are two (sendBrackets). An entry cancelled or rejected without a
// fill sends nothing.
func (s *Server) placeOSO(w http.ResponseWriter, r *http.Request) {
	orderCall(s, w, r, s.placeOSOLocked)
}

func (s *Server) placeOSOLocked(rep *orderReply, req tradovatewire.PlaceOSORequest) {
	a, c, t, ok := s.checkPlacement(rep, req.PlaceOrderRequest)
	if !ok {
		return
	}
	if req.Bracket1 == nil {
		rep.bad("bracket1 is required.")
		return
	}
	brackets := []*tradovatewire.OtherOrder{req.Bracket1}
	if req.Bracket2 != nil {
		brackets = append(brackets, req.Bracket2)
	}
	terms := make([]orderTerms, len(brackets))
	for i, b := range brackets {
		if !validAction(b.Action) {
			rep.bad("bracket action must be Buy or Sell.")
			return
		}
		tb, f, bad := termsOf(b.Action, b.OrderType, b.Price, b.StopPrice, b.PegDifference, b.TimeInForce)
		switch {
		case bad != "":
			rep.bad("bracket: " + bad)
			return
		case f != nil:
			rep.fail(*f)
			return
		case tb.trail != nil:
			rep.fail(failure{"Unsupported", "The fake does not send trailing brackets."})
			return
		}
		terms[i] = tb
	}
	if reason := s.takeReject(); reason != "" {
		rep.fail(failure{reason, "Rejected by the test."})
		return
	}
	entry := s.st.newOrder(a, c, req.Action)
	entry.clOrdID = req.ClOrdID
	text := s.placementText()
	if err := s.submit(entry, req.OrderQty, t, text(req.Text), ""); err != nil {
		s.refused(rep, err)
		return
	}
	res := tradovatewire.PlaceOSOResponse{OrderID: entry.id}
	if s.writes.dropOSO.Swap(false) {
		rep.status, rep.body = http.StatusOK, res
		return
	}
	for i, b := range brackets {
		o := s.st.newOrder(a, c, b.Action)
		o.parent = entry.id
		o.clOrdID = b.ClOrdID
		entry.oso = append(entry.oso, osoLeg{o: o, terms: terms[i], text: text(b.Text)})
		if i == 0 {
			res.OSO1ID = o.id
		} else {
			res.OSO2ID = o.id
		}
	}
	if len(entry.oso) == 2 {
		entry.oso[0].o.ocoID, entry.oso[1].o.ocoID = entry.oso[1].o.id, entry.oso[0].o.id
	}
	rep.status, rep.body = http.StatusOK, res
}

// sendBrackets sends the brackets of an entry placed with placeoso once
// the simulator reports it done: sized to its fill, or dropped when it
// filled nothing. An entry partly filled and still working waits. It runs
// in the loop.
func (s *Server) sendBrackets(rec protocol.Order) {
	entry := s.st.orderBySim[rec.OrderID]
	if entry == nil || len(entry.oso) == 0 || !protocol.TerminalOrderState(rec.OrderState) {
		return
	}
	legs := entry.oso
	entry.oso = nil
	if rec.Filled <= 0 {
		for _, l := range legs {
			s.st.forget(l.o)
		}
		return
	}
	group := ""
	if len(legs) == 2 {
		group = "tvoso-" + entry.simID
	}
	for i, l := range legs {
		if err := s.submit(l.o, rec.Filled, l.terms, l.text, group); err != nil {
			s.log.Debug("a bracket of a filled entry was refused", zap.Error(err))
			if i == 1 {
				legs[0].o.ocoID = 0
			}
		}
	}
	// The first bracket may have filled before the second existed: the
	// pair then cancels the second now.
	if len(legs) == 2 {
		if recs, err := s.market.Orders(s.ctx, entry.acct.name); err == nil {
			for _, r := range recs {
				if r.OrderID == legs[0].o.simID && r.Filled > 0 {
					_, _ = s.market.CancelOrder(s.ctx, entry.acct.name, legs[1].o.simID)
				}
			}
		}
	}
}
