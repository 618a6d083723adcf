package manage

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"tradebridge/relay/apischema"
	"tradebridge/relay/errcode"
)

// The Management API's OpenAPI 3.1 document, served without a token at
// OpenAPIPath. It is built from the route registry (routes), each kind's
// Go type and rules (Kind: read-only, immutable and required fields) with
// the schema generator the trading API's documents use (relay/apischema),
// the descriptions and examples of openapi_kinds.go, and the error codes
// of routeCodes. A route without a description fails the build, which the
// tests catch.

// OpenAPIPath serves the Management API's OpenAPI document.
const OpenAPIPath = Prefix + "/openapi.json"

// OpenAPI returns the Management API's OpenAPI 3.1 document. It panics
// when a route or kind has no description, which tests catch.
func OpenAPI() map[string]any {
	doc, err := buildOpenAPI(routes())
	if err != nil {
		panic(err)
	}
	return doc
}

type object = map[string]any

// docBuild holds the document being built.
type docBuild struct {
	set     *apischema.Set
	schemas object
	paths   object
	// typeOf maps each kind's name to its component's name.
	typeOf map[string]string
}

func buildOpenAPI(rts []*route) (map[string]any, error) {
	b := &docBuild{set: apischema.New(FamilyDesktop), paths: object{}, typeOf: map[string]string{}}
	infos := map[string]KindInfo{}
	for _, k := range kinds() {
		info := k.info()
		if _, ok := kindDocs[info.Name]; !ok {
			return nil, fmt.Errorf("manage: the kind %s has no description in openapi_kinds.go", info.Name)
		}
		name, err := b.set.Ref(info.Type)
		if err != nil {
			return nil, err
		}
		b.typeOf[info.Name] = name
		infos[info.Name] = info
	}
	for _, t := range []reflect.Type{reflect.TypeFor[Limits](), reflect.TypeFor[Deleted](), reflect.TypeFor[AlertTestAccepted]()} {
		if _, err := b.set.Ref(t); err != nil {
			return nil, err
		}
	}
	schemas, err := b.set.Objects()
	if err != nil {
		return nil, err
	}
	b.schemas = schemas
	for _, info := range infos {
		if err := b.kindSchemas(info); err != nil {
			return nil, err
		}
	}
	b.commonSchemas()
	for _, rt := range rts {
		op, err := b.operation(rt, infos)
		if err != nil {
			return nil, err
		}
		p := Prefix
		if rt.path != "" {
			p += "/" + rt.path
		}
		item, _ := b.paths[p].(object)
		if item == nil {
			item = object{}
			b.paths[p] = item
		}
		item[strings.ToLower(rt.method)] = op
	}
	var tags []any
	for _, k := range kinds() {
		d := kindDocs[k.name()]
		if slices.ContainsFunc(tags, func(t any) bool { return t.(object)["name"] == d.tag }) {
			continue
		}
		tags = append(tags, object{"name": d.tag, "description": d.tagDoc})
	}
	tags = append(tags, object{"name": "limits", "description": "The Management API's budgets."})
	return object{
		"openapi": "3.1.0",
		"info": object{
			"title":       "Management API",
			"version":     "1.0.0",
			"description": infoDescription,
		},
		"servers": []any{object{
			"url":         "/",
			"description": "The relay's base URL (for example https://relay.example): every path is relative to the address the relay is reached at.",
		}},
		"security": []any{object{"bearer": []any{}}},
		"tags":     tags,
		"paths":    b.paths,
		"components": object{
			"securitySchemes": object{"bearer": object{"type": "http", "scheme": "bearer",
				"description": "API token (tb_api_…) of a user on the elite plan. A read-scoped token reads every route and is refused every change with 403 insufficient_scope."}},
			"schemas": b.schemas,
		},
	}, nil
}

const infoDescription = "The copiers, monitors, account groups, ATM templates, controls and kill switch, news lockout, connection settings " +
	"and alert destinations of a user on the elite plan, which the agent next to the trading platform (the desktop family, /desktop/…) " +
	"or the relay's own engines on a linked broker login (the broker family, /tv/…) act on. " +
	"Every answer is {success:true, data, meta:{etag}} for one resource (the ETag header carries the same tag), {success:true, data:[…]} for a list; " +
	"a change also says whether it changed anything (changed). " +
	"Bodies are strict: an unknown field, a field of the wrong type or a value out of range is 422 validation_failed with every field at fault in fields; " +
	"a read-only field (id, createdAt, updatedAt, a resource's state) is refused on create (422 field_read_only), and ignored on PATCH and PUT " +
	"when equal to the stored value, so a resource read can be sent back. " +
	"If-Match is optional (no route answers 428): when sent, a change applies only if one of its tags is the resource's current ETag, " +
	"else 412 precondition_failed with the current ETag. Two changes at once: 409 concurrent_modification with retryAfter. " +
	"A change the agent acts on is pushed to it and acknowledged before the answer (409 addon_disconnected when it is offline). " +
	"Errors are {success:false, error, detail, fields, retryAfter, policy, meta:{requestId}}; each operation lists, per status, " +
	"the codes it can answer (x-error-codes). 404 not_found and 405 method_not_allowed (with Allow) answer paths and methods outside this document. " +
	"Budgets: GET /v1/api/manage; 429 rate_limited names the policy, with Retry-After."

// kindSchemas adds the request bodies of a kind: <Type>Create for a
// collection, <Type>Patch, and <Type>Put for a singleton that takes PUT.
// They are the resource's schema without the fields callers never set,
// with every nested field optional (a body is merged onto the stored
// resource, or the defaults).
func (b *docBuild) kindSchemas(info KindInfo) error {
	name := b.typeOf[info.Name]
	d := kindDocs[info.Name]
	res, ok := b.schemas[name].(object)
	if !ok {
		return fmt.Errorf("manage: no schema for %s", name)
	}
	props, _ := res["properties"].(object)
	for _, f := range append(slices.Clone(info.NotApplicable), d.hidden...) {
		delete(props, f)
	}
	if req, ok := res["required"].([]any); ok {
		res["required"] = slices.DeleteFunc(req, func(v any) bool { _, ok := props[v.(string)]; return !ok })
	}
	res["description"] = d.resource
	for f, s := range d.fields {
		p, ok := props[f].(object)
		if !ok {
			return fmt.Errorf("manage: %s has no field %s", name, f)
		}
		for k, v := range s {
			p[k] = v
		}
	}
	if d.example != "" {
		ex, err := d.resourceExample(info)
		if err != nil {
			return err
		}
		res["examples"] = []any{ex}
	}
	readOnly := info.ReadOnly
	if !info.Singleton {
		in := b.input(info, props, readOnly, nil)
		in["description"] = "A new " + d.noun + ": the fields not sent take their defaults."
		in["required"] = info.Required
		if d.create != "" {
			in["examples"] = []any{mustJSON(d.create)}
		}
		b.schemas[name+"Create"] = in
	}
	patch := b.input(info, props, nil, readOnly)
	patch["description"] = "The fields to change of the " + d.noun + "; the others keep their values. " +
		"A read-only or immutable field is accepted only when equal to the stored value."
	if d.patch != "" {
		patch["examples"] = []any{mustJSON(d.patch)}
	}
	for _, f := range info.Immutable {
		if p, ok := patch["properties"].(object)[f].(object); ok {
			p["description"] = "set only at creation: accepted only when equal to the stored value"
		}
	}
	b.schemas[name+"Patch"] = patch
	if putSingletons[info.Name] {
		put := b.input(info, props, readOnly, nil)
		put["description"] = "The whole " + d.noun + ": the fields not sent take their defaults."
		if d.patch != "" {
			put["examples"] = []any{mustJSON(d.patch)}
		}
		b.schemas[name+"Put"] = put
	}
	return nil
}

// input is a request body's schema over the resource's properties: those
// of drop left out, those of readOnly marked so.
func (b *docBuild) input(info KindInfo, props object, drop, readOnly []string) object {
	in := object{}
	for f, p := range props {
		if slices.Contains(drop, f) {
			continue
		}
		s := b.partial(p, 0)
		if slices.Contains(readOnly, f) {
			s["description"] = "read-only: accepted only when equal to the stored value"
		}
		in[f] = s
	}
	for _, f := range kindDocs[info.Name].writeOnly {
		if s, ok := in[f].(object); ok {
			s["writeOnly"] = true
		}
	}
	return object{"type": "object", "additionalProperties": false, "properties": in}
}

// partial returns a copy of schema v with its references resolved and no
// required fields at any depth: a body's nested objects are merged onto
// the stored ones, so any of their fields may be left out.
func (b *docBuild) partial(v any, depth int) object {
	src, _ := v.(object)
	if r, ok := src["$ref"].(string); ok && depth < 8 {
		src, _ = b.schemas[strings.TrimPrefix(r, apischema.ComponentPrefix)].(object)
	}
	out := object{}
	for k, x := range src {
		switch k {
		case "required", "examples":
		case "properties":
			ps := object{}
			for n, p := range x.(object) {
				ps[n] = b.partial(p, depth+1)
			}
			out[k] = ps
		case "items", "additionalProperties":
			if o, ok := x.(object); ok {
				out[k] = b.partial(o, depth+1)
			} else {
				out[k] = x
			}
		default:
			out[k] = x
		}
	}
	if _, ok := out["properties"]; ok {
		// Bodies are strict at every depth: an unknown field is refused.
		out["additionalProperties"] = false
	}
	return out
}

// commonSchemas adds the error body and the answers' envelopes.
func (b *docBuild) commonSchemas() {
	b.schemas["Error"] = apischema.ErrorSchema()
	b.schemas["FieldError"] = apischema.FieldErrorSchema()
	b.schemas["ResourceMeta"] = object{"type": "object", "required": []string{"etag"}, "properties": object{
		"etag": object{"type": "string", "pattern": `^"[0-9]+"$`, "description": "the resource's ETag, also in the ETag header: send it back in If-Match"},
	}}
	b.schemas["KillSwitchChange"] = object{"type": "object", "additionalProperties": false, "required": []string{"enabled"},
		"properties": object{
			"enabled": object{"type": "boolean", "description": "true turns the kill switch on, false off"},
			"flattenOnKill": object{"type": "boolean",
				"description": "when sent, sets the controls' flattenOnKill in the same change: the switch turning on flattens every account"},
		},
		"examples": []any{object{"enabled": true, "flattenOnKill": true}}}
	b.schemas["EmptyBody"] = object{"type": "object", "additionalProperties": false, "maxProperties": 0,
		"description": "an action takes no body, or an empty object"}
}

// envelope is an answer's schema: data of schema data, and the members
// of top beside it (required).
func envelope(data any, top object) object {
	props := object{"success": object{"type": "boolean", "const": true}, "data": data}
	required := []string{"success", "data"}
	for k, v := range top {
		props[k] = v
		required = append(required, k)
	}
	sort.Strings(required)
	return object{"type": "object", "required": required, "properties": props}
}

var (
	changedMember = object{"type": "boolean", "description": "false when the change left the resource as it was (nothing stored)"}
	metaMember    = apischema.Ref("ResourceMeta")
	etagHeader    = object{"description": `the resource's ETag (its version, quoted: "3")`, "required": true, "schema": object{"type": "string"}}
)

// operation is rt's operation.
func (b *docBuild) operation(rt *route, infos map[string]KindInfo) (object, error) {
	if rt.op == routeLimits {
		return b.finish(rt, object{
			"operationId": "GetLimits",
			"summary":     "Read the Management API's budgets",
			"tags":        []string{"limits"},
		}, http.StatusOK, envelope(apischema.Ref("Limits"), nil), false, "")
	}
	d, ok := kindDocs[rt.kind.name()]
	if !ok {
		return nil, fmt.Errorf("manage: %s has no description", rt.pattern())
	}
	info := infos[rt.kind.name()]
	typ := b.typeOf[info.Name]
	res := apischema.Ref(typ)
	one := envelope(res, object{"meta": metaMember})
	changed := envelope(res, object{"meta": metaMember, "changed": changedMember})
	op := object{"tags": []string{d.tag}}
	var status int
	var body object
	var reqSchema string
	switch rt.op {
	case routeList:
		op["operationId"], op["summary"] = "List"+d.plural, "List the "+d.nouns
		status, body = http.StatusOK, envelope(object{"type": "array", "items": res}, nil)
	case routeCreate:
		op["operationId"], op["summary"] = "Create"+d.name, "Create a "+d.noun
		status, body, reqSchema = http.StatusCreated, changed, typ+"Create"
	case routeGet:
		op["operationId"], op["summary"] = "Get"+d.name, "Read the "+d.noun
		status, body = http.StatusOK, one
	case routePatch:
		op["operationId"], op["summary"] = "Change"+d.name, "Change fields of the "+d.noun
		status, body, reqSchema = http.StatusOK, changed, typ+"Patch"
	case routePut:
		op["operationId"], op["summary"] = "Replace"+d.name, "Replace the "+d.noun+" whole"
		status, body, reqSchema = http.StatusOK, changed, typ+"Put"
	case routeDelete:
		op["operationId"], op["summary"] = "Delete"+d.name, "Delete the "+d.noun
		status, body = http.StatusOK, envelope(apischema.Ref("Deleted"), object{"changed": object{"type": "boolean", "const": true}})
	case routeAction:
		a, ok := d.actions[rt.action]
		if !ok {
			return nil, fmt.Errorf("manage: the action %s of %s has no description", rt.action, info.Name)
		}
		op["operationId"], op["summary"], op["description"] = a.id, a.summary, a.description
		status, body, reqSchema = http.StatusOK, changed, "EmptyBody"
		if a.accepted != "" {
			status, body = http.StatusAccepted, envelope(apischema.Ref(a.accepted), nil)
		}
		if a.withSecret {
			body = envelope(b.withSecret(typ), object{"meta": metaMember, "changed": changedMember})
		}
	case routeKill:
		op["operationId"], op["summary"], op["description"] = "SetKillSwitch", "Turn the kill switch on or off, the agent connected or not", killSwitchDescription
		status, body, reqSchema = http.StatusOK, envelope(res, object{"meta": metaMember, "changed": changedMember,
			"applied": object{"type": "boolean", "description": "whether the user's agent runs the configuration that carries the switch; false: stored, and applied when the agent connects"}}), "KillSwitchChange"
	default:
		return nil, fmt.Errorf("manage: %s has no description", rt.pattern())
	}
	if _, set := op["description"]; !set && d.description != "" {
		op["description"] = d.description
	}
	if rt.op == routeCreate && d.withSecret {
		body = envelope(b.withSecret(typ), object{"meta": metaMember, "changed": changedMember})
	}
	return b.finish(rt, op, status, body, rt.op != routeList && rt.op != routeDelete && status != http.StatusAccepted, reqSchema)
}

// withSecret is a resource's schema with the signing secret shown once
// (an alert webhook's create and rotate-secret).
func (b *docBuild) withSecret(typ string) object {
	return object{"allOf": []any{apischema.Ref(typ), object{"type": "object", "properties": object{
		"secret": object{"type": "string", "pattern": `^whsec_[0-9a-f]{64}$`,
			"description": "a webhook's signing secret, shown in this answer only: keep it"},
	}}}}
}

// finish adds to op its parameters, request body, success answer of
// status with schema body (with the ETag header when etag), and errors.
func (b *docBuild) finish(rt *route, op object, status int, body object, etag bool, reqSchema string) (object, error) {
	var params []any
	if rt.hasID() {
		params = append(params, object{"name": "id", "in": "path", "required": true, "description": "the resource's id",
			"schema": object{"type": "string", "pattern": IDPattern}})
	}
	codes := routeCodes(rt)
	if _, ok := codes[http.StatusPreconditionFailed]; ok {
		params = append(params, object{"name": "If-Match", "in": "header", "required": false,
			"description": "optional: the change applies only if one of these ETags (or *) is the resource's current one, else 412 precondition_failed",
			"schema":      object{"type": "string"}})
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if reqSchema != "" {
		op["requestBody"] = object{"required": rt.op != routeAction,
			"content": object{"application/json": object{"schema": apischema.Ref(reqSchema)}}}
	}
	ok := object{"description": "success", "content": object{"application/json": object{"schema": body}}}
	if etag {
		ok["headers"] = object{"ETag": etagHeader}
	}
	responses := object{strconv.Itoa(status): ok}
	for st, list := range codes {
		responses[strconv.Itoa(st)] = errorResponse(st, list)
	}
	op["responses"] = responses
	if rt.family != "" {
		op["x-family"] = rt.family
	}
	return op, nil
}

// errorResponse documents status st answering one of codes.
func errorResponse(st int, codes []string) object {
	quoted := make([]string, len(codes))
	for i, c := range codes {
		quoted[i] = "`" + c + "`"
	}
	r := object{
		"description":   statusDescriptions[st] + ". Codes: " + strings.Join(quoted, ", ") + ".",
		"x-error-codes": codes,
		"content": object{"application/json": object{"schema": object{
			"allOf": []any{
				apischema.Ref("Error"),
				object{"properties": object{"error": object{"type": "string", "enum": codes}}},
			},
		}}},
	}
	switch st {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusConflict:
		r["headers"] = object{"Retry-After": object{"description": "seconds to wait before retrying, when retryAfter is set", "schema": object{"type": "integer", "minimum": 1}}}
	case http.StatusPreconditionFailed:
		r["headers"] = object{"ETag": object{"description": "the resource's current ETag", "schema": object{"type": "string"}}}
	}
	return r
}

// statusDescriptions say what each error status means.
var statusDescriptions = map[int]string{
	http.StatusBadRequest:            "the request is malformed (a query parameter, an id not of a resource's form, a body on a read, a body that is not JSON)",
	http.StatusUnauthorized:          "missing, malformed, unknown or revoked API token",
	http.StatusForbidden:             "the user's plan lacks the Management API or this feature, the API is not open for the account, or (changes) the token has the read scope",
	http.StatusNotFound:              "no such resource of the user",
	http.StatusRequestTimeout:        "the body was not received in time",
	http.StatusConflict:              "the change conflicts with the user's other resources or with the agent's state",
	http.StatusPreconditionFailed:    "If-Match did not match the resource's current ETag (the ETag header carries it)",
	http.StatusRequestEntityTooLarge: "the body is too large (64 KiB at most)",
	http.StatusUnsupportedMediaType:  "the body is not application/json",
	http.StatusUnprocessableEntity:   "the body breaks the kind's rules: fields lists every field at fault",
	http.StatusTooManyRequests:       "a budget is used up (policy, retryAfter, Retry-After), or two requests of the user already run",
	http.StatusInternalServerError:   "the relay failed",
	http.StatusServiceUnavailable:    "the store or the Management API is unavailable, read-only or under load: nothing was applied",
	http.StatusGatewayTimeout:        "the agent did not acknowledge the change in time",
}

// routeCodes returns the error codes rt can answer, per status, each
// list sorted: the admission's, the body's, the handler's, and the
// kind's (kindDocs' codes).
func routeCodes(rt *route) map[int][]string {
	var list []string
	list = append(list, errcode.Unauthorized, errcode.EliteRequired, errcode.NotAvailable, errcode.PlanRequired,
		errcode.RateLimited, errcode.TooManyConcurrentRequests, errcode.InternalError,
		errcode.StorageUnavailable, errcode.ManagementUnavailable, errcode.ManagementBusy, errcode.UnknownParameter)
	if rt.family != "" {
		list = append(list, errcode.FamilyUnavailable)
	}
	if rt.family == FamilyBroker {
		list = append(list, errcode.TradovateNotLinked)
	}
	if rt.hasID() {
		list = append(list, errcode.InvalidPath, errcode.NotFound)
	}
	switch rt.method {
	case http.MethodGet, http.MethodDelete:
		list = append(list, errcode.UnexpectedBody)
	}
	if rt.change() {
		list = append(list, errcode.InsufficientScope, errcode.ManagementReadOnly)
		if rt.method != http.MethodDelete {
			list = append(list, errcode.InvalidJSON, errcode.BodyTooLarge, errcode.BodyTimeout, errcode.UnsupportedContentType, errcode.ValidationFailed)
		}
		list = append(list, errcode.ConcurrentModification)
		if rt.op != routeCreate {
			list = append(list, errcode.PreconditionFailed)
		}
		switch rt.op {
		case routeCreate:
			list = append(list, errcode.FieldReadOnly)
		case routePatch, routePut:
			list = append(list, errcode.FieldReadOnly, errcode.ImmutableField)
		}
		if rt.kind != nil {
			if rt.kind.needsAgent() && rt.op != routeKill {
				list = append(list, errcode.AddonDisconnected, errcode.AddonVersionUnsupported, errcode.DeadlineExceeded, errcode.OutcomeUnknown)
			}
			if rt.family == FamilyBroker {
				list = append(list, errcode.DeadlineExceeded)
			}
			d := kindDocs[rt.kind.name()]
			if rt.op != routeKill {
				// The kill switch is the relay's own change of the
				// controls: none of their rules runs on it.
				list = append(list, d.codes...)
			}
			if rt.op == routeCreate && d.limitCode != "" {
				list = append(list, d.limitCode)
			}
		}
	}
	out := map[int][]string{}
	for _, c := range list {
		st := errcode.Status(c)
		if st == 0 {
			st = http.StatusInternalServerError
		}
		out[st] = append(out[st], c)
	}
	for st, codes := range out {
		sort.Strings(codes)
		out[st] = slices.Compact(codes)
	}
	return out
}

// mustJSON decodes a description's JSON example; a broken one panics at
// the document's build, which tests catch.
func mustJSON(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic("manage: an example of openapi_kinds.go is not JSON: " + err.Error())
	}
	return v
}

// killSwitchDescription documents the kill switch's behaviour with the
// agent offline.
const killSwitchDescription = "Accepted whether or not the agent is connected: the change is stored, and " +
	"`applied` says whether the agent runs it yet. While it is on and not applied, the relay itself refuses the user's " +
	"orders that may open or add to a position with 400 trading_blocked (rule: killSwitch), as the agent does; reads, " +
	"cancels, closes and flattens are not refused. The agent gets it when it connects, before any other call, and " +
	"flattens then when flattenOnKill is on and the switch turned on. It has its own budget (kill) and is never shed under load. " +
	"PATCH of the controls refuses killSwitch (409 use_kill_switch_endpoint)."

// ErrorCodes returns the error codes the route of method and path (as the
// document writes it: "/v1/api/manage/alerts/{id}") answers, per status,
// each list sorted; nil when there is no such route. Other documents that
// describe a management route take its codes from here.
func ErrorCodes(method, path string) map[int][]string {
	for _, rt := range routes() {
		p := Prefix
		if rt.path != "" {
			p += "/" + rt.path
		}
		if rt.method == method && p == path {
			return routeCodes(rt)
		}
	}
	return nil
}
