package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/store"
	"tradebridge/relay/tradecall"
	"tradebridge/relay/webhook/alertcmd"
)

// What a dry run says the alert would be now (TryResult.Would).
const (
	// WouldRun: admitted and recorded, its calls sent now.
	WouldRun = "run"
	// WouldSchedule: admitted and recorded, its calls sent after its
	// delay.
	WouldSchedule = store.WebhookScheduled
	// WouldBlock: admitted and recorded blocked by its own gates
	// (rate_limit, its trading window, closing_only_after for every
	// call): nothing sent.
	WouldBlock = store.WebhookBlocked
	// WouldFail: admitted and recorded failed before a call was sent:
	// the body does not parse, or a call cannot be sent (no broker link,
	// the add-on not connected).
	WouldFail = store.WebhookFailed
	// WouldRefuse: refused before anything is recorded: a body too
	// large, a missing or wrong key, a plan below pro.
	WouldRefuse = "refused"
)

// ErrUnavailable is a dry run's error when the store could not check the
// alert's key.
var ErrUnavailable = errors.New("webhook: the store cannot check the key right now")

// TryResult is what a dry run (Server.Try) learned of an alert: what it
// would be if it were sent now, and the calls it would make.
type TryResult struct {
	// Would is one of the Would constants.
	Would string `json:"would"`
	// Command, Destination and Accounts are the alert's as read (those
	// read before a parse error too).
	Command     string   `json:"command"`
	Destination string   `json:"destination"`
	Accounts    []string `json:"accounts"`
	// Summary is the alert in words; "" when it does not parse.
	Summary string `json:"summary"`
	// Calls are the trading calls it would make, in order, with the
	// arguments the trading operations would get: empty when it does not
	// parse, and for a kill_switch alert.
	Calls []TryCall `json:"calls"`
	// Error is the refusal or failure the alert would get: the status,
	// code and detail of its answer (the parser's detail for a body that
	// does not parse). Nil when it would run, be scheduled or blocked.
	Error *TryError `json:"error,omitempty"`
	// Notes say what else holds now: why it would be blocked, its delay,
	// a kill switch it sets, calls closing_only_after changes.
	Notes []string `json:"notes"`
}

// OK reports whether the alert would be accepted and not fail: it would
// run, be scheduled, or be blocked by its own gates.
func (r TryResult) OK() bool { return r.Error == nil }

// TryCall is one call of a dry run.
type TryCall struct {
	// Account is the call's account; "" for a call of every account.
	Account string `json:"account"`
	// Fn is the RPC function, as the trading operations name it
	// (PlaceOrder, FlatPlace, ClosePosition, …).
	Fn string `json:"fn"`
	// Args are its arguments, as JSON.
	Args json.RawMessage `json:"args"`
	// Skipped, when not empty, is why the call would not be made (the
	// alert's gates, closing_only_after).
	Skipped string `json:"skipped,omitempty"`
}

// TryError is the refusal or failure of a dry run: the status, code
// and detail the alert's answer would carry, and the field of the
// language the parser's detail names ("" when none).
type TryError struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
	Field  string `json:"field,omitempty"`
}

// Try is a dry run of an alert body of the user's webhook, sent with the
// content type: it takes the body through the steps a real alert goes
// through (package documentation), up to but not including anything with
// an effect, and says what the alert would be now and which calls it
// would make.
//
// It runs, in order: the body's size; the parser and the plan of calls
// (alertcmd.Parse, Alert.Calls); the key the body carries, checked
// against the user's webhook with the door's own check (its user's plan,
// and a disabled user, included); the alert's gates (its rate_limit
// counted in the history, its trading window, its delay) at the Server's
// clock; for a kill_switch alert, whether this relay can set it; then for
// each call its preparation (closing_only_after) and its route: the
// broker family on this relay and the user's broker link (Options.Links),
// the agent connected and new enough for exits.
//
// It records nothing (no history entry, no duplicate claim, no activity
// entry), spends nothing of the user's trading budget, sets no kill
// switch and calls nothing. It does not check what only the trading
// operations know at the moment of a call: the positions
// (require_market_position, max_positions), the kill switch, the account
// monitor and the strategy locks.
//
// The error is the store's failure; store.ErrNotFound when the user has
// no webhook (Show makes it).
func (s *Server) Try(ctx context.Context, userID string, body []byte, contentType string) (TryResult, error) {
	res := TryResult{Calls: []TryCall{}, Notes: []string{}, Accounts: []string{}}
	if len(body) > alertcmd.MaxBody {
		res.Would, res.Error = WouldRefuse, &TryError{Status: http.StatusRequestEntityTooLarge, Code: errcode.BodyTooLarge,
			Detail: "the alert is larger than the limit of " + strconv.Itoa(alertcmd.MaxBody) + " bytes"}
		return res, nil
	}
	a, calls, perr := read(body, contentType)
	res.Command, res.Destination, res.Accounts = a.Command, a.Destination, nonNil(a.Accounts)

	// The key, as the door checks it: the webhook's id and the key the
	// body carries (Server.token), verified by the door's admitter
	// without its budgets.
	w, err := s.opts.Store.Webhook(ctx, userID)
	if err != nil {
		return TryResult{}, fmt.Errorf("webhook: read the user's webhook: %w", err)
	}
	token := ""
	if key := alertKey(a, body); key != "" {
		token = w.ID + tokenSep + key
	}
	p, e := s.auth.Verify(ctx, &s.door, token)
	switch {
	case e != nil && e.Status == http.StatusServiceUnavailable:
		return TryResult{}, ErrUnavailable
	case e != nil:
		res.Would, res.Error = WouldRefuse, &TryError{Status: e.Status, Code: e.Code, Detail: e.Detail}
		return res, nil
	case p.UserID != userID:
		// The webhook's id is the user's own: a key of another user's
		// cannot verify with it.
		return TryResult{}, errors.New("webhook: the webhook's user is not the caller")
	}

	if perr != nil {
		f := badAlert(perr)
		res.Would, res.Error = WouldFail, &TryError{Status: f.Status, Code: f.Code, Detail: f.Detail, Field: perr.Field}
		return res, nil
	}
	res.Summary = describe(&a)
	now := s.opts.Clock().UTC()
	g, err := s.gates(ctx, userID, &a, len(calls), now)
	if err != nil {
		return TryResult{}, fmt.Errorf("webhook: count the alerts of the rate limit: %w", err)
	}
	closingOnly := s.closingOnly(&a, now)
	blocked := 0
	for _, c := range calls {
		pc := prepare(&a, c, closingOnly)
		tc := TryCall{Account: c.Account, Fn: pc.fn, Args: pc.args}
		switch {
		case g.status == store.WebhookBlocked:
			tc.Skipped = g.reason
		case pc.skip != nil:
			tc.Skipped = pc.skip.Detail
			blocked++
		case pc.placeBlocked != nil:
			res.Notes = append(res.Notes, "On "+accountName(c.Account)+
				": the alert's closing_only_after has passed: the position would be flattened and nothing placed.")
			blocked++
		}
		res.Calls = append(res.Calls, tc)
	}
	if g.status == store.WebhookBlocked {
		res.Would = WouldBlock
		res.Notes = append(res.Notes, "Blocked now: "+g.reason+". Nothing would be sent.")
		return res, nil
	}
	if a.KillSwitch != nil && s.opts.Manage == nil {
		res.Would, res.Error = WouldFail, &TryError{Status: http.StatusServiceUnavailable, Code: errcode.ManagementUnavailable,
			Detail: "the kill switch cannot be set from alerts on this relay"}
		return res, nil
	}
	if e := s.reachable(ctx, userID, &a, calls, closingOnly); e != nil {
		res.Would, res.Error = WouldFail, &TryError{Status: e.Status, Code: e.Code, Detail: e.Detail}
		return res, nil
	}
	switch {
	case len(calls) > 0 && blocked == len(calls):
		// As the real run judges its results: every call blocked (a
		// FLATPLACE's flatten still runs).
		res.Would = WouldBlock
		res.Notes = append(res.Notes, "Blocked now: the alert's closing_only_after has passed.")
	case g.status == store.WebhookScheduled:
		res.Would = WouldSchedule
		res.Notes = append(res.Notes, "It would wait "+a.Delay.String()+" before its calls are sent.")
	default:
		res.Would = WouldRun
	}
	if a.KillSwitch != nil {
		res.Notes = append(res.Notes, "It would turn your kill switch "+onOff(*a.KillSwitch)+", as the Management API does.")
	}
	return res, nil
}

// reachable returns the failure the first call of a that would be sent
// would meet before it reaches the trading operations (route, then what
// the dry run reads without an effect: the user's broker link, the agent's
// tunnel); nil when there is none.
func (s *Server) reachable(ctx context.Context, userID string, a *alertcmd.Alert, calls []alertcmd.Call, closingOnly bool) *httpapi.Error {
	for _, c := range calls {
		if prepare(a, c, closingOnly).skip != nil {
			continue
		}
		if _, _, e := s.route(userID, a, c); e != nil {
			return e
		}
		if a.Destination == alertcmd.DestinationBroker {
			if s.opts.Links == nil {
				return nil
			}
			_, err := s.opts.Links.BrokerLink(ctx, userID)
			switch {
			case errors.Is(err, store.ErrNotFound):
				return &httpapi.Error{Status: http.StatusConflict, Code: errcode.TradovateNotLinked, Detail: NotLinkedDetail}
			case err != nil:
				// The link could not be read: the real call would
				// learn it; the dry run does not guess.
				return nil
			}
			return nil
		}
		if !s.opts.Desktop.Connected(userID) {
			e, _ := tradecall.CallError(agentcall.ErrNotConnected, true)
			return &e
		}
		return nil
	}
	return nil
}

// NotLinkedDetail is a dry run's detail for an alert to the broker family
// of a user without a broker link, as the broker family refuses its calls
// (409 tradovate_not_linked).
const NotLinkedDetail = "no Tradovate login is linked: link one before sending alerts with destination=broker"

// accountName names an account in a note: "every account" for "".
func accountName(account string) string {
	if account == "" {
		return "every account"
	}
	return account
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// describe says what a parsed alert does, in words.
func describe(a *alertcmd.Alert) string {
	var b strings.Builder
	on := " on " + strings.Join(a.Accounts, ", ")
	if a.Destination == alertcmd.DestinationBroker {
		on += " (your linked Tradovate login)"
	}
	switch a.Command {
	case "":
		if a.KillSwitch != nil {
			b.WriteString("Turn the kill switch " + onOff(*a.KillSwitch))
		}
	case alertcmd.CmdPlace, alertcmd.CmdFlatPlace:
		if a.Command == alertcmd.CmdFlatPlace || a.FlattenFirst {
			b.WriteString("Flatten " + a.Instrument + " first, then ")
			b.WriteString(strings.ToLower(a.Action))
		} else {
			b.WriteString(a.Action)
		}
		b.WriteString(" " + order(a) + on)
		b.WriteString(exits(a))
	case alertcmd.CmdCancelReplace:
		b.WriteString("Cancel order " + a.OrderID + ", then " + strings.ToLower(a.Action) + " " + order(a) + on)
	case alertcmd.CmdReversePosition:
		b.WriteString("Close the " + a.Instrument + " position, then " + strings.ToLower(a.Action) + " " + order(a) + on)
	case alertcmd.CmdClosePosition:
		b.WriteString("Close ")
		switch {
		case a.Qty != nil:
			b.WriteString(strconv.Itoa(*a.Qty) + " contracts of ")
		case a.QtyPercent != nil:
			b.WriteString(strconv.FormatFloat(*a.QtyPercent*100, 'f', -1, 64) + "% of ")
		}
		b.WriteString("the " + a.Instrument + " position" + on)
	case alertcmd.CmdReverse:
		b.WriteString("Reverse the " + a.Instrument + " position at the same size" + on)
	case alertcmd.CmdFlatten:
		if a.Instrument != "" {
			b.WriteString("Flatten " + a.Instrument + on + ": close the position, cancel its orders")
		} else {
			b.WriteString("Flatten every position and cancel every order" + on)
		}
	case alertcmd.CmdFlattenEverything:
		b.WriteString("Flatten every position and cancel every order of every account")
	case alertcmd.CmdCancel:
		b.WriteString("Cancel order " + a.OrderID + on)
	case alertcmd.CmdCancelOrders:
		b.WriteString("Cancel the working " + a.Instrument + " orders" + on)
	case alertcmd.CmdCancelAllOrders:
		b.WriteString("Cancel every working order of every account")
	case alertcmd.CmdChange:
		b.WriteString("Change order " + a.OrderID + on + ":")
		if a.Qty != nil {
			b.WriteString(" quantity " + strconv.Itoa(*a.Qty))
		}
		if a.LimitPrice != nil {
			b.WriteString(" limit " + price(a.LimitPrice))
		}
		if a.StopPrice != nil {
			b.WriteString(" stop " + price(a.StopPrice))
		}
	case alertcmd.CmdCancelAndBracket:
		b.WriteString("Cancel the " + a.Instrument + " orders" + on + " and bracket the position")
		b.WriteString(exits(a))
	case alertcmd.CmdCloseStrategy:
		b.WriteString("Close strategy " + a.StrategyID + on)
	}
	if a.StrategyTag != "" {
		b.WriteString(", as strategy " + a.StrategyTag)
	}
	if a.Delay > 0 {
		b.WriteString(", after " + a.Delay.String())
	}
	if a.StartTime != nil && a.EndTime != nil {
		b.WriteString(", only from " + clock(*a.StartTime) + " to " + clock(*a.EndTime) + " New York time")
		if a.ClosingOnlyAfter != nil {
			b.WriteString(" (closing only after " + clock(*a.ClosingOnlyAfter) + ")")
		}
	}
	b.WriteString(".")
	return b.String()
}

// order says an order's quantity, instrument, type and prices.
func order(a *alertcmd.Alert) string {
	s := ""
	if a.Qty != nil {
		s = strconv.Itoa(*a.Qty) + " "
	}
	s += a.Instrument
	switch a.OrderType {
	case protocol.OrderTypeMarket:
		s += " at market"
	case protocol.OrderTypeLimit:
		s += " limit at " + price(a.LimitPrice)
	case protocol.OrderTypeStopMarket:
		s += " stop at " + price(a.StopPrice)
	case protocol.OrderTypeStopLimit:
		s += " stop at " + price(a.StopPrice) + ", limit " + price(a.LimitPrice)
	}
	if a.TIF != "" {
		s += " (" + a.TIF + ")"
	}
	if a.ATM != "" {
		s += " with ATM template " + a.ATM
	}
	return s
}

// exits says an entry's brackets.
func exits(a *alertcmd.Alert) string {
	var parts []string
	if a.TakeProfit != nil {
		parts = append(parts, "take profit "+price(a.TakeProfit))
	}
	if a.StopLoss != nil {
		parts = append(parts, "stop loss "+price(a.StopLoss))
	}
	if a.StopLossLimit != nil {
		parts = append(parts, "stop-limit loss "+price(a.StopLossLimit))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}

// price says a price: a level, or a distance with its unit.
func price(p *alertcmd.Price) string {
	switch {
	case p == nil:
		return "?"
	case p.Level != nil:
		return strconv.FormatFloat(*p.Level, 'f', -1, 64)
	}
	v := strconv.FormatFloat(p.Offset.Value, 'f', -1, 64)
	if p.Offset.Signed && p.Offset.Value > 0 {
		v = "+" + v
	}
	switch p.Offset.Unit {
	case protocol.OffsetPercent:
		return v + "%"
	case protocol.OffsetDollars:
		return "$" + v
	}
	return v + " " + p.Offset.Unit
}

// clock writes a time of day as HH:MM.
func clock(c alertcmd.ClockTime) string {
	return fmt.Sprintf("%02d:%02d", int(c)/60, int(c)%60)
}
