package tradovatefake

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// maxBody bounds a request body.
const maxBody = 1 << 20

// routes registers the REST API and the sockets. Paths are matched in
// lower case (serveHTTP folds them): the broker's paths are
// case-insensitive.
func (s *Server) routes() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/auth/accesstokenrequest", s.accessTokenRequest)
	m.HandleFunc("/v1/auth/renewaccesstoken", s.renewAccessToken)
	m.HandleFunc("GET /v1/auth/me", s.authed(s.me))
	m.HandleFunc("POST /v1/auth/oauthtoken", s.oauthToken)
	m.HandleFunc("GET /oauth", s.oauthAuthorize)

	m.HandleFunc("GET /v1/account/list", s.authed(s.accountList))
	m.HandleFunc("POST /v1/cashbalance/getcashbalancesnapshot", s.authed(s.cashSnapshot))
	m.HandleFunc("GET /v1/position/list", s.authed(s.positionList))
	m.HandleFunc("GET /v1/order/list", s.authed(s.orderList))
	m.HandleFunc("GET /v1/order/item", s.authed(s.orderItem))
	m.HandleFunc("GET /v1/orderversion/list", s.authed(s.orderVersionList))
	m.HandleFunc("GET /v1/fill/list", s.authed(s.fillList))
	m.HandleFunc("GET /v1/fillfee/list", s.authed(s.fillFeeList))
	m.HandleFunc("GET /v1/contract/item", s.authed(s.contractItem))
	m.HandleFunc("GET /v1/contract/find", s.authed(s.contractFind))

	m.HandleFunc("POST /v1/order/placeorder", s.authed(s.automated(s.placeOrder)))
	m.HandleFunc("POST /v1/order/placeoco", s.authed(s.automated(s.placeOCO)))
	m.HandleFunc("POST /v1/order/placeoso", s.authed(s.automated(s.placeOSO)))
	m.HandleFunc("POST /v1/order/cancelorder", s.authed(s.automated(s.cancelOrder)))
	m.HandleFunc("POST /v1/order/modifyorder", s.authed(s.automated(s.modifyOrder)))
	m.HandleFunc("POST /v1/order/liquidateposition", s.authed(s.automated(s.liquidatePosition)))

	m.HandleFunc("GET /v1/websocket", s.userSocket)
	m.HandleFunc("GET /md/v1/websocket", s.mdSocket)
	return m
}

// writeJSON writes v as the answer, with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "cannot encode the answer", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// readJSON decodes the request body into v; on failure it answers 400 and
// reports false.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err == nil && len(b) > maxBody {
		err = errors.New("too long")
	}
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{ErrorText: "The request body is not valid JSON of the expected shape."})
		return false
	}
	return true
}

// closedAnswer answers a call the closed fake cannot serve.
func closedAnswer(w http.ResponseWriter) {
	writeJSON(w, http.StatusServiceUnavailable, errorBody{ErrorText: "The server is shutting down."})
}

// notFound answers a request naming an entity the fake does not know.
func notFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, errorBody{ErrorText: textNotFound})
}

// inLoop runs f in the loop, after forwarding the simulator's pending
// events, and forwards the events f caused before answering: the events
// of a call reach the sockets before its answer. It reports false (and
// answers 503) once the fake is closed.
func (s *Server) inLoop(w http.ResponseWriter, f func()) bool {
	ok := s.do(func() {
		s.drain()
		f()
		s.drain()
	})
	if !ok {
		closedAnswer(w)
	}
	return ok
}

// answer runs f in the loop (inLoop) and answers what it found: out,
// notFound when found is false, or a failure of the simulator (internal)
// when err is set.
func answer[T any](s *Server, w http.ResponseWriter, f func() (out T, found bool, err error)) {
	var (
		out   T
		found bool
		err   error
	)
	if !s.inLoop(w, func() { out, found, err = f() }) {
		return
	}
	switch {
	case !found:
		notFound(w)
	case err != nil:
		s.internal(w, err)
	default:
		writeJSON(w, http.StatusOK, out)
	}
}

// listed is the answer of a list for answer: it always finds one.
func listed[T any](out T, err error) (T, bool, error) { return out, true, err }

// queryID reads the query's id; when it is not a number it answers 400
// and reports false.
func queryID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.URL.Query().Get("id"), 10, 64)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{ErrorText: "id must be a number."})
		return 0, false
	}
	return id, true
}

func (s *Server) accountList(w http.ResponseWriter, _ *http.Request) {
	answer(s, w, func() ([]accountEntity, bool, error) { return listed(s.accountEntities(), nil) })
}

func (s *Server) accountEntities() []accountEntity {
	out := make([]accountEntity, 0, len(s.st.accounts))
	for _, a := range s.st.accounts {
		out = append(out, a.entity(UserID, s.st.started))
	}
	return out
}

func (s *Server) cashSnapshot(w http.ResponseWriter, r *http.Request) {
	var req tradovatewire.CashBalanceSnapshotRequest
	if !readJSON(w, r, &req) {
		return
	}
	answer(s, w, func() (snapshotEntity, bool, error) {
		a := s.st.acctByID[req.AccountID]
		if a == nil {
			return snapshotEntity{}, false, nil
		}
		rec, err := s.market.Account(s.ctx, a.name)
		if err != nil {
			return snapshotEntity{}, true, err
		}
		it := rec.Item
		return snapshotEntity{
			TotalCashValue:    it.CashValue,
			TotalPnL:          roundCents(it.RealizedProfitLoss + it.UnrealizedProfitLoss),
			InitialMargin:     it.InitialMargin,
			MaintenanceMargin: it.MaintenanceMargin,
			NetLiq:            it.NetLiquidation,
			OpenPnL:           it.UnrealizedProfitLoss,
			RealizedPnL:       it.RealizedProfitLoss,
			WeekRealizedPnL:   it.WeeklyProfitLoss,
		}, true, nil
	})
}

// internal answers a failure of the simulator.
func (s *Server) internal(w http.ResponseWriter, err error) {
	var rep orderReply
	s.internalReply(&rep, err)
	rep.write(w)
}

// internalReply makes rep the answer to a failure of the simulator.
func (s *Server) internalReply(rep *orderReply, err error) {
	s.log.Warn("simulator call failed", zap.Error(err))
	rep.status, rep.body = http.StatusInternalServerError, errorBody{ErrorText: "The server failed."}
}

func (s *Server) positionList(w http.ResponseWriter, _ *http.Request) {
	answer(s, w, func() ([]positionEntity, bool, error) { return listed(s.positionEntities(), nil) })
}

// positionEntities lists every position row, flat ones included.
func (s *Server) positionEntities() []positionEntity {
	rows := s.st.sortedPositions()
	out := make([]positionEntity, 0, len(rows))
	for _, p := range rows {
		out = append(out, p.entity())
	}
	return append(out, s.st.oldRows...)
}

// sessionOrders returns the orders of the simulator's current session and
// those still working, every account's, in the order they were placed.
func (s *Server) sessionOrders() ([]*orderState, error) {
	var out []*orderState
	for _, a := range s.st.accounts {
		recs, err := s.market.Orders(s.ctx, a.name)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			o, _, ok := s.st.order(rec)
			if !ok {
				continue
			}
			s.st.update(o, rec)
			out = append(out, o)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].created.Before(out[j].created) })
	return out, nil
}

func (s *Server) orderList(w http.ResponseWriter, _ *http.Request) {
	answer(s, w, func() ([]tradovatewire.Order, bool, error) {
		os, err := s.sessionOrders()
		return listed(orderEntities(os), err)
	})
}

// orderItem answers GET /order/item?id=N: one order the fake knows.
func (s *Server) orderItem(w http.ResponseWriter, r *http.Request) {
	id, ok := queryID(w, r)
	if !ok {
		return
	}
	answer(s, w, func() (tradovatewire.Order, bool, error) {
		if o := s.st.orderByID[id]; o != nil && len(o.versions) > 0 {
			return o.entity(), true, nil
		}
		return tradovatewire.Order{}, false, nil
	})
}

func orderEntities(os []*orderState) []tradovatewire.Order {
	out := make([]tradovatewire.Order, 0, len(os))
	for _, o := range os {
		out = append(out, o.entity())
	}
	return out
}

// versionEntities lists every version of the orders, by version id.
func versionEntities(os []*orderState) []tradovatewire.OrderVersion {
	out := []tradovatewire.OrderVersion{}
	for _, o := range os {
		out = append(out, o.versions...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (s *Server) orderVersionList(w http.ResponseWriter, _ *http.Request) {
	answer(s, w, func() ([]tradovatewire.OrderVersion, bool, error) {
		os, err := s.sessionOrders()
		return listed(versionEntities(os), err)
	})
}

// sessionFills lists the fills of the simulator's current session, every
// account's.
func (s *Server) sessionFills() ([]fillEntity, error) {
	out, _, err := s.sessionFillsAndFees()
	return out, err
}

// sessionFillsAndFees lists the fills of the simulator's current session
// and their fees, in the same order.
func (s *Server) sessionFillsAndFees() ([]fillEntity, []tradovatewire.FillFee, error) {
	out := []fillEntity{}
	fees := []tradovatewire.FillFee{}
	for _, a := range s.st.accounts {
		recs, err := s.market.Executions(s.ctx, a.name)
		if err != nil {
			return nil, nil, err
		}
		for _, e := range recs {
			if f, _, ok := s.st.fill(e); ok {
				out = append(out, f)
				fees = append(fees, fillFeeOf(f, e))
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	sort.SliceStable(fees, func(i, j int) bool { return fees[i].ID < fees[j].ID })
	return out, fees, nil
}

func (s *Server) fillList(w http.ResponseWriter, _ *http.Request) {
	answer(s, w, func() ([]fillEntity, bool, error) { return listed(s.sessionFills()) })
}

func (s *Server) contractItem(w http.ResponseWriter, r *http.Request) {
	id, ok := queryID(w, r)
	if !ok {
		return
	}
	s.slowContractItem(r.Context())
	answer(s, w, func() (contractEntity, bool, error) { return s.contractAnswer(s.st.contractByID[id]) })
}

func (s *Server) contractFind(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	answer(s, w, func() (contractEntity, bool, error) { return s.contractAnswer(s.findContract(name)) })
}

// contractAnswer is the answer of a read of c, which is nil when the
// fake does not know it. It runs in the loop.
func (s *Server) contractAnswer(c *contractState) (contractEntity, bool, error) {
	if c == nil {
		return contractEntity{}, false, nil
	}
	return c.entity(s.st.started), true, nil
}

// findContract returns the contract of a broker symbol ("ESZ6"): a root the
// simulator trades, a month code and one year digit, naming a contract
// that trades now. Any other form ("ESZ26", "ES 12-26", "ES") is unknown,
// as at the broker. It runs in the loop.
func (s *Server) findContract(symbol string) *contractState {
	symbol = strings.ToUpper(strings.TrimSpace(symbol))
	if c := s.st.contractByTradovateName[symbol]; c != nil {
		return c
	}
	in, err := protocol.ParseInstrument(symbol)
	if err != nil || in.Form != protocol.InstrumentMonthCode || in.YearDigits != 1 {
		return nil
	}
	info, err := s.market.Instrument(s.ctx, symbol)
	if err != nil {
		return nil
	}
	c, created, ok := s.st.contract(info.Instrument)
	if !ok || c.tradovateName != symbol {
		return nil
	}
	if created {
		s.broadcastProps(s.contractCreated(c))
	}
	return c
}

// failure is a refused order request: the broker's failureReason and a
// text.
type failure struct {
	reason, text string
}

// failureOf maps a refusal of the simulator to the broker's failure
// reason; the text is the simulator's reason, which never repeats the
// request.
func failureOf(err error) (failure, bool) {
	var re *bridge.RejectError
	switch {
	case errors.As(err, &re):
		r := re.Reason
		switch {
		case strings.Contains(r, "market is closed"):
			return failure{"SessionClosed", r}, true
		case strings.Contains(r, "already") || strings.Contains(r, "once the stop has triggered"):
			return failure{"TooLate", r}, true
		case strings.Contains(r, "price"):
			return failure{"InvalidPrice", r}, true
		}
		return failure{tradovatewire.ReasonUnknown, r}, true
	case errors.Is(err, bridge.ErrInstrumentUnknown):
		return failure{"InvalidContract", "Unknown contract."}, true
	case errors.Is(err, errNoQuote):
		return failure{"NoQuote", "There is no quote to start the trail from."}, true
	case errors.Is(err, bridge.ErrAccountNotFound):
		return failure{"Unauthorized", "Unknown account."}, true
	}
	return failure{}, false
}

// orderTerms are an order's type and prices in the broker's terms, ready
// for the simulator. A trailing order is a stop (or stop-limit) in the
// simulator, which the fake moves with the market (trail).
type orderTerms struct {
	simType     string
	limit, stop float64
	tif         string
	trail       *trailState
}

// badRequest is a request the broker refuses as malformed (HTTP 400); it
// carries the errorText.
type badRequest string

// termsOf validates an order type, prices and time in force of an order
// of action. A documented type or time in force the simulator lacks is
// failure Unsupported; an unknown one is a bad request. A Stop order's
// stop is stopPrice, or price when stopPrice is absent (the
// documentation's examples write a stop in price). A trailing order needs
// pegDifference signed for its action (below the market for a Sell, above
// it for a Buy), else failure InvalidPrice; a TrailingStop without a
// stopPrice starts the trail from the market (submit).
func termsOf(action, orderType string, price, stopPrice, peg float64, tif string) (orderTerms, *failure, badRequest) {
	t := orderTerms{}
	switch orderType {
	case tradovatewire.OrderTypeMarket:
		t.simType = protocol.OrderTypeMarket
	case tradovatewire.OrderTypeLimit:
		t.simType, t.limit = protocol.OrderTypeLimit, price
	case tradovatewire.OrderTypeStop:
		t.simType, t.stop = protocol.OrderTypeStopMarket, stopPrice
		if t.stop == 0 {
			t.stop = price
		}
	case tradovatewire.OrderTypeStopLimit:
		t.simType, t.limit, t.stop = protocol.OrderTypeStopLimit, price, stopPrice
	case tradovatewire.OrderTypeTrailingStop:
		t.simType, t.stop = protocol.OrderTypeStopMarket, stopPrice
	case tradovatewire.OrderTypeTrailingStopLimit:
		t.simType, t.limit, t.stop = protocol.OrderTypeStopLimit, price, stopPrice
	case tradovatewire.OrderTypeMIT, tradovatewire.OrderTypeQTS, "LimitIfTouched":
		return t, &failure{"Unsupported", "This order type is not supported."}, ""
	default:
		return t, nil, "orderType is not a known order type."
	}
	switch tif {
	case "", tradovatewire.TIFDay:
		t.tif = protocol.TimeInForceDay
	case tradovatewire.TIFGTC:
		t.tif = protocol.TimeInForceGtc
	case tradovatewire.TIFIOC, tradovatewire.TIFFOK, tradovatewire.TIFGTD:
		return t, &failure{"Unsupported", "This time in force is not supported."}, ""
	default:
		return t, nil, "timeInForce is not a known time in force."
	}
	if orderType == tradovatewire.OrderTypeTrailingStop || orderType == tradovatewire.OrderTypeTrailingStopLimit {
		if (action == tradovatewire.ActionSell && !(peg < 0)) || (action == tradovatewire.ActionBuy && !(peg > 0)) {
			return t, &failure{"InvalidPrice", "The trail (pegDifference) must be below the market for a Sell, above it for a Buy."}, ""
		}
		t.trail = &trailState{typ: orderType, peg: peg, distance: math.Abs(peg)}
		if t.simType == protocol.OrderTypeStopLimit {
			t.trail.offset = roundPrice(t.limit - t.stop)
		}
	}
	return t, nil, ""
}

// validAction reports whether a is Buy or Sell.
func validAction(a string) bool { return a == tradovatewire.ActionBuy || a == tradovatewire.ActionSell }

// orderReply is the outcome of an order request, written after the loop.
type orderReply struct {
	status int
	body   any
}

func (rep *orderReply) fail(f failure) {
	rep.status, rep.body = http.StatusOK, tradovatewire.PlaceOrderResponse{FailureReason: f.reason, FailureText: f.text}
}

func (rep *orderReply) bad(text badRequest) {
	rep.status, rep.body = http.StatusBadRequest, errorBody{ErrorText: string(text)}
}

func (rep *orderReply) missing() {
	rep.status, rep.body = http.StatusNotFound, errorBody{ErrorText: textNotFound}
}

// write writes the reply.
func (rep *orderReply) write(w http.ResponseWriter) { writeJSON(w, rep.status, rep.body) }

// submit places one order in the simulator under an id the fake chooses,
// with the order's text as the simulator's order name. A trailing order is
// placed as its stop (or stop-limit) where the trail starts (startTerms),
// the fake following its contract's quotes to move it (trailQuote). It
// runs in the loop.
func (s *Server) submit(o *orderState, qty int, t orderTerms, text, oco string) error {
	if t.trail != nil {
		if err := s.startTerms(o, &t); err != nil {
			s.st.forget(o)
			return err
		}
	}
	o.trail = t.trail
	rec, err := s.market.SubmitOrder(s.ctx, bridge.OrderRequest{
		Account:     o.acct.name,
		Instrument:  o.contract.simName,
		Action:      o.action,
		OrderType:   t.simType,
		Quantity:    qty,
		LimitPrice:  t.limit,
		StopPrice:   t.stop,
		TimeInForce: t.tif,
		Oco:         oco,
		OrderID:     o.simID,
		Name:        text,
	})
	if err != nil {
		s.st.forget(o)
		return err
	}
	s.ordersPlaced.Add(1)
	s.placementCommand(o)
	if o.trail != nil {
		o.trail.stop = rec.StopPrice
		s.startTrail(o)
	}
	return nil
}

// orderCall answers an order request: it decodes the body into a T (or
// answers 400), runs f in the loop (inLoop) to fill the reply, and
// writes the reply.
func orderCall[T any](s *Server, w http.ResponseWriter, r *http.Request, f func(*orderReply, T)) {
	var req T
	if !readJSON(w, r, &req) {
		return
	}
	var rep orderReply
	if s.inLoop(w, func() { f(&rep, req) }) {
		rep.write(w)
	}
}

// placeOrder answers POST /order/placeorder.
func (s *Server) placeOrder(w http.ResponseWriter, r *http.Request) {
	orderCall(s, w, r, s.placeOrderLocked)
}

func (s *Server) placeOrderLocked(rep *orderReply, req tradovatewire.PlaceOrderRequest) {
	a, c, t, ok := s.checkPlacement(rep, req)
	if !ok {
		return
	}
	if reason := s.takeReject(); reason != "" {
		rep.fail(failure{reason, "Rejected by the test."})
		return
	}
	o := s.st.newOrder(a, c, req.Action)
	o.clOrdID = req.ClOrdID
	if err := s.submit(o, req.OrderQty, t, s.placementText()(req.Text), ""); err != nil {
		s.refused(rep, err)
		return
	}
	rep.status, rep.body = http.StatusOK, tradovatewire.PlaceOrderResponse{OrderID: o.id}
}

// refused answers a refusal of the simulator.
func (s *Server) refused(rep *orderReply, err error) {
	if f, ok := failureOf(err); ok {
		rep.fail(f)
		return
	}
	s.internalReply(rep, err)
}

// checkPlacement validates the common part of a placement: the account,
// action, quantity, terms and symbol. It answers rep and reports false
// when the request cannot go on.
func (s *Server) checkPlacement(rep *orderReply, req tradovatewire.PlaceOrderRequest) (*acctState, *contractState, orderTerms, bool) {
	a := s.st.acctByID[req.AccountID]
	switch {
	case a == nil:
		rep.missing()
		return nil, nil, orderTerms{}, false
	case !validAction(req.Action):
		rep.bad("action must be Buy or Sell.")
		return nil, nil, orderTerms{}, false
	case req.OrderQty < 1:
		rep.bad("orderQty must be at least 1.")
		return nil, nil, orderTerms{}, false
	}
	t, f, bad := termsOf(req.Action, req.OrderType, req.Price, req.StopPrice, req.PegDifference, req.TimeInForce)
	switch {
	case bad != "":
		rep.bad(bad)
		return nil, nil, orderTerms{}, false
	case f != nil:
		rep.fail(*f)
		return nil, nil, orderTerms{}, false
	}
	c := s.findContract(req.Symbol)
	if c == nil {
		rep.fail(failure{"InvalidContract", "Unknown contract."})
		return nil, nil, orderTerms{}, false
	}
	return a, c, t, true
}

// placeOCO answers POST /order/placeoco: both orders are placed, each the
// other's OCO order; when one fills (even partly) the simulator cancels
// the other. When the other order is refused, the first is cancelled and
// the refusal answered.
func (s *Server) placeOCO(w http.ResponseWriter, r *http.Request) {
	orderCall(s, w, r, s.placeOCOLocked)
}

func (s *Server) placeOCOLocked(rep *orderReply, req tradovatewire.PlaceOCORequest) {
	a, c, t1, ok := s.checkPlacement(rep, req.PlaceOrderRequest)
	if !ok {
		return
	}
	if !validAction(req.Other.Action) {
		rep.bad("other.action must be Buy or Sell.")
		return
	}
	t2, f, bad := termsOf(req.Other.Action, req.Other.OrderType, req.Other.Price, req.Other.StopPrice,
		req.Other.PegDifference, req.Other.TimeInForce)
	switch {
	case bad != "":
		rep.bad("other: " + bad)
		return
	case f != nil:
		rep.fail(*f)
		return
	}
	if reason := s.takeReject(); reason != "" {
		rep.fail(failure{reason, "Rejected by the test."})
		return
	}
	first := s.st.newOrder(a, c, req.Action)
	other := s.st.newOrder(a, c, req.Other.Action)
	first.ocoID, other.ocoID = other.id, first.id
	first.clOrdID, other.clOrdID = req.ClOrdID, req.Other.ClOrdID
	text := s.placementText()
	group := "tvoco-" + first.simID
	if err := s.submit(first, req.OrderQty, t1, text(req.Text), group); err != nil {
		s.st.forget(other)
		s.refused(rep, err)
		return
	}
	if err := s.submit(other, req.OrderQty, t2, text(req.Other.Text), group); err != nil {
		first.ocoID = 0
		if _, cerr := s.market.CancelOrder(s.ctx, a.name, first.simID); cerr != nil {
			s.log.Debug("first OCO order could not be cancelled", zap.Error(cerr))
		}
		s.refused(rep, err)
		return
	}
	// The first order may have filled before the other existed: then the
	// other is cancelled now, as the pair requires.
	if recs, err := s.market.Orders(s.ctx, a.name); err == nil {
		for _, rec := range recs {
			if rec.OrderID == first.simID && rec.Filled > 0 {
				_, _ = s.market.CancelOrder(s.ctx, a.name, other.simID)
			}
		}
	}
	rep.status, rep.body = http.StatusOK, tradovatewire.PlaceOCOResponse{OrderID: first.id, OcoID: other.id}
}

// commandReply answers a cancel or a modification with a new command id.
func (s *Server) commandReply(rep *orderReply) {
	id := s.st.nextCommand
	s.st.nextCommand++
	rep.status, rep.body = http.StatusOK, tradovatewire.CommandResponse{CommandID: id}
	if s.strict.successReason.Load() {
		rep.body = tradovatewire.CommandResponse{CommandID: id, FailureReason: tradovatewire.ReasonSuccess}
	}
}

// commandFail answers a refused cancel or modification.
func commandFail(rep *orderReply, f failure) {
	rep.status, rep.body = http.StatusOK, tradovatewire.CommandResponse{FailureReason: f.reason, FailureText: f.text}
}

// commandRefused answers a refusal of the simulator to a cancel or a
// modification.
func (s *Server) commandRefused(rep *orderReply, err error) {
	if errors.Is(err, bridge.ErrOrderNotFound) {
		rep.missing()
		return
	}
	if f, ok := failureOf(err); ok {
		commandFail(rep, f)
		return
	}
	s.internalReply(rep, err)
}

// cancelOrder answers POST /order/cancelorder.
func (s *Server) cancelOrder(w http.ResponseWriter, r *http.Request) {
	var late []props
	defer func() { s.sendLate(late) }()
	orderCall(s, w, r, func(rep *orderReply, req tradovatewire.CancelOrderRequest) {
		o := s.st.orderByID[req.OrderID]
		if o == nil {
			rep.missing()
			return
		}
		if cr := s.takeCommandReject(); cr != nil {
			late = s.rejectCommand(rep, o, tradovatewire.CommandCancel, cr)
			return
		}
		if _, err := s.market.CancelOrder(s.ctx, o.acct.name, o.simID); err != nil {
			s.commandRefused(rep, err)
			return
		}
		s.commandReply(rep)
	})
}

// modifyOrder answers POST /order/modifyorder: the order's new quantity
// and prices. Changing the order's type is failure Unsupported. A
// trailing order's prices follow the market: only its quantity changes
// (the prices sent are ignored), and another pegDifference is failure
// TrailingStopNonOrderQtyModify.
func (s *Server) modifyOrder(w http.ResponseWriter, r *http.Request) {
	var req tradovatewire.ModifyOrderRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.OrderQty < 1 {
		writeJSON(w, http.StatusBadRequest, errorBody{ErrorText: "orderQty must be at least 1."})
		return
	}
	var rep orderReply
	var late []props
	if !s.inLoop(w, func() {
		if o := s.st.orderByID[req.OrderID]; o != nil {
			if cr := s.takeCommandReject(); cr != nil {
				late = s.rejectCommand(&rep, o, tradovatewire.CommandModify, cr)
				return
			}
		}
		s.modifyLocked(&rep, req)
	}) {
		return
	}
	rep.write(w)
	s.sendLate(late)
}

func (s *Server) modifyLocked(rep *orderReply, req tradovatewire.ModifyOrderRequest) {
	o := s.st.orderByID[req.OrderID]
	if o == nil {
		rep.missing()
		return
	}
	if o.trail != nil {
		s.modifyTrailingLocked(rep, o, req)
		return
	}
	t, f, bad := termsOf(o.action, req.OrderType, req.Price, req.StopPrice, 0, req.TimeInForce)
	switch {
	case bad != "":
		rep.bad(bad)
		return
	case f != nil:
		commandFail(rep, *f)
		return
	case len(o.versions) > 0 && req.OrderType != o.version().OrderType:
		commandFail(rep, failure{"Unsupported", "The order type cannot be changed."})
		return
	}
	_, err := s.market.ChangeOrder(s.ctx, bridge.ChangeRequest{
		Account:    o.acct.name,
		OrderID:    o.simID,
		Quantity:   req.OrderQty,
		LimitPrice: t.limit,
		StopPrice:  t.stop,
	})
	if err != nil {
		s.commandRefused(rep, err)
		return
	}
	s.commandReply(rep)
}

// modifyTrailingLocked changes a trailing order's quantity.
func (s *Server) modifyTrailingLocked(rep *orderReply, o *orderState, req tradovatewire.ModifyOrderRequest) {
	switch {
	case req.OrderType != o.trail.typ:
		commandFail(rep, failure{"Unsupported", "The order type cannot be changed."})
		return
	case req.PegDifference != 0 && req.PegDifference != o.trail.peg:
		commandFail(rep, failure{"TrailingStopNonOrderQtyModify", "Only the quantity of a trailing stop can be changed."})
		return
	}
	if _, err := s.market.ChangeOrder(s.ctx, bridge.ChangeRequest{Account: o.acct.name, OrderID: o.simID, Quantity: req.OrderQty}); err != nil {
		s.commandRefused(rep, err)
		return
	}
	s.commandReply(rep)
}

// liquidatePosition answers POST /order/liquidateposition: the account's
// working orders in the contract are cancelled and its position closed
// with a market order, whose id is answered. With no position, the
// answer has no orderId.
func (s *Server) liquidatePosition(w http.ResponseWriter, r *http.Request) {
	orderCall(s, w, r, s.liquidateLocked)
}

func (s *Server) liquidateLocked(rep *orderReply, req tradovatewire.LiquidatePositionRequest) {
	a, c := s.st.acctByID[req.AccountID], s.st.contractByID[req.ContractID]
	if a == nil || c == nil {
		rep.missing()
		return
	}
	if reason := s.takeReject(); reason != "" {
		rep.fail(failure{reason, "Rejected by the test."})
		return
	}
	recs, err := s.market.Orders(s.ctx, a.name)
	if err != nil {
		s.refused(rep, err)
		return
	}
	for _, rec := range recs {
		if rec.Instrument == c.simName && !protocol.TerminalOrderState(rec.OrderState) {
			if _, err := s.market.CancelOrder(s.ctx, a.name, rec.OrderID); err != nil {
				s.log.Debug("order not cancelled by liquidation", zap.Error(err))
			}
		}
	}
	ps, err := s.market.Positions(s.ctx, a.name)
	if err != nil {
		s.refused(rep, err)
		return
	}
	rep.status, rep.body = http.StatusOK, tradovatewire.PlaceOrderResponse{}
	for _, p := range ps {
		if p.Instrument != c.simName || p.Quantity == 0 {
			continue
		}
		action := tradovatewire.ActionSell
		if p.MarketPosition == protocol.MarketPositionShort {
			action = tradovatewire.ActionBuy
		}
		o := s.st.newOrder(a, c, action)
		t := orderTerms{simType: protocol.OrderTypeMarket, tif: protocol.TimeInForceGtc}
		if err := s.submit(o, p.Quantity, t, "Liquidate", ""); err != nil {
			s.refused(rep, err)
			return
		}
		rep.body = tradovatewire.PlaceOrderResponse{OrderID: o.id}
	}
}
