package tradecall

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
	"tradebridge/relay/events"
)

// The activity log's entries of trading writes, the same for every door:
// the HTTP routes of either family (package api) and the WebSocket form
// of RPC (package stream) describe what they ran as a Write and hand it,
// with its Outcome, to Activity.Record once the caller has its answer.
// Reads are never recorded, nor requests refused before the call (bad
// input, a key reused, a key still running, a store that cannot claim the
// key): only what reached, or was meant to reach, the agent or the
// broker.

// Write is one trading write as the activity log records it: who sent
// it, through which door and family, and what it asked.
type Write struct {
	// Principal is the caller; its token's id (auth.TokenID) names the
	// source.
	Principal auth.Principal
	// Source is the door's kind of source: protocol.SourceAPI for the
	// HTTP routes, protocol.SourceStream for the socket; the doors that
	// come later (dashboard, MCP, webhook) pass their own.
	Source string
	// Family is the family of routes as KeyedOptions.Namespace spells
	// it: "" for the desktop family, "tv" for the broker family. The entry
	// names it in detail.family: "desktop" or "tv".
	Family string
	// Fn is the function run; only write functions are recorded.
	Fn string
	// Args are the typed arguments the agent received.
	Args json.RawMessage
	// Key is the write's idempotency key as the doors spell it
	// ("key:<Idempotency-Key>", "order:<orderId>"), or "" when it has
	// none.
	Key string
	// SourceID, when set, is the source's id instead of the token's (the
	// TradingView webhook's id).
	SourceID string
}

// Activity publishes the activity log's entries of trading writes to the
// relay's event spine. A nil *Activity publishes nothing.
type Activity struct {
	pub events.Publisher
	now func() time.Time
}

// NewActivity returns the recorder of trading writes publishing to pub,
// timed by now (nil: time.Now). A nil pub returns nil, which records
// nothing.
func NewActivity(pub events.Publisher, now func() time.Time) *Activity {
	if pub == nil {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	return &Activity{pub: pub, now: now}
}

// Record publishes w's outcome o for the activity log, which builds its
// entry (WriteEntry) on its own goroutine (events.Deferred). It never
// blocks: the spine takes the event or drops it. Doors call it after the
// caller has its answer.
func (a *Activity) Record(w Write, o Outcome) {
	if a == nil {
		return
	}
	if f, found := protocol.LookupFunction(w.Fn); !found || !f.Write {
		return
	}
	// The entry is built by the activity log's worker, not here: the
	// door's goroutine only hands over what it ran.
	at := a.now()
	a.pub.Publish(events.Deferred(w.Principal.UserID, len(w.Args)+len(o.Result), func() (protocol.ActivityEntry, string, bool) {
		return WriteEntry(w, o, at)
	}))
}

// CallOutcome is the Outcome of an unkeyed call that answered result or
// err: a success, the error CallError maps it to, or, for an error that
// is neither the agent's nor the tunnel's, Gone when gone (the caller
// left) and a relay failure otherwise.
func CallOutcome(fn string, result json.RawMessage, err error, gone bool) Outcome {
	if err == nil {
		return Outcome{Fn: fn, Result: result}
	}
	f, _ := protocol.LookupFunction(fn)
	if e, ok := CallError(err, f.Write); ok {
		return Outcome{Err: &e}
	}
	if gone {
		return Outcome{Gone: true}
	}
	return failed(http.StatusInternalServerError, errcode.InternalError, "the relay failed to complete the call", 0)
}

// WriteEntry returns the activity log's entry of w's outcome o at time
// at, and the entry's ref (events.Event.Ref); ok is false when nothing is
// recorded: w is no write, or a keyed write refused before it ran (o has
// no Ref and is not Replayed).
//
// The kinds: order.replayed for a recorded outcome answered again;
// trading.blocked for trading_blocked, with detail.rule as the agent
// names it ("… (rule: <name>)"); order.refused for any other error (the
// agent's, the broker's, addon_disconnected, outcome_unknown; a caller
// that left before the outcome was known is outcome_unknown);
// order.placed for a placing function's success (PlaceOrder, FlatPlace,
// Reverse, ReversePosition, CancelAndBracket) and order.changed for the
// other writes'.
//
// The ref of a keyed write's own outcome is derived from o.Ref (the
// family's key and its claim), so that a rerun of the claim records
// nothing more; replays and unkeyed writes have none.
func WriteEntry(w Write, o Outcome, at time.Time) (e protocol.ActivityEntry, ref string, ok bool) {
	f, found := protocol.LookupFunction(w.Fn)
	if !found || !f.Write {
		return e, "", false
	}
	if w.Key != "" && !o.Replayed && o.Ref == "" {
		return e, "", false
	}
	var args writeArgs
	_ = json.Unmarshal(w.Args, &args)
	family := w.Family
	if family == "" {
		family = "desktop"
	}
	source := w.Source
	if source == "" {
		source = protocol.SourceAPI
	}
	d := writeDetail{Fn: w.Fn, Family: family}
	if len(w.Args) > 0 {
		d.Request = w.Args // the door's own encoding; Marshal checks it
	}
	if k, isKey := strings.CutPrefix(w.Key, "key:"); isKey {
		d.IdempotencyKey = k
	}
	e = protocol.ActivityEntry{
		At:      at.UTC().Truncate(time.Millisecond),
		Account: args.Account,
		Source:  protocol.ActivitySource{Kind: source, ID: auth.TokenID(w.Principal.TokenHash)},
	}
	if w.SourceID != "" {
		e.Source.ID = w.SourceID
	}
	var res writeResult
	if o.Err == nil && !o.Gone {
		_ = json.Unmarshal(o.Result, &res)
		d.OrderIDs = res.placed()
		d.CancelledOrderIDs = res.CancelledOrderIDs
	}
	code := ""
	switch {
	case o.Gone:
		code = errcode.OutcomeUnknown
	case o.Err != nil:
		code = o.Err.Code
	}
	switch {
	case o.Replayed:
		e.Kind = protocol.ActivityOrderReplayed
		d.Error = code
		e.Summary = replaySummary(w.Fn, args, code, d.OrderIDs)
	case code == protocol.CodeTradingBlocked:
		e.Kind = protocol.ActivityTradingBlocked
		d.Rule = BlockedRule(o.Err.Detail)
		e.Summary = refusedSummary(w.Fn, args, code, d.Rule)
	case code != "":
		e.Kind = protocol.ActivityOrderRefused
		d.Error = code
		e.Summary = refusedSummary(w.Fn, args, code, "")
	case placing(w.Fn):
		e.Kind = protocol.ActivityOrderPlaced
		e.Summary = placedSummary(w.Fn, args, res)
	default:
		e.Kind = protocol.ActivityOrderChanged
		e.Summary = changedSummary(w.Fn, args, res)
	}
	e.Summary = protocol.CutActivitySummary(e.Summary)
	if e.Detail, ok = marshalDetail(d); !ok {
		return e, "", false
	}
	if !o.Replayed && o.Ref != "" {
		ref = o.Ref
	}
	return e, ref, true
}

// maxTruncatedIDs is how many ids each list keeps in a detail cut to
// protocol.MaxActivityDetail.
const maxTruncatedIDs = 20

// marshalDetail encodes d within protocol.MaxActivityDetail: a detail too large leaves the
// request out, then keeps the first maxTruncatedIDs of each list of ids,
// and says so (truncated). A detail that cannot be encoded records
// nothing.
func marshalDetail(d writeDetail) (json.RawMessage, bool) {
	b, err := protocol.Marshal(d)
	if err != nil {
		return nil, false
	}
	if len(b) <= protocol.MaxActivityDetail {
		return b, true
	}
	d.Truncated, d.Request = true, nil
	d.OrderIDs = d.OrderIDs[:min(len(d.OrderIDs), maxTruncatedIDs)]
	d.CancelledOrderIDs = d.CancelledOrderIDs[:min(len(d.CancelledOrderIDs), maxTruncatedIDs)]
	if b, err = protocol.Marshal(d); err != nil || len(b) > protocol.MaxActivityDetail {
		return nil, false
	}
	return b, true
}

// writeDetail is the detail of a trading write's entry (see the kinds'
// comments in package protocol).
type writeDetail struct {
	Fn             string          `json:"fn"`
	Family         string          `json:"family"`
	Request        json.RawMessage `json:"request,omitempty"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty"`
	// OrderIDs are the orders the write placed (or, for a change, the
	// order it changed), CancelledOrderIDs the ones it cancelled.
	OrderIDs          []string `json:"orderIds,omitempty"`
	CancelledOrderIDs []string `json:"cancelledOrderIds,omitempty"`
	Error             string   `json:"error,omitempty"`
	Rule              string   `json:"rule,omitempty"`
	// Truncated says that the detail was cut to protocol.MaxActivityDetail: the request
	// left out, the lists of ids cut.
	Truncated bool `json:"truncated,omitempty"`
}

// writeArgs are the arguments a summary names.
type writeArgs struct {
	Account       string   `json:"account"`
	Instrument    string   `json:"instrument"`
	Action        string   `json:"action"`
	Quantity      *int64   `json:"quantity"`
	Percent       *float64 `json:"percent"`
	OrderType     string   `json:"orderType"`
	LimitPrice    *float64 `json:"limitPrice"`
	StopPrice     *float64 `json:"stopPrice"`
	OrderID       string   `json:"orderId"`
	StrategyID    string   `json:"id"`
	StrategyClass string   `json:"strategyClass"`
}

// writeResult are the ids a write's result names, whatever its shape
// (PlaceResult, OrderResult, FlattenResult, CancelResult, BracketResult,
// Strategy).
type writeResult struct {
	OrderID           string   `json:"orderId"`
	OrderIDs          []string `json:"orderIds"`
	CloseOrderIDs     []string `json:"closeOrderIds"`
	CancelledOrderIDs []string `json:"cancelledOrderIds"`
	Unchanged         bool     `json:"unchanged"`
	StrategyID        string   `json:"id"`
}

// placed returns the ids of the orders the result names as placed or
// changed, each once, closing orders first.
func (r writeResult) placed() []string {
	var out []string
	seen := map[string]bool{}
	for _, ids := range [][]string{r.CloseOrderIDs, {r.OrderID}, r.OrderIDs} {
		for _, id := range ids {
			if id != "" && !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// placing reports the functions whose success is order.placed.
func placing(fn string) bool {
	switch fn {
	case protocol.FnPlaceOrder, protocol.FnFlatPlace, protocol.FnReverse, protocol.FnReversePosition, protocol.FnCancelAndBracket,
		protocol.FnCancelReplace:
		return true
	}
	return false
}

// BlockedRule returns the rule a trading_blocked error's detail names
// ("… (rule: monitorStopped)", as the agent's trading gate writes it since
// protocol version 3), or "" when it names none.
func BlockedRule(detail string) string {
	i := strings.LastIndex(detail, "(rule: ")
	if i < 0 || !strings.HasSuffix(detail, ")") {
		return ""
	}
	rule := detail[i+len("(rule: ") : len(detail)-1]
	if rule == "" || len(rule) > 64 {
		return ""
	}
	for _, c := range rule {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' && c != '-' && c != '.' {
			return ""
		}
	}
	return rule
}

// on names the account of a summary: " on Sim101", or "".
func on(a writeArgs) string {
	if a.Account == "" {
		return ""
	}
	return " on " + a.Account
}

// placedSummary: "Bought 2 ES 12-26 at market on Sim101 — order 123".
func placedSummary(fn string, a writeArgs, r writeResult) string {
	ids := r.placed()
	if r.Unchanged {
		return fn + on(a) + ": nothing placed, the position is already at its target"
	}
	var b strings.Builder
	switch fn {
	case protocol.FnPlaceOrder, protocol.FnFlatPlace, protocol.FnReversePosition, protocol.FnCancelReplace:
		b.WriteString(verb(a.Action))
		if a.Quantity != nil {
			b.WriteString(" " + strconv.FormatInt(*a.Quantity, 10))
		}
		if a.Instrument != "" {
			b.WriteString(" " + a.Instrument)
		}
		b.WriteString(priced(a))
		b.WriteString(on(a))
		if fn != protocol.FnPlaceOrder {
			b.WriteString(" (" + fn + ")")
		}
	case protocol.FnCancelAndBracket:
		b.WriteString("Bracketed " + a.Instrument + on(a))
	default: // Reverse
		b.WriteString("Reversed " + a.Instrument + on(a))
	}
	b.WriteString(orders(" — ", ids))
	return b.String()
}

// changedSummary: "CancelOrder 123 on Sim101", "Flatten on Sim101 — orders 1, 2; cancelled 3".
func changedSummary(fn string, a writeArgs, r writeResult) string {
	s := fn
	switch fn {
	case protocol.FnCancelOrder, protocol.FnChangeOrder:
		if a.OrderID != "" {
			s += " " + a.OrderID
		}
	case protocol.FnStartStrategy:
		if a.StrategyClass != "" {
			s += " " + a.StrategyClass
		}
		if r.StrategyID != "" {
			s += " (" + r.StrategyID + ")"
		}
	case protocol.FnCloseStrategy, protocol.FnEnableStrategy, protocol.FnDisableStrategy:
		if a.StrategyID != "" {
			s += " " + a.StrategyID
		}
	default:
		if a.Instrument != "" {
			s += " " + a.Instrument
		}
	}
	s += on(a)
	if fn != protocol.FnCancelOrder && fn != protocol.FnChangeOrder {
		s += orders(" — ", r.placed())
	}
	if n := len(r.CancelledOrderIDs); n > 0 {
		s += "; " + strconv.Itoa(n) + " cancelled"
	}
	return s
}

// refusedSummary: "PlaceOrder on Sim101 refused: trading_blocked (monitorStopped)".
func refusedSummary(fn string, a writeArgs, code, rule string) string {
	s := fn + on(a) + " refused: " + code
	if code == errcode.OutcomeUnknown {
		s = fn + on(a) + ": outcome unknown (" + code + "); retry with the same key to learn it"
	}
	if rule != "" {
		s += " (" + rule + ")"
	}
	return s
}

// replaySummary: "PlaceOrder on Sim101 answered again from its first outcome — order 123".
func replaySummary(fn string, a writeArgs, code string, ids []string) string {
	s := fn + on(a) + " answered again from its first outcome"
	if code != "" {
		return s + " (" + code + ")"
	}
	return s + orders(" — ", ids)
}

// verb is the past tense of an order's action.
func verb(action string) string {
	switch action {
	case protocol.ActionBuy:
		return "Bought"
	case protocol.ActionSell:
		return "Sold"
	}
	return "Placed"
}

// priced names the order's type and prices: " at market", " limit
// 4500.25", " stop 4490 limit 4489.75".
func priced(a writeArgs) string {
	num := func(p *float64) string {
		if p == nil {
			return "?"
		}
		return strconv.FormatFloat(*p, 'f', -1, 64)
	}
	switch a.OrderType {
	case protocol.OrderTypeMarket:
		return " at market"
	case protocol.OrderTypeLimit:
		return " limit " + num(a.LimitPrice)
	case protocol.OrderTypeStopMarket:
		return " stop " + num(a.StopPrice)
	case protocol.OrderTypeStopLimit:
		return " stop " + num(a.StopPrice) + " limit " + num(a.LimitPrice)
	case "":
		return ""
	}
	return " " + a.OrderType
}

// maxSummaryIDs bounds the order ids a summary lists (detail has them
// all).
const maxSummaryIDs = 5

// orders names ids after sep: "order 123", "orders 1, 2, 3", "orders 1,
// 2, 3, 4, 5 and 2 more"; "" for none.
func orders(sep string, ids []string) string {
	switch len(ids) {
	case 0:
		return ""
	case 1:
		return sep + "order " + ids[0]
	}
	shown := ids[:min(len(ids), maxSummaryIDs)]
	s := sep + "orders " + strings.Join(shown, ", ")
	if n := len(ids) - len(shown); n > 0 {
		s += " and " + strconv.Itoa(n) + " more"
	}
	return s
}

// outcomeRef is the ref of a keyed write's own outcome: one per user's
// stored key (its family's namespace in it) and claim (the record's
// creation, which a rerun of the claim keeps and a claim after the key
// expired renews), hashed to a fixed length.
func outcomeRef(storedKey string, claimed time.Time) string {
	sum := sha256.Sum256([]byte(storedKey + "\x00" + strconv.FormatInt(claimed.UnixMilli(), 10)))
	return "write:" + hex.EncodeToString(sum[:16])
}
