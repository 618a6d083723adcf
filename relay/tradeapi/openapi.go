package tradeapi

import (
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"tradebridge/relay/apischema"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/profile"
	"tradebridge/relay/tradecall"
)

// The machine-readable contracts, served without a token. Both OpenAPI
// documents are generated from the route table (endpoints.go), the Go
// types of each function's data (package profile) and the error codes of
// openapi_errors.go; the AsyncAPI document describes the stream socket's
// frames with the same schemas.
const (
	// OpenAPIPath serves the OpenAPI 3.1 document in the standard profile.
	OpenAPIPath = "/v1/api/openapi.json"
	// OpenAPICompatiblePath serves it in the compatible profile.
	OpenAPICompatiblePath = "/v1/api/openapi.compatible.json"
	// AsyncAPIPath serves the AsyncAPI 3.0 document of /ws/stream.
	AsyncAPIPath = "/v1/api/asyncapi.json"
)

// DocumentPaths lists the paths of the documents the desktop family's
// Register serves (the broker family's: BrokerDocumentPaths).
var DocumentPaths = []string{OpenAPIPath, OpenAPICompatiblePath, AsyncAPIPath}

// registerDocuments adds the documents to mux.
func registerDocuments(mux Mux) {
	mux.Handle("GET "+OpenAPIPath, serveDocument(func() any { return OpenAPIFor(profile.Standard) }))
	mux.Handle("GET "+OpenAPICompatiblePath, serveDocument(func() any { return OpenAPIFor(profile.Compatible) }))
	mux.Handle("GET "+AsyncAPIPath, serveDocument(func() any { return AsyncAPI() }))
}

// serveDocument serves the JSON encoding of build's document, built once.
func serveDocument(build func() any) http.Handler { return apischema.ServeDocument(build) }

type object = map[string]any

// OpenAPI returns the OpenAPI 3.1 document of the trading API in the
// standard profile.
func OpenAPI() map[string]any { return OpenAPIFor(profile.Standard) }

// OpenAPIFor returns the OpenAPI 3.1 document of the trading API whose
// success responses are those of profile p. It panics when the route
// table and the data types disagree, which tests catch.
func OpenAPIFor(p profile.Profile) map[string]any {
	doc, err := buildOpenAPI(desktopFamily, p)
	if err != nil {
		panic(err)
	}
	return doc
}

// docFamily is what one family's OpenAPI documents hold: its routes, the
// error codes each answers, and the documents' texts.
type docFamily struct {
	// family is FamilyDesktop or FamilyBroker: the schemas keep the fields
	// tagged with it (see apischema.Set).
	family    string
	endpoints []endpoint
	// codes lists, per status, the error codes an endpoint documents.
	codes func(ep *endpoint) map[int][]string
	// statuses say what each error status means.
	statuses map[int]string
	// title and compatibleTitle are the documents' titles, info their
	// description before the profile's, standard and compatible the
	// profiles' descriptions.
	title, compatibleTitle     string
	info, standard, compatible string
	// extra adds the routes described by hand (the broker family's link
	// routes, the desktop family's activity log and alert destinations), with their schemas, to
	// paths and schemas; nil adds none.
	extra func(f *docFamily, schemas, paths object) error
}

// desktopFamily is the desktop family's documents (/v1/api/openapi.json).
var desktopFamily = &docFamily{
	family:          FamilyDesktop,
	endpoints:       endpoints,
	codes:           errorCodes,
	statuses:        statusDescriptions,
	title:           "Trading API",
	compatibleTitle: "Trading API (compatible profile)",
	info:            infoDescription,
	standard:        standardDescription,
	compatible:      compatibleDescription,
	extra:           addOtherRoutes,
}

func buildOpenAPI(f *docFamily, p profile.Profile) (map[string]any, error) {
	set := apischema.New(f.family)
	responses := object{}
	paths := object{}
	for i := range f.endpoints {
		ep := &f.endpoints[i]
		item, _ := paths[ep.Path].(object)
		if item == nil {
			item = object{}
			paths[ep.Path] = item
		}
		success, err := successResponse(set, responses, p, ep)
		if err != nil {
			return nil, err
		}
		item[strings.ToLower(ep.Method)] = f.operation(ep, success)
	}
	schemas, err := set.Objects()
	if err != nil {
		return nil, err
	}
	schemas["Error"] = errorSchema()
	schemas["FieldError"] = fieldErrorSchema()
	for name, s := range responses {
		schemas[name] = s
	}
	if f.extra != nil {
		if err := f.extra(f, schemas, paths); err != nil {
			return nil, err
		}
	}
	title, profileDoc := f.title, f.standard
	if p == profile.Compatible {
		title, profileDoc = f.compatibleTitle, f.compatible
	}
	doc := object{
		"openapi": "3.1.0",
		"info": object{
			"title":       title,
			"version":     "1.0.0",
			"description": f.info + "\n\n" + profileDoc,
		},
		"servers": []any{object{
			"url":         "/",
			"description": "The relay's base URL (for example https://relay.example): every path is relative to the address the relay is reached at.",
		}},
		"security": []any{object{"bearer": []any{}}},
		"paths":    paths,
		"components": object{
			"securitySchemes": object{"bearer": object{"type": "http", "scheme": "bearer", "description": "API token (tb_api_…); its response profile and its scope are chosen when it is issued. " +
				"A read-scoped token reads every route and is refused every write with 403 insufficient_scope; writes need a trade-scoped token (the default)"}},
			"schemas": schemas,
		},
		"x-profile": string(p),
	}
	if f.family != FamilyDesktop {
		doc["x-family"] = f.family
	}
	return doc, nil
}

const infoDescription = "Trading calls forwarded to the user's agent next to the trading platform. " +
	"Errors are {success:false, error, detail, fields, retryAfter, policy, meta:{requestId}} in both profiles; " +
	"each operation lists, per status, the error codes it can answer (x-error-codes). " +
	"404 not_found and 405 method_not_allowed (with Allow) answer paths and methods outside this document. " +
	"Every admitted request is charged to the user's budget (180 per minute, burst 20, shared with the WebSocket API at /ws/stream, " +
	"described by the AsyncAPI document at /v1/api/asyncapi.json)."

const standardDescription = "Responses are shown in the standard profile, the default: {success:true, data:{…}}, " +
	"where data is always an object (lists are named: {positions:[…], count:n}); writes that place orders also carry " +
	"orderId or orderIds at the top level. Tokens issued with the compatible profile read the document at " +
	"/v1/api/openapi.compatible.json."

const compatibleDescription = "Responses are shown in the compatible profile: the members of data stand at the top level " +
	"next to success ({success:true, positions:[…], count:n}); GetWatermarks alone keeps {success:true, data:{…}}. " +
	"The member names are those of the standard profile (/v1/api/openapi.json); errors are the same."

var pathParamRE = regexp.MustCompile(`\{([A-Za-z]+)\}`)

// operationID names ep's operation; the example files carry the same name.
func operationID(ep *endpoint) string {
	s := strings.TrimPrefix(ep.Path, "/v1/api/")
	s = pathParamRE.ReplaceAllString(s, "by_$1")
	return ep.Fn + "_" + strings.NewReplacer("/", "_", "-", "_").Replace(s)
}

// operation is ep's operation in f's documents, whose 200 response is
// success.
func (f *docFamily) operation(ep *endpoint, success object) object {
	var params []any
	var body []param
	for _, p := range ep.Params {
		switch p.In {
		case inPath, inQuery:
			o := object{
				"name": p.Name, "in": p.In, "required": p.Required || p.In == inPath,
				"description": p.Doc, "schema": tradecall.ParamSchema(p, true),
			}
			if ex := paramExample(p, operationID(ep)); ex != nil {
				o["example"] = ex
			}
			params = append(params, o)
		case inBody:
			body = append(body, p)
		}
	}
	responses := object{"200": success}
	for st, list := range f.codes(ep) {
		responses[strconv.Itoa(st)] = errorResponse(f.statuses, st, list)
	}
	op := object{
		"operationId": operationID(ep),
		"summary":     ep.Summary,
		"x-rpc":       ep.Fn,
		"responses":   responses,
	}
	if len(ep.Alternatives) > 0 {
		var fns, notes []string
		for _, a := range ep.Alternatives {
			fns = append(fns, a.Fn)
			notes = append(notes, a.Summary+" ("+a.Fn+")")
		}
		op["x-rpc-alternatives"] = fns
		op["description"] = "With no body (or an empty object): " + strings.Join(notes, "; ") + "."
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if ep.Method == http.MethodPost {
		s := tradecall.ObjectSchema(body, ep.OneOf)
		_, req := s["required"]
		_, any1 := s["anyOf"]
		_, all := s["allOf"]
		op["requestBody"] = object{
			"required": req || any1 || all,
			"content":  object{"application/json": requestContent(s, operationID(ep))},
		}
		if isWrite(ep.Fn) {
			op["parameters"] = append(params, object{
				"name": IdempotencyKeyHeader, "in": "header", "required": false,
				"description": "repeat within 24 h returns the first response and runs nothing",
				"schema":      object{"type": "string", "minLength": 1, "maxLength": 255},
			})
		}
	}
	if len(ep.OneOf) > 0 {
		var groups []string
		for _, g := range ep.OneOf {
			groups = append(groups, strings.Join(g, " or "))
		}
		d, _ := op["description"].(string)
		op["description"] = strings.TrimSpace(d + " At least one of: " + strings.Join(groups, "; ") + ".")
	}
	return op
}

// successResponse is ep's 200 response in profile p. Its schema is a
// named component, <DataType>Response, added to responses.
func successResponse(set *apischema.Set, responses object, p profile.Profile, ep *endpoint) (object, error) {
	t, ok := profile.DataType(ep.Fn)
	if !ok || t == nil {
		return nil, fmt.Errorf("api: %s has no data type in package profile", ep.Fn)
	}
	dataName, err := set.Ref(t)
	if err != nil {
		return nil, err
	}
	name := dataName + "Response"
	write := isWrite(ep.Fn)
	if write {
		name = dataName + "WriteResponse"
	}
	if _, done := responses[name]; !done {
		responses[name] = envelope(p, ep.Fn, t, dataName, write, set.Family())
	}
	desc := "success"
	if write {
		desc = "success: the operation ran (Idempotent-Replayed: true when a repeat of a write returned its first response)"
	}
	content := object{"schema": ref(name)}
	if ex := example(p, operationID(ep)); ex != nil {
		content["examples"] = object{"simulator": object{
			"summary": "a real response of the simulator (recorded by the relay's end-to-end test)",
			"value":   ex,
		}}
	}
	headers := object{"RateLimit": header(hRateLimit, true), "RateLimit-Policy": header(hRateLimitPolicy, true)}
	if write {
		headers["Idempotent-Replayed"] = header(hIdempotentReplayed, false)
	}
	return object{
		"description": desc,
		"headers":     headers,
		"content":     object{"application/json": content},
	}, nil
}

// envelope is the schema of a success whose data is the component
// dataName, in profile p, in the documents of family.
func envelope(p profile.Profile, fn string, t reflect.Type, dataName string, write bool, family string) object {
	success := object{"type": "boolean", "const": true}
	if p == profile.Compatible && !profile.Wrapped(fn) {
		return object{
			"description": "the members of " + dataName + " at the top level, next to success",
			"allOf": []any{
				ref(dataName),
				object{"type": "object", "required": []string{"success"}, "properties": object{"success": success}},
			},
		}
	}
	props := object{"success": success, "data": ref(dataName)}
	required := []string{"success", "data"}
	if write && p == profile.Standard {
		fields := apischema.JSONFields(t, family)
		if _, ok := fields["orderId"]; ok {
			props["orderId"] = object{"type": "string", "description": "data.orderId, when an order was placed"}
		}
		if req, ok := fields["orderIds"]; ok {
			props["orderIds"] = object{"type": "array", "items": object{"type": "string"}, "description": "data.orderIds"}
			if req {
				required = append(required, "orderIds")
			}
		}
	}
	return object{"type": "object", "required": required, "properties": props}
}

// errorResponse documents status st answering one of codes; statuses say
// what each status means.
func errorResponse(statuses map[int]string, st int, codes []string) object {
	quoted := make([]string, len(codes))
	for i, c := range codes {
		quoted[i] = "`" + c + "`"
	}
	headers := object{"RateLimit": header(hRateLimit, false), "RateLimit-Policy": header(hRateLimitPolicy, false)}
	switch st {
	case http.StatusTooManyRequests:
		headers["Retry-After"] = header(hRetryAfter, true)
	case http.StatusServiceUnavailable:
		headers["Retry-After"] = header(hRetryAfter, false)
	case http.StatusForbidden:
		if slices.Contains(codes, errcode.InsufficientScope) {
			headers["WWW-Authenticate"] = header(hScopeChallenge, false)
		}
	}
	return object{
		"description":   statuses[st] + ". Codes: " + strings.Join(quoted, ", ") + ".",
		"x-error-codes": codes,
		"headers":       headers,
		"content": object{"application/json": object{"schema": object{
			"allOf": []any{
				ref("Error"),
				object{"properties": object{"error": object{"type": "string", "enum": codes}}},
			},
		}}},
	}
}

func errorSchema() object { return apischema.ErrorSchema() }

func fieldErrorSchema() object { return apischema.FieldErrorSchema() }

// Response headers.
const (
	hRateLimit = iota
	hRateLimitPolicy
	hRetryAfter
	hIdempotentReplayed
	hScopeChallenge
)

// header is a response header object; required says it is always sent.
func header(h int, required bool) object {
	var o object
	switch h {
	case hRateLimit:
		o = object{"description": `the user's remaining budget (IETF draft): "trading";r=17;t=3`, "schema": object{"type": "string"}}
	case hRateLimitPolicy:
		o = object{"description": `the budget (IETF draft): "trading";q=180;w=60`, "schema": object{"type": "string"}}
	case hRetryAfter:
		o = object{"description": "seconds to wait before retrying", "schema": object{"type": "integer", "minimum": 1}}
	case hScopeChallenge:
		o = object{"description": `with insufficient_scope, the scope needed (RFC 6750): Bearer error="insufficient_scope", scope="trade"`,
			"schema": object{"type": "string"}}
	case hIdempotentReplayed:
		o = object{"description": "true when the response is the stored first response of a repeated write", "schema": object{"type": "string", "enum": []string{"true"}}}
	}
	if required {
		o["required"] = true
	}
	return o
}

func isWrite(fn string) bool {
	f, _ := protocol.LookupFunction(fn)
	return f.Write
}

// addOtherRoutes adds, to the desktop family's document, the routes other
// packages serve: the activity log (relay/activity), the TradingView
// webhook (relay/webhook) and the Management API's alert destinations and
// kill switch (relay/manage).
func addOtherRoutes(f *docFamily, schemas, paths object) error {
	if err := addActivityRoute(f, schemas, paths); err != nil {
		return err
	}
	if err := addWebhookRoutes(f, schemas, paths); err != nil {
		return err
	}
	if err := addKillSwitchRoute(f, schemas, paths); err != nil {
		return err
	}
	return addAlertRoutes(f, schemas, paths)
}

func ref(name string) object { return apischema.Ref(name) }
