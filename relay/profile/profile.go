// Package profile renders the results of trading calls in the response
// profile of the caller's API token. The agent answers every RPC function
// with its protocol record (a list is a JSON array); this package turns that
// record into what a bot author reads, for the HTTP routes (package api) and
// the WebSocket form of RPC (package stream) alike, so a call reads the same
// on either transport.
//
// Two profiles exist, chosen per token when it is issued (never per request:
// a bot's behaviour must not hinge on a header it forgot):
//
//   - Standard, the default, is the specification's envelope:
//     {"success":true,"data":{…}}. data is always a JSON object; lists are
//     named ({"positions":[…],"count":n}, {"orders":[…]}, …). Writes also
//     carry their ids at the top level (orderId, orderIds).
//   - Compatible is the shape the public documentation of the service the
//     specification describes shows: the members of data stand at the top
//     level next to success ({"positions":[…],"count":n,"success":true}),
//     so code that reads resp["positions"] or resp["orderId"] runs
//     unchanged. GetWatermarks is the one route that service wraps itself:
//     {"success":true,"data":{…}} in both profiles.
//
// The two profiles differ only by the wrapper: the member names are the
// same. Errors are the same in both.
package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"tradebridge/protocol"
)

// Profile is a response profile.
type Profile string

// The profiles.
const (
	Standard   Profile = "standard"
	Compatible Profile = "compatible"
)

// All lists the profiles, the default first.
var All = []Profile{Standard, Compatible}

// ErrUnknown is returned by Parse for a name that is no profile.
var ErrUnknown = errors.New("profile: unknown response profile (want standard or compatible)")

// Parse returns the profile named s (any casing); "" is Standard.
func Parse(s string) (Profile, error) {
	if s == "" {
		return Standard, nil
	}
	for _, p := range All {
		if strings.EqualFold(s, string(p)) {
			return p, nil
		}
	}
	return "", ErrUnknown
}

// member is one top-level member of a success response besides success.
type member struct {
	Key   string
	Value json.RawMessage
}

// Reply is a success rendered for one profile: the members that stand next
// to "success" at the top level. The standard profile's reply is "data"
// and, for writes, the ids; the compatible profile's is the members of
// data.
type Reply struct {
	members []member
	// inline is a JSON object whose members follow members at the same
	// level: the compatible profile splices a record's members in without
	// decoding them.
	inline json.RawMessage
}

// Get returns the value of the member key written as a member of its
// own (not one spliced in from a record), or nil.
func (r Reply) Get(key string) json.RawMessage {
	for _, m := range r.members {
		if m.Key == key {
			return m.Value
		}
	}
	return nil
}

// Size is about the number of bytes AppendTo appends.
func (r Reply) Size() int {
	n := len(r.inline)
	for _, m := range r.members {
		n += len(m.Key) + len(m.Value) + 4
	}
	return n
}

// AppendTo appends the members as JSON object members (",\"key\":value"
// each, with a leading comma), for a writer that has already written
// {"success":true.
func (r Reply) AppendTo(b []byte) []byte {
	for _, m := range r.members {
		b = append(b, ',')
		b = appendKey(b, m.Key)
		b = append(b, m.Value...)
	}
	if inner := bytes.TrimSpace(r.inline); len(inner) >= 2 {
		if inner = bytes.TrimSpace(inner[1 : len(inner)-1]); len(inner) > 0 {
			b = append(b, ',')
			b = append(b, inner...)
		}
	}
	return b
}

func appendKey(b []byte, k string) []byte {
	enc, _ := json.Marshal(k)
	b = append(b, enc...)
	return append(b, ':')
}

// Render turns result, the agent's answer to fn, into the reply of profile
// p. result must be valid JSON, as the tunnel's decoder and the
// idempotency store deliver it. Render fails only when result is not the
// record fn returns, which is the agent's fault.
func Render(p Profile, fn string, result json.RawMessage) (Reply, error) {
	s, ok := shapes[fn]
	if !ok {
		return Reply{}, fmt.Errorf("profile: no shape for function %q", fn)
	}
	result = bytes.TrimSpace(result)
	compat := p == Compatible && !wrapped[fn]
	if s.List != "" {
		ms, err := listMembers(s.List, s.Count, result)
		if err != nil {
			return Reply{}, err
		}
		if compat {
			return Reply{members: ms}, nil
		}
		return Reply{members: []member{{Key: "data", Value: object(ms)}}}, nil
	}
	data, err := s.data(fn, result)
	if err != nil {
		return Reply{}, err
	}
	if compat {
		if err := noSuccessMember(data); err != nil {
			return Reply{}, err
		}
		return Reply{inline: data}, nil
	}
	r := Reply{members: []member{{Key: "data", Value: data}}}
	if f, _ := protocol.LookupFunction(fn); f.Write {
		r.members = append(r.members, ids(data)...)
	}
	return r, nil
}

// wrapped lists the functions whose compatible reply keeps data: the
// service wraps these itself.
var wrapped = map[string]bool{protocol.FnGetWatermarks: true}

// shape says how the agent's record for a function becomes data.
type shape struct {
	// List names the member that holds the agent's array; "" means the
	// record is already the data object.
	List string
	// Count adds the number of elements as "count".
	Count bool
	// Rename maps record members to the names bot authors read.
	Rename map[string]string
	// Transform rebuilds the record when renaming is not enough.
	Transform func(json.RawMessage) (json.RawMessage, error)
	// Type is the Go type of data, for the OpenAPI document.
	Type reflect.Type
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// shapes is the data of every public RPC function. A test checks that
// every public function has one.
var shapes = map[string]shape{
	protocol.FnListAccounts:           {List: "accounts", Type: typeOf[Accounts]()},
	protocol.FnGetAccountSummary:      {Transform: snapshot, Type: typeOf[Snapshot]()},
	protocol.FnGetAccount:             {Type: typeOf[protocol.Account]()},
	protocol.FnGetWatermarks:          {Type: typeOf[protocol.Watermarks]()},
	protocol.FnGetPosition:            {Type: typeOf[protocol.Position]()},
	protocol.FnListPositions:          {List: "positions", Count: true, Type: typeOf[Positions]()},
	protocol.FnGetAllPositions:        {List: "positions", Count: true, Type: typeOf[Positions]()},
	protocol.FnListOrders:             {List: "orders", Type: typeOf[Orders]()},
	protocol.FnGetAllOrders:           {List: "orders", Type: typeOf[Orders]()},
	protocol.FnGetOrder:               {Type: typeOf[protocol.Order]()},
	protocol.FnListExecutions:         {List: "executions", Type: typeOf[Executions]()},
	protocol.FnGetExecutionsByOrderID: {List: "executions", Type: typeOf[Executions]()},
	protocol.FnListStrategies:         {List: "strategies", Type: typeOf[Strategies]()},
	protocol.FnListAllStrategies:      {List: "strategies", Type: typeOf[Strategies]()},
	protocol.FnGetStrategy:            {Type: typeOf[protocol.Strategy]()},
	protocol.FnGetQuote:               {Transform: quotes, Type: typeOf[Quotes]()},
	protocol.FnGetAtmTemplates:        {List: "atmTemplates", Type: typeOf[AtmTemplates]()},
	protocol.FnMarketInfo:             {Type: typeOf[protocol.InstrumentInfo]()},
	protocol.FnGetBars:                {Type: typeOf[protocol.Bars]()},
	protocol.FnFlatten:                {Rename: flattenNames, Type: typeOf[Flattened]()},
	protocol.FnFlattenEverything:      {Rename: flattenNames, Type: typeOf[Flattened]()},
	protocol.FnCancelAllOrders:        {Rename: cancelNames, Type: typeOf[Cancelled]()},
	protocol.FnCancelOrders:           {Rename: cancelNames, Type: typeOf[Cancelled]()},
	protocol.FnClosePosition:          {Type: typeOf[protocol.PlaceResult]()},
	protocol.FnReverse:                {Type: typeOf[protocol.PlaceResult]()},
	protocol.FnReversePosition:        {Type: typeOf[protocol.PlaceResult]()},
	protocol.FnPlaceOrder:             {Type: typeOf[protocol.PlaceResult]()},
	protocol.FnFlatPlace:              {Type: typeOf[protocol.PlaceResult]()},
	protocol.FnCancelOrder:            {Type: typeOf[protocol.OrderResult]()},
	protocol.FnChangeOrder:            {Type: typeOf[protocol.OrderResult]()},
	protocol.FnCancelAndBracket:       {Type: typeOf[protocol.BracketResult]()},
	protocol.FnCancelReplace:          {Type: typeOf[protocol.PlaceResult]()},
	protocol.FnStartStrategy:          {Type: typeOf[protocol.Strategy]()},
	protocol.FnCloseStrategy:          {Type: typeOf[protocol.Strategy]()},
	protocol.FnEnableStrategy:         {Type: typeOf[protocol.Strategy]()},
	protocol.FnDisableStrategy:        {Type: typeOf[protocol.Strategy]()},
}

// Flatten's closed positions are closedPositions; its closing orders are
// orderIds, as the record already names them.
var flattenNames = map[string]string{"positions": "closedPositions"}

// The orders a cancel asked to cancel are its orderIds.
var cancelNames = map[string]string{"cancelledOrderIds": "orderIds"}

// DataType returns the Go type of fn's data in the standard profile (the
// members of the compatible profile's top level), for the OpenAPI
// document. ok is false for a function with no public shape.
func DataType(fn string) (t reflect.Type, ok bool) {
	s, ok := shapes[fn]
	return s.Type, ok
}

// Wrapped reports whether fn's compatible reply keeps the data member.
func Wrapped(fn string) bool { return wrapped[fn] }

// data returns the data object of a shape that is not a list.
func (s shape) data(fn string, result json.RawMessage) (json.RawMessage, error) {
	switch {
	case s.Transform != nil:
		return s.Transform(result)
	case s.Rename != nil:
		return rename(result, s.Rename)
	}
	if len(result) == 0 || result[0] != '{' {
		return nil, fmt.Errorf("profile: %s answered with something other than an object", fn)
	}
	return result, nil
}

// noSuccessMember refuses a record with a top-level "success" member,
// which, spliced in, would contradict the reply's own. No record has one;
// only a faulty agent's could.
func noSuccessMember(data json.RawMessage) error {
	if !bytes.Contains(data, []byte(`"success"`)) {
		return nil
	}
	ms, err := members(data)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Key == "success" {
			return errors.New("profile: the result has a success member")
		}
	}
	return nil
}

// listMembers names the array result under key, with its length as count.
func listMembers(key string, count bool, result json.RawMessage) ([]member, error) {
	n, err := countElements(result)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		result = json.RawMessage("[]") // also for null
	}
	ms := []member{{Key: key, Value: result}}
	if count {
		ms = append(ms, member{Key: "count", Value: strconv.AppendInt(nil, int64(n), 10)})
	}
	return ms, nil
}

// object writes members as one JSON object.
func object(ms []member) json.RawMessage {
	b := Reply{members: ms}.AppendTo([]byte{'{'})
	if len(b) > 1 {
		b = append(b[:1], b[2:]...) // the first member's leading comma
	}
	return append(b, '}')
}

// countElements returns the number of elements of a JSON array (null has
// none). arr must be valid JSON: the count is taken by scanning, without
// decoding, since a list of positions or orders is the relay's most common
// answer.
func countElements(arr []byte) (int, error) {
	if string(arr) == "null" {
		return 0, nil
	}
	if len(arr) < 2 || arr[0] != '[' || arr[len(arr)-1] != ']' {
		return 0, errors.New("profile: a list result is not an array")
	}
	n, depth, inString, escaped, empty := 0, 0, false, false, true
	for _, c := range arr[1 : len(arr)-1] {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			inString = true
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 0 {
				n++
			}
		}
		empty = false
	}
	if empty {
		return 0, nil
	}
	return n + 1, nil
}

// rename returns the object result with some members renamed, in the
// record's order.
func rename(result json.RawMessage, names map[string]string) (json.RawMessage, error) {
	ms, err := members(result)
	if err != nil {
		return nil, err
	}
	for i, m := range ms {
		if n, ok := names[m.Key]; ok {
			ms[i].Key = n
		}
	}
	return object(ms), nil
}

// members splits a JSON object into its members, in order.
func members(obj json.RawMessage) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("profile: the result is not a JSON object")
	}
	var r []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("profile: reading the result: %w", err)
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("profile: reading the result: %w", err)
		}
		r = append(r, member{Key: k, Value: v})
	}
	return r, nil
}

// ids returns a write's orderId and orderIds members, for the top level
// of the standard profile.
func ids(data json.RawMessage) []member {
	var v struct {
		OrderID  string          `json:"orderId"`
		OrderIDs json.RawMessage `json:"orderIds"`
	}
	if json.Unmarshal(data, &v) != nil {
		return nil
	}
	var r []member
	if v.OrderID != "" {
		enc, _ := json.Marshal(v.OrderID)
		r = append(r, member{Key: "orderId", Value: enc})
	}
	if len(v.OrderIDs) > 0 && !bytes.Equal(v.OrderIDs, []byte("null")) {
		r = append(r, member{Key: "orderIds", Value: v.OrderIDs})
	}
	return r
}

// Data objects of the functions whose record is not the data itself.

// Accounts is ListAccounts' data.
type Accounts struct {
	Accounts []protocol.Account `json:"accounts"`
}

// Positions is the data of ListPositions and GetAllPositions.
type Positions struct {
	Positions []protocol.Position `json:"positions"`
	Count     int                 `json:"count"`
}

// Orders is the data of ListOrders and GetAllOrders.
type Orders struct {
	Orders []protocol.Order `json:"orders"`
}

// Executions is the data of ListExecutions and GetExecutionsByOrderId.
type Executions struct {
	Executions []protocol.Execution `json:"executions"`
}

// Strategies is the data of ListStrategies and ListAllStrategies.
type Strategies struct {
	Strategies []protocol.Strategy `json:"strategies"`
}

// AtmTemplates is GetAtmTemplates' data.
type AtmTemplates struct {
	AtmTemplates []protocol.AtmTemplate `json:"atmTemplates"`
}

// Quotes is GetQuote's data: the requested contract's quote first, then,
// with showRollover, the next contract's.
type Quotes struct {
	Quotes []protocol.Quote `json:"quotes"`
}

// Flattened is the data of Flatten and FlattenEverything.
type Flattened struct {
	// ClosedPositions are the positions (or strategy-tag shares) closed,
	// as they stood before.
	ClosedPositions []protocol.Position `json:"closedPositions"`
	// OrderIDs are the closing orders placed.
	OrderIDs []string `json:"orderIds"`
	// CancelledOrderIDs are the working orders cancelled.
	CancelledOrderIDs []string `json:"cancelledOrderIds"`
}

// Cancelled is the data of CancelOrders and CancelAllOrders.
type Cancelled struct {
	// OrderIDs are the orders asked to cancel.
	OrderIDs []string `json:"orderIds"`
}

// Snapshot is GetAccountSummary's data: every account with its open
// positions and working orders, read at one moment.
type Snapshot struct {
	Type      string            `json:"type"` // always "snapshot"
	Timestamp string            `json:"timestamp"`
	Epoch     int64             `json:"epoch"`
	Accounts  []AccountSnapshot `json:"accounts"`
}

// AccountSnapshot is one account of a Snapshot.
type AccountSnapshot struct {
	Account   protocol.Account    `json:"account"`
	Positions []protocol.Position `json:"positions"`
	Orders    []protocol.Order    `json:"orders"`
}

func snapshot(result json.RawMessage) (json.RawMessage, error) {
	var sum protocol.AccountSummary
	if err := json.Unmarshal(result, &sum); err != nil {
		return nil, fmt.Errorf("profile: GetAccountSummary: %w", err)
	}
	s := Snapshot{Type: "snapshot", Timestamp: sum.Time, Epoch: sum.Epoch, Accounts: make([]AccountSnapshot, 0, len(sum.Accounts))}
	for _, a := range sum.Accounts {
		s.Accounts = append(s.Accounts, AccountSnapshot{Account: a.Account, Positions: nonNil(a.Positions), Orders: nonNil(a.Orders)})
	}
	return json.Marshal(s)
}

func quotes(result json.RawMessage) (json.RawMessage, error) {
	var q protocol.QuoteResult
	if err := json.Unmarshal(result, &q); err != nil {
		return nil, fmt.Errorf("profile: GetQuote: %w", err)
	}
	qs := Quotes{Quotes: []protocol.Quote{q.Quote}}
	if q.Rollover != nil {
		qs.Quotes = append(qs.Quotes, *q.Rollover)
	}
	return json.Marshal(qs)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
