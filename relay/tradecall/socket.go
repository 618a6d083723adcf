package tradecall

import (
	"bytes"
	"encoding/json"
	"net/http"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// The WebSocket form of RPC (package stream) calls the same functions as the
// HTTP routes, with the path parameters and the body fields (and the query
// parameters) together in one args object. PrepareSocketCall checks such an
// args object against the route table (Endpoints), so a call is refused
// for the same reasons, with the same codes and field errors, on either
// transport, and the agent receives the same typed arguments. A function
// that is not a public RPC function is refused 404 unknown_function.

// IdempotencyKeyField is the args field that carries a write's idempotency
// key over the WebSocket, where there are no headers. It plays the part of
// the Idempotency-Key header and is removed before the call.
const IdempotencyKeyField = "idempotencyKey"

// SocketCall is a checked call of the WebSocket form of RPC.
type SocketCall struct {
	// Fn is the function to call. It may differ from the api the caller
	// named, as the HTTP route does: Flatten with no filters is
	// FlattenEverything.
	Fn string
	// Args are the typed arguments to forward, defaults filled in.
	Args json.RawMessage
	// Write is true when Fn changes orders, positions or strategies.
	Write bool
	// Key is the write's idempotency key as the HTTP API spells it
	// ("key:<idempotencyKey>" or "order:<orderId>"), or "" when the write
	// has none. Its request id is "idem:"+Key on both transports, so a
	// write retried over either runs at most once on the agent.
	Key string
}

// PrepareSocketCall checks a WebSocket rpc frame's api and args. args must
// be a JSON object (or empty or null, meaning {}). The error, when not nil,
// carries the HTTP status the same request would get, a stable code and a
// fixed detail that never repeats what the caller sent.
func PrepareSocketCall(api string, args json.RawMessage) (SocketCall, *httpapi.Error) {
	f, ok := protocol.LookupFunction(api)
	if !ok || f.Internal {
		return SocketCall{}, unknownFunction()
	}
	return Desktop().prepare(api, args)
}

// prepare checks args against the routes of t that call api; a function
// no route calls directly (FlattenEverything) takes no arguments.
func (t *Table) prepare(api string, args json.RawMessage) (SocketCall, *httpapi.Error) {
	obj, e := argsObject(args)
	if e != nil {
		return SocketCall{}, e
	}
	key := ""
	if raw, ok := obj[IdempotencyKeyField]; ok {
		delete(obj, IdempotencyKeyField)
		var k string
		if !bytes.Equal(raw, []byte("null")) {
			if json.Unmarshal(raw, &k) != nil || !ValidKey(k) {
				return SocketCall{}, argsError(errcode.InvalidArgument, "idempotencyKey must be 1 to 255 visible ASCII characters",
					httpapi.FieldError{Path: IdempotencyKeyField, Code: errcode.FieldCodeStringPatternMismatch})
			}
			key = "key:" + k
		}
	}
	cands := t.byFn[api]
	if len(cands) == 0 {
		// A function no route calls directly (FlattenEverything) takes
		// no arguments.
		for name := range obj {
			return SocketCall{}, argsError(errcode.InvalidArgument, "args has a field this function does not take",
				httpapi.FieldError{Path: safeFieldName(name), Code: errcode.FieldCodeUnknownField})
		}
		return finishSocketCall(api, map[string]any{}, key, false)
	}
	var firstErr, lenientErr *httpapi.Error
	lenient := lenientEndpoint(cands)
	for _, ep := range cands {
		m, e := socketArgs(ep, obj)
		if e == nil {
			fn := ep.Fn
			if ep.Choose != nil {
				fn = ep.Choose(m)
			}
			return finishSocketCall(fn, m, key, ep.OrderIDKey)
		}
		if firstErr == nil {
			firstErr = e
		}
		if ep == lenient {
			lenientErr = e
		}
	}
	if lenientErr != nil {
		return SocketCall{}, lenientErr
	}
	return SocketCall{}, firstErr
}

// argsObject decodes an args object: a JSON object, or empty or null
// (meaning {}), strictly (no duplicate keys, bounded nesting).
func argsObject(args json.RawMessage) (map[string]json.RawMessage, *httpapi.Error) {
	obj := map[string]json.RawMessage{}
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		return obj, nil
	}
	if args[0] != '{' {
		return nil, argsError(errcode.InvalidArgument, "args must be a JSON object")
	}
	if err := httpapi.Validate(args, 0); err != nil {
		return nil, argsError(errcode.InvalidJSON, "args is not valid JSON, has duplicate keys or nests too deeply")
	}
	if err := json.Unmarshal(args, &obj); err != nil {
		return nil, argsError(errcode.InvalidArgument, "args must be a JSON object")
	}
	return obj, nil
}

// ParseArgs checks an args object against the parameters of one route
// that calls no trading function (the activity log's, a door's own
// reads) as Prepare checks a function's: typed, defaults filled in, the
// same codes and fields on refusal. args may be empty or null.
func ParseArgs(ep *Endpoint, args json.RawMessage) (map[string]any, *httpapi.Error) {
	obj, e := argsObject(args)
	if e != nil {
		return nil, e
	}
	return socketArgs(ep, obj)
}

func finishSocketCall(fn string, m map[string]any, key string, orderIDKey bool) (SocketCall, *httpapi.Error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return SocketCall{}, &httpapi.Error{Status: http.StatusInternalServerError, Code: errcode.InternalError, Detail: "the relay failed to encode the request"}
	}
	f, _ := protocol.LookupFunction(fn)
	c := SocketCall{Fn: fn, Args: raw, Write: f.Write}
	if f.Write {
		c.Key = key
		if c.Key == "" && orderIDKey {
			if id, ok := m["orderId"].(string); ok && id != "" {
				c.Key = "order:" + id
			}
		}
	}
	return c, nil
}

// socketArgs types obj's fields against ep's parameters, wherever they
// travel on HTTP, and completes them as parseArgs does. A query
// parameter may be sent typed (true, 320) or as the text HTTP would carry
// ("true", "320").
func socketArgs(ep *Endpoint, obj map[string]json.RawMessage) (map[string]any, *httpapi.Error) {
	args := make(map[string]any, len(obj))
	seen := make(map[string]bool, len(obj))
	for name, raw := range obj {
		p := ep.Param(name, InPath)
		if p == nil {
			p = ep.Param(name, InQuery)
		}
		if p == nil {
			p = ep.Param(name, InBody)
		}
		if p == nil {
			return nil, argsError(errcode.InvalidArgument, "args has a field this function does not take",
				httpapi.FieldError{Path: safeFieldName(name), Code: errcode.FieldCodeUnknownField})
		}
		if seen[p.Name] {
			return nil, argsError(errcode.InvalidArgument, "the field "+p.Name+" is sent twice under different names",
				httpapi.FieldError{Path: p.Name, Code: errcode.FieldCodeDuplicateField})
		}
		seen[p.Name] = true
		raw = bytes.TrimSpace(raw)
		if bytes.Equal(raw, []byte("null")) {
			continue
		}
		var v any
		var fe *httpapi.FieldError
		if p.In == InQuery && p.Type != TString && len(raw) > 0 && raw[0] == '"' {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return nil, argsError(errcode.InvalidArgument, "the field "+p.Name+" is not valid",
					httpapi.FieldError{Path: p.Name, Code: errcode.FieldCodeWrongType})
			}
			v, fe = typedText(p, s)
		} else {
			v, fe = typedJSON(p, raw)
		}
		if fe != nil {
			if code := fieldCode(p, fe); code != errcode.InvalidArgument {
				return nil, argsError(code, fieldDetail(p, fe), *fe)
			}
			return nil, argsError(errcode.InvalidArgument, "the field "+p.Name+" is not valid", *fe)
		}
		args[p.Name] = v
	}
	if e := completeArgs(ep, args); e != nil {
		return nil, e
	}
	return args, nil
}

// lenientEndpoint returns the candidate with the fewest required
// parameters: when every candidate refuses the args, its refusal is the one
// reported (GetQuote without instrument or root should say so, not ask
// for an account).
func lenientEndpoint(cands []*Endpoint) *Endpoint {
	var best *Endpoint
	bestN := -1
	for _, ep := range cands {
		n := 0
		for i := range ep.Params {
			if ep.Params[i].Required {
				n++
			}
		}
		if bestN < 0 || n < bestN {
			best, bestN = ep, n
		}
	}
	return best
}
