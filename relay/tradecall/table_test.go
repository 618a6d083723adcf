package tradecall_test

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/tradeapi"
	"tradebridge/relay/tradecall"
)

// compileSchema compiles s as a JSON Schema (draft 2020-12), through its
// JSON encoding, as a client of the schema reads it.
func compileSchema(t *testing.T, name string, s map[string]any) *jsonschema.Schema {
	t.Helper()
	raw, err := json.Marshal(s)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "mem://" + name + ".json"
	require.NoError(t, c.AddResource(url, doc))
	sch, err := c.Compile(url)
	require.NoError(t, err, "%s: the schema compiles", name)
	return sch
}

// validate reports whether sch accepts args (JSON).
func validate(t *testing.T, sch *jsonschema.Schema, args string) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
	require.NoError(t, err)
	return sch.Validate(v)
}

// The desktop table's functions are the route table's, each once, in
// table order, FlattenEverything right after Flatten.
func TestTableFunctions(t *testing.T) {
	t.Parallel()
	tab := tradecall.Desktop()
	fns := tab.Functions()
	var want []string
	for _, ep := range tradecall.Endpoints() {
		if !slices.Contains(want, ep.Fn) {
			want = append(want, ep.Fn)
		}
		if ep.Fn == protocol.FnFlatten && !slices.Contains(want, protocol.FnFlattenEverything) {
			want = append(want, protocol.FnFlattenEverything)
		}
	}
	require.Equal(t, want, fns)
	require.Equal(t, protocol.FnListAccounts, fns[0])
	i := slices.Index(fns, protocol.FnFlatten)
	require.Equal(t, protocol.FnFlattenEverything, fns[i+1])

	for _, tc := range []struct {
		fn     string
		routes []string
		write  bool
	}{
		{protocol.FnGetQuote, []string{"/v1/api/accounts/{account}/quote", "/v1/api/market/quote"}, false},
		{protocol.FnFlatten, []string{"/v1/api/positions/flatten", "/v1/api/accounts/{account}/positions/flatten"}, true},
		{protocol.FnFlattenEverything, nil, true},
		{protocol.FnPlaceOrder, []string{"/v1/api/accounts/{account}/orders/place"}, true},
		{"Nope", nil, false},
	} {
		var paths []string
		for _, ep := range tab.Routes(tc.fn) {
			paths = append(paths, ep.Path)
		}
		require.Equal(t, tc.routes, paths, tc.fn)
		require.Equal(t, tc.write, tab.Write(tc.fn), tc.fn)
	}
}

func TestTableDescribe(t *testing.T) {
	t.Parallel()
	tab := tradecall.Desktop()
	for _, tc := range []struct{ fn, want string }{
		{protocol.FnPlaceOrder, "Place an order."},
		{protocol.FnGetQuote, "Quote. At least one of: instrument or root."},
		{protocol.FnChangeOrder, "Change one order's quantity or prices. At least one of: quantity or limitPrice or stopPrice."},
		{protocol.FnFlatten, "Flatten positions; with no filters, everything. With no arguments: Flatten every position and cancel every working order of every account (FlattenEverything)."},
		{protocol.FnFlattenEverything, "Flatten every position and cancel every working order of every account."},
		{"Nope", ""},
	} {
		require.Equal(t, tc.want, tab.Describe(tc.fn), tc.fn)
	}
	for _, fn := range tab.Functions() {
		require.True(t, strings.HasSuffix(tab.Describe(fn), "."), fn)
	}
}

// Every function's argument schema is valid JSON Schema, accepts the
// requests the simulator accepted in the contract test (the OpenAPI
// documents' examples), which Prepare accepts too, and refuses what the
// relay refuses.
func TestTableArgsSchema(t *testing.T) {
	t.Parallel()
	tab := tradecall.Desktop()
	schemas := map[string]*jsonschema.Schema{}
	for _, fn := range tab.Functions() {
		s := tab.ArgsSchema(fn)
		require.NotNil(t, s, fn)
		require.Equal(t, false, s["additionalProperties"], fn)
		_, keyed := s["properties"].(map[string]any)[tradecall.IdempotencyKeyField]
		require.Equal(t, tab.Write(fn), keyed, "%s: a write takes %s", fn, tradecall.IdempotencyKeyField)
		schemas[fn] = compileSchema(t, fn, s)
	}
	require.Nil(t, tab.ArgsSchema("Nope"))

	fns := tradeapi.OperationFunctions()
	ops := make([]string, 0, len(fns))
	for op := range fns {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		args, ok := tradeapi.RequestExampleArgs(op)
		require.True(t, ok, "%s has a recorded request", op)
		raw, err := json.Marshal(args)
		require.NoError(t, err)
		require.NoError(t, validate(t, schemas[fns[op]], string(raw)), "%s: %s", op, raw)
		_, e := tab.Prepare(fns[op], raw)
		require.Nil(t, e, "%s: %s", op, raw)
	}

	// The relay accepts what the schema refuses: a read's key is ignored.
	lenient := map[string]bool{"a read takes no key (the relay ignores it)": true}
	const place = `"account":"Sim101","action":"Buy","instrument":"ES 12-26","orderType":"Market","timeInForce":"Day"`
	for _, tc := range []struct {
		name, fn, args string
		ok             bool
	}{
		{"a place", protocol.FnPlaceOrder, `{` + place + `,"quantity":1,"idempotencyKey":"k-1"}`, true},
		{"quantity 0", protocol.FnPlaceOrder, `{` + place + `,"quantity":0}`, false},
		{"quantity above the range", protocol.FnPlaceOrder, `{` + place + `,"quantity":10001}`, false},
		{"quantity not whole", protocol.FnPlaceOrder, `{` + place + `,"quantity":1.5}`, false},
		{"a bad enum", protocol.FnPlaceOrder, `{"account":"Sim101","action":"Hold","instrument":"ES","orderType":"Market","timeInForce":"Day","quantity":1}`, false},
		{"an unknown field", protocol.FnPlaceOrder, `{` + place + `,"quantity":1,"bogus":1}`, false},
		{"a required field missing", protocol.FnPlaceOrder, `{"account":"Sim101","action":"Buy","instrument":"ES","orderType":"Market","timeInForce":"Day"}`, false},
		{"a key with a space", protocol.FnPlaceOrder, `{` + place + `,"quantity":1,"idempotencyKey":"a b"}`, false},
		{"an empty key", protocol.FnPlaceOrder, `{` + place + `,"quantity":1,"idempotencyKey":""}`, false},
		{"a read takes no key (the relay ignores it)", protocol.FnListAccounts, `{"idempotencyKey":"k"}`, false},
		{"either route of GetQuote", protocol.FnGetQuote, `{"root":"ES"}`, true},
		{"GetQuote needs instrument or root", protocol.FnGetQuote, `{"account":"Sim101"}`, false},
		{"query parameters typed", protocol.FnListOrders, `{"account":"Sim101","activeOnly":false,"lookbackTime":60}`, true},
		{"lookbackTime above the range", protocol.FnListOrders, `{"account":"Sim101","lookbackTime":901}`, false},
		{"Flatten with no arguments", protocol.FnFlatten, `{}`, true},
		{"an alternative takes a key", protocol.FnFlattenEverything, `{"idempotencyKey":"k"}`, true},
		{"an alternative takes no arguments", protocol.FnFlattenEverything, `{"account":"Sim101"}`, false},
		{"an alias", protocol.FnStartStrategy, `{"account":"Sim101","strategy_class":"S","instrument":"ES"}`, true},
		{"the aliased field missing", protocol.FnStartStrategy, `{"account":"Sim101","instrument":"ES"}`, false},
	} {
		err := validate(t, schemas[tc.fn], tc.args)
		if tc.ok {
			require.NoError(t, err, tc.name)
		} else {
			require.Error(t, err, tc.name)
		}
		// The relay agrees with the schema.
		_, e := tab.Prepare(tc.fn, json.RawMessage(tc.args))
		require.Equal(t, tc.ok || lenient[tc.name], e == nil, "%s: Prepare answered %v", tc.name, e)
	}
}

func TestTablePrepare(t *testing.T) {
	t.Parallel()
	tab := tradecall.Desktop()
	for _, tc := range []struct {
		name, api, args string
		fn, key, code   string
		status          int
	}{
		{"a read", protocol.FnListAccounts, ``, protocol.FnListAccounts, "", "", 0},
		{"Flatten with no filters", protocol.FnFlatten, `{}`, protocol.FnFlattenEverything, "", "", 0},
		{"Flatten with a filter", protocol.FnFlatten, `{"account":"Sim101"}`, protocol.FnFlatten, "", "", 0},
		{"an alternative", protocol.FnFlattenEverything, `{"idempotencyKey":"k"}`, protocol.FnFlattenEverything, "key:k", "", 0},
		{"an alternative's arguments", protocol.FnFlattenEverything, `{"account":"Sim101"}`, "", "", errcode.InvalidArgument, 400},
		{"an unknown function", "Nope", `{}`, "", "", errcode.UnknownFunction, 404},
		{"an internal function", protocol.FnGetPnl, `{}`, "", "", errcode.UnknownFunction, 404},
		{"orderId as the key", protocol.FnPlaceOrder, `{"account":"A","action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day","orderId":"o-1"}`,
			protocol.FnPlaceOrder, "order:o-1", "", 0},
	} {
		c, e := tab.Prepare(tc.api, json.RawMessage(tc.args))
		if tc.code != "" {
			require.NotNil(t, e, tc.name)
			require.Equal(t, tc.code, e.Code, tc.name)
			require.Equal(t, tc.status, e.Status, tc.name)
			continue
		}
		require.Nil(t, e, tc.name)
		require.Equal(t, tc.fn, c.Fn, tc.name)
		require.Equal(t, tc.key, c.Key, tc.name)
		require.Equal(t, tab.Write(tc.fn), c.Write, tc.name)
	}
}

// A route added to a table is a function of it, described, with its
// arguments' schema, and callable, with nothing else to change.
func TestTableNewRoute(t *testing.T) {
	t.Parallel()
	eps := append(slices.Clone(tradecall.Endpoints()), tradecall.Endpoint{
		Method: "GET", Path: "/v1/api/widgets", Fn: "ListWidgets", Summary: "Widgets of the account",
		Params: []tradecall.Param{{Name: "account", In: tradecall.InQuery, Type: tradecall.TString, Required: true, Max: 64, Doc: "account name"}},
	})
	tab := tradecall.NewTable(eps)
	require.Equal(t, "ListWidgets", tab.Functions()[len(tab.Functions())-1])
	require.Equal(t, "Widgets of the account.", tab.Describe("ListWidgets"))
	s := tab.ArgsSchema("ListWidgets")
	require.Equal(t, []string{"account"}, s["required"])
	sch := compileSchema(t, "ListWidgets", s)
	require.NoError(t, validate(t, sch, `{"account":"Sim101"}`))
	require.Error(t, validate(t, sch, `{}`))
	c, e := tab.Prepare("ListWidgets", json.RawMessage(`{"account":"Sim101"}`))
	require.Nil(t, e)
	require.JSONEq(t, `{"account":"Sim101"}`, string(c.Args))
	// The desktop table does not have it.
	_, e = tradecall.Desktop().Prepare("ListWidgets", nil)
	require.Equal(t, errcode.UnknownFunction, e.Code)
}
