package tradecall

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// Table is a family's route table seen by function, as a door that calls
// functions rather than routes (the WebSocket form of RPC, the MCP tools)
// needs it: which functions there are, what each does, the JSON Schema of
// its arguments, and the check of a call's arguments against its routes.
// A Table is safe for concurrent use and must not be modified.
type Table struct {
	eps  []Endpoint
	fns  []string
	byFn map[string][]*Endpoint
	alts map[string]Alternative
}

// NewTable returns the table of routes eps (Endpoints, or a family's
// routes built from them).
func NewTable(eps []Endpoint) *Table {
	t := &Table{eps: slices.Clone(eps), byFn: map[string][]*Endpoint{}, alts: map[string]Alternative{}}
	seen := map[string]bool{}
	add := func(fn string) {
		if !seen[fn] {
			seen[fn] = true
			t.fns = append(t.fns, fn)
		}
	}
	for i := range t.eps {
		ep := &t.eps[i]
		t.byFn[ep.Fn] = append(t.byFn[ep.Fn], ep)
		add(ep.Fn)
		for _, a := range ep.Alternatives {
			if _, ok := t.alts[a.Fn]; !ok {
				t.alts[a.Fn] = a
			}
			add(a.Fn)
		}
	}
	for fn := range t.alts {
		if t.byFn[fn] != nil {
			// A function some route calls directly is described by its
			// routes.
			delete(t.alts, fn)
		}
	}
	return t
}

var desktop = sync.OnceValue(func() *Table { return NewTable(endpoints) })

// Desktop returns the table of the desktop family's routes (Endpoints),
// built once.
func Desktop() *Table { return desktop() }

// Functions returns the table's functions: each route's function in table
// order, each route's alternatives right after the first route that
// names them, no function twice.
func (t *Table) Functions() []string { return slices.Clone(t.fns) }

// has reports whether fn is one of t's functions.
func (t *Table) has(fn string) bool {
	_, alt := t.alts[fn]
	return alt || t.byFn[fn] != nil
}

// Routes returns the routes that call fn, in table order; nil for an
// alternative or a function the table does not have. Callers must not
// modify them.
func (t *Table) Routes(fn string) []*Endpoint { return slices.Clone(t.byFn[fn]) }

// Write reports whether fn changes orders, positions or strategies
// (protocol.Function.Write).
func (t *Table) Write(fn string) bool {
	f, _ := protocol.LookupFunction(fn)
	return f.Write
}

// Describe returns what fn does, in sentences: its first route's summary,
// then the groups of arguments of which at least one must be sent and,
// when a route may call another function, what it does with no
// arguments. An alternative's description is its summary. "" for a
// function the table does not have.
func (t *Table) Describe(fn string) string {
	if a, ok := t.alts[fn]; ok {
		return sentence(a.Summary)
	}
	routes := t.byFn[fn]
	if len(routes) == 0 {
		return ""
	}
	parts := []string{sentence(routes[0].Summary)}
	if groups := sharedOneOf(routes); len(groups) > 0 {
		names := make([]string, len(groups))
		for i, g := range groups {
			names[i] = strings.Join(g, " or ")
		}
		parts = append(parts, "At least one of: "+strings.Join(names, "; ")+".")
	}
	var alts []string
	for _, ep := range routes {
		for _, a := range ep.Alternatives {
			alts = append(alts, a.Summary+" ("+a.Fn+")")
		}
	}
	if len(alts) > 0 {
		parts = append(parts, "With no arguments: "+strings.Join(alts, "; ")+".")
	}
	return strings.Join(parts, " ")
}

// sentence returns s ending with a period.
func sentence(s string) string {
	if s == "" || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}

// sharedOneOf returns the OneOf groups every one of routes has, in the
// first route's order.
func sharedOneOf(routes []*Endpoint) [][]string {
	var out [][]string
	for _, g := range routes[0].OneOf {
		every := true
		for _, ep := range routes[1:] {
			if !slices.ContainsFunc(ep.OneOf, func(h []string) bool { return slices.Equal(g, h) }) {
				every = false
				break
			}
		}
		if every {
			out = append(out, g)
		}
	}
	return out
}

// idempotencyKeySchema is the schema of IdempotencyKeyField.
func idempotencyKeySchema() map[string]any {
	return map[string]any{
		"type": "string", "minLength": 1, "maxLength": 255, "pattern": `^[\x21-\x7e]+$`,
		"description": "a key of your own: a repeat within 24 h answers the first outcome and runs nothing",
	}
}

// ArgsSchema returns the JSON Schema (draft 2020-12) of fn's arguments in
// the form Prepare takes: one object of the path, query and body
// parameters of fn's routes together, typed as JSON (ParamSchema(p,
// false)). A parameter is described by the first route that takes it and
// required when every route requires it; the groups of OneOf every route
// has are the schema's anyOf (see ObjectSchema); no other property is
// allowed. A write function also takes IdempotencyKeyField. An
// alternative takes no arguments but that key. nil for a function the
// table does not have.
func (t *Table) ArgsSchema(fn string) map[string]any {
	if !t.has(fn) {
		return nil
	}
	var s map[string]any
	if routes := t.byFn[fn]; len(routes) > 0 {
		var params []Param
		index := map[string]int{}
		for _, ep := range routes {
			for _, p := range ep.Params {
				if _, ok := index[p.Name]; ok {
					continue
				}
				index[p.Name] = len(params)
				params = append(params, p)
			}
		}
		// Required where every route requires it.
		for i := range params {
			for _, ep := range routes {
				if q := paramNamed(ep, params[i].Name); q == nil || !q.Required {
					params[i].Required = false
				}
			}
		}
		s = ObjectSchema(params, sharedOneOf(routes))
	} else {
		s = ObjectSchema(nil, nil)
	}
	if t.Write(fn) {
		s["properties"].(map[string]any)[IdempotencyKeyField] = idempotencyKeySchema()
	}
	return s
}

// paramNamed returns ep's parameter name wherever it travels, or nil.
func paramNamed(ep *Endpoint, name string) *Param {
	for i := range ep.Params {
		if ep.Params[i].Name == name {
			return &ep.Params[i]
		}
	}
	return nil
}

// Prepare checks a call of fn, by name api, with args, an object of its
// arguments in the form ArgsSchema describes, as PrepareSocketCall does
// over the desktop family's routes: a function not among t.Functions() is
// refused 404 unknown_function, an alternative takes no arguments but
// IdempotencyKeyField.
func (t *Table) Prepare(api string, args json.RawMessage) (SocketCall, *httpapi.Error) {
	if !t.has(api) {
		return SocketCall{}, unknownFunction()
	}
	return t.prepare(api, args)
}

func unknownFunction() *httpapi.Error {
	return &httpapi.Error{Status: http.StatusNotFound, Code: errcode.UnknownFunction,
		Detail: "api must name a public RPC function of the trading API"}
}
