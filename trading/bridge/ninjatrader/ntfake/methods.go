package ntfake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/ninjatrader/ntwire"
)

// requestError is a request the fake refuses before calling the
// simulator: bad_request, unknown_method or not_connected, with a fixed
// sentence.
type requestError struct {
	code, message string
}

func (e *requestError) Error() string { return "ntfake: " + e.code + ": " + e.message }

func badRequest(message string) error {
	return &requestError{code: ntwire.CodeBadRequest, message: message}
}

var (
	errUnknownMethod = &requestError{code: ntwire.CodeUnknownMethod, message: "the add-on has no such method"}
	errNotConnected  = &requestError{code: ntwire.CodeNotConnected, message: "the account's connection is not connected"}
	errNoParams      = badRequest("the method needs params")
	errBadParams     = badRequest("the params are malformed")
	errBadOrderID    = badRequest("orderId must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'")
	errSeparator     = badRequest("'|' is not allowed in an order's name or strategy tag")
	errBadTime       = badRequest("from and to must be RFC 3339 times")
	errBadPeriodType = badRequest("periodType must be tick, second, minute, day, week or month")
	errBadPeriod     = badRequest("period must not be negative")
	errTooLarge      = errors.New("ntfake: result too large")
)

// empty is the result {} of methods that return nothing.
type empty struct{}

// call runs one method other than snapshot on the simulator.
func (s *Server) call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	m := s.market
	switch method {
	case ntwire.MethodSubmitOrder:
		var p ntwire.SubmitOrderParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		switch {
		case !ntwire.ValidOrderID(p.OrderID):
			return nil, errBadOrderID
		case strings.Contains(p.Name, ntwire.NameSeparator) || strings.Contains(p.StrategyTag, ntwire.NameSeparator):
			return nil, errSeparator
		}
		if err := checkInstrument(p.Instrument); err != nil {
			return nil, err
		}
		if err := s.checkConnected(p.Account); err != nil {
			return nil, err
		}
		o, err := m.SubmitOrder(ctx, bridge.OrderRequest{
			Account: p.Account, Instrument: p.Instrument, Action: p.Action, OrderType: p.OrderType,
			Quantity: p.Quantity, LimitPrice: p.LimitPrice, StopPrice: p.StopPrice,
			TimeInForce: p.TimeInForce, Oco: p.Oco, OrderID: p.OrderID, Name: p.Name,
			StrategyTag: p.StrategyTag, AtmTemplate: p.AtmTemplate,
		})
		return ntwire.OrderResult{Order: o}, err

	case ntwire.MethodCancelOrder:
		var p ntwire.OrderRef
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		if err := s.checkConnected(p.Account); err != nil {
			return nil, err
		}
		o, err := m.CancelOrder(ctx, p.Account, p.OrderID)
		return ntwire.OrderResult{Order: o}, err

	case ntwire.MethodChangeOrder:
		var p ntwire.ChangeOrderParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		if err := s.checkConnected(p.Account); err != nil {
			return nil, err
		}
		o, err := m.ChangeOrder(ctx, bridge.ChangeRequest{
			Account: p.Account, OrderID: p.OrderID, Quantity: p.Quantity,
			LimitPrice: p.LimitPrice, StopPrice: p.StopPrice,
		})
		return ntwire.OrderResult{Order: o}, err

	case ntwire.MethodFlatten:
		var p ntwire.FlattenParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		if p.Instrument != "" {
			if err := checkInstrument(p.Instrument); err != nil {
				return nil, err
			}
		}
		if err := s.checkConnected(p.Account); err != nil {
			return nil, err
		}
		return empty{}, m.Flatten(ctx, p.Account, p.Instrument)

	case ntwire.MethodInstrument, ntwire.MethodQuote:
		var p ntwire.InstrumentParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		if err := checkInstrument(p.Instrument); err != nil {
			return nil, err
		}
		if method == ntwire.MethodQuote {
			return m.Quote(ctx, p.Instrument)
		}
		return m.Instrument(ctx, p.Instrument)

	case ntwire.MethodSubscribe, ntwire.MethodUnsubscribe:
		var p ntwire.InstrumentsParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		for _, in := range p.Instruments {
			if err := checkInstrument(in); err != nil {
				return nil, err
			}
		}
		if method == ntwire.MethodSubscribe {
			return empty{}, m.Subscribe(ctx, p.Instruments)
		}
		return empty{}, m.Unsubscribe(ctx, p.Instruments)

	case ntwire.MethodBars:
		var p ntwire.BarsParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		if err := checkInstrument(p.Instrument); err != nil {
			return nil, err
		}
		req := bridge.BarsRequest{Instrument: p.Instrument, PeriodType: p.PeriodType, Period: p.Period,
			DaysBack: p.DaysBack, Limit: p.Limit}
		var err error
		if req.From, err = parseTime(p.From); err != nil {
			return nil, err
		}
		if req.To, err = parseTime(p.To); err != nil {
			return nil, err
		}
		return m.Bars(ctx, req)

	case ntwire.MethodSubscribeBars, ntwire.MethodUnsubscribeBars:
		var p ntwire.BarSeries
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		if err := checkInstrument(p.Instrument); err != nil {
			return nil, err
		}
		if _, ok := protocol.NormalizePeriodType(p.PeriodType); !ok {
			return nil, errBadPeriodType
		}
		if p.Period < 0 {
			return nil, errBadPeriod
		}
		if _, err := m.Instrument(ctx, p.Instrument); err != nil {
			return nil, err
		}
		return empty{}, nil // the fake sends no bar events

	case ntwire.MethodAtmTemplates:
		t, err := m.AtmTemplates(ctx)
		if t == nil {
			t = []protocol.AtmTemplate{}
		}
		return ntwire.AtmTemplatesResult{Templates: t}, err

	case ntwire.MethodStartStrategy:
		var p ntwire.StartStrategyParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		if err := checkInstrument(p.Instrument); err != nil {
			return nil, err
		}
		st, err := m.StartStrategy(ctx, bridge.StrategyRequest{
			Account: p.Account, Class: p.Class, Instrument: p.Instrument, Mode: p.Mode,
			PeriodType: p.PeriodType, Period: p.Period, Parameters: p.Parameters,
		})
		return ntwire.StrategyResult{Strategy: st}, err

	case ntwire.MethodSetStrategyState:
		var p ntwire.StrategyStateParams
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		st, err := m.SetStrategyState(ctx, p.Account, p.ID, bridge.StrategyAction(p.Action))
		return ntwire.StrategyResult{Strategy: st}, err
	}
	return nil, errUnknownMethod
}

// decode decodes a request's params; absent params are a bad request.
// Unknown fields are ignored, as the protocol says.
func decode(params json.RawMessage, v any) error {
	params = bytes.TrimSpace(params)
	if len(params) == 0 || bytes.Equal(params, []byte("null")) {
		return errNoParams
	}
	if err := json.Unmarshal(params, v); err != nil {
		return errBadParams
	}
	return nil
}

// parseTime parses an RFC 3339 time of bars; empty is the zero time.
func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, errBadTime
	}
	return t, nil
}

// checkInstrument refuses a month code ("ESZ26"), which NinjaTrader
// cannot resolve: the agent sends roots and contracts only. Other names go
// to the simulator, which says why it cannot resolve them.
func checkInstrument(name string) error {
	in, err := protocol.ParseInstrument(protocol.NormalizeInstrument(name))
	if err == nil && in.Form == protocol.InstrumentMonthCode {
		return &bridge.InstrumentError{Cause: bridge.InstrumentMalformed}
	}
	return nil
}

// checkConnected refuses order methods on an account whose connection
// SetConnectionStatus took down.
func (s *Server) checkConnected(account string) error {
	if s.ls.down[account] {
		return errNotConnected
	}
	return nil
}

// replyError maps an error of a request onto the document's error codes.
// Messages are fixed sentences, or the simulator's reason for a refused
// order (which never repeats the request).
func replyError(err error) *ntwire.Error {
	var (
		re  *requestError
		ie  *bridge.InstrumentError
		rej *bridge.RejectError
		bad *bridge.RequestError
	)
	switch {
	case errors.As(err, &re):
		return &ntwire.Error{Code: re.code, Message: re.message}
	case errors.As(err, &ie):
		return &ntwire.Error{Code: ntwire.CodeInstrumentUnknown, Message: "the instrument cannot be resolved",
			Cause: ie.Cause, Root: ie.Root, Months: ie.Months, Front: ie.Front}
	case errors.Is(err, bridge.ErrInstrumentUnknown):
		return &ntwire.Error{Code: ntwire.CodeInstrumentUnknown, Message: "the instrument cannot be resolved"}
	case errors.As(err, &rej):
		return &ntwire.Error{Code: ntwire.CodeOrderRejected, Message: rej.Reason}
	case errors.Is(err, bridge.ErrAccountNotFound):
		return &ntwire.Error{Code: ntwire.CodeAccountNotFound, Message: "no such account"}
	case errors.Is(err, bridge.ErrOrderNotFound):
		return &ntwire.Error{Code: ntwire.CodeOrderNotFound, Message: "no such order on the account"}
	case errors.Is(err, bridge.ErrTemplateNotFound):
		return &ntwire.Error{Code: ntwire.CodeTemplateNotFound, Message: "no ATM template of that name"}
	case errors.Is(err, bridge.ErrStrategyNotFound):
		return &ntwire.Error{Code: ntwire.CodeStrategyNotFound, Message: "no such strategy on the account"}
	case errors.Is(err, bridge.ErrStrategyClass):
		return &ntwire.Error{Code: ntwire.CodeStrategyClassUnknown, Message: "no strategy of that class is installed"}
	case errors.Is(err, bridge.ErrStrategyTerminal):
		return &ntwire.Error{Code: ntwire.CodeStrategyTerminal, Message: "the strategy has ended"}
	case errors.Is(err, bridge.ErrNotConnected):
		return &ntwire.Error{Code: ntwire.CodeNotConnected, Message: "the platform is not connected"}
	case errors.As(err, &bad):
		return &ntwire.Error{Code: ntwire.CodeBadRequest, Message: bad.Reason}
	case errors.Is(err, errTooLarge):
		return &ntwire.Error{Code: ntwire.CodeInternal, Message: "the result is too large to send"}
	}
	return &ntwire.Error{Code: ntwire.CodeInternal, Message: "the add-on failed to carry out the request"}
}
