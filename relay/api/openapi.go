package api

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"tradebridge/protocol"
)

// OpenAPIPath serves the OpenAPI 3.1 description of the trading API,
// generated from the same table the handlers validate against.
const OpenAPIPath = "/v1/api/openapi.json"

var (
	openAPIOnce sync.Once
	openAPIDoc  []byte
)

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	openAPIOnce.Do(func() {
		doc, err := json.MarshalIndent(OpenAPI(), "", "  ")
		if err != nil {
			panic("api: the OpenAPI document does not encode: " + err.Error())
		}
		openAPIDoc = doc
	})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(openAPIDoc)))
	_, _ = w.Write(openAPIDoc)
}

type object = map[string]any

// OpenAPI returns the OpenAPI 3.1 document of the trading API.
func OpenAPI() map[string]any {
	paths := object{}
	for i := range endpoints {
		ep := &endpoints[i]
		item, _ := paths[ep.Path].(object)
		if item == nil {
			item = object{}
			paths[ep.Path] = item
		}
		item[strings.ToLower(ep.Method)] = operation(ep)
	}
	return object{
		"openapi": "3.1.0",
		"info": object{
			"title":       "Trading API",
			"version":     "1.0.0",
			"description": "Trading calls forwarded to the user's agent next to the trading platform. Every response is {success, data} or {success:false, error, detail}.",
		},
		"security": []any{object{"bearer": []any{}}},
		"paths":    paths,
		"components": object{
			"securitySchemes": object{"bearer": object{"type": "http", "scheme": "bearer", "description": "API token (tb_api_…)"}},
			"schemas": object{
				"Error": object{
					"type":     "object",
					"required": []string{"success", "error"},
					"properties": object{
						"success":    object{"const": false},
						"error":      object{"type": "string", "description": "stable error code"},
						"detail":     object{"type": "string"},
						"fields":     object{"type": "array", "items": object{"type": "object", "properties": object{"path": object{"type": "string"}, "code": object{"type": "string"}, "limit": object{}, "pattern": object{"type": "string"}}}},
						"retryAfter": object{"type": "integer"},
						"policy":     object{"type": "string"},
					},
				},
				"Envelope": object{
					"type":     "object",
					"required": []string{"success", "data"},
					"properties": object{
						"success":  object{"const": true},
						"data":     object{},
						"orderId":  object{"type": "string"},
						"orderIds": object{"type": "array", "items": object{"type": "string"}},
					},
				},
			},
		},
	}
}

var pathParamRE = regexp.MustCompile(`\{([A-Za-z]+)\}`)

func operation(ep *endpoint) object {
	var params []any
	body := object{}
	var bodyRequired []string
	for _, p := range ep.Params {
		switch p.In {
		case inPath, inQuery:
			params = append(params, object{
				"name": p.Name, "in": p.In, "required": p.Required || p.In == inPath,
				"description": p.Doc, "schema": schema(p, true),
			})
		case inBody:
			body[p.Name] = schema(p, false)
			for _, alias := range p.Aliases {
				s := schema(p, false)
				s["description"] = "alias of " + p.Name
				body[alias] = s
			}
			if p.Required {
				bodyRequired = append(bodyRequired, p.Name)
			}
		}
	}
	op := object{
		"operationId": ep.Fn + "_" + operationSuffix(ep),
		"summary":     ep.Summary,
		"x-rpc":       ep.Fn,
		"responses": object{
			"200": response("success", "#/components/schemas/Envelope"),
			"400": response("bad request or operation error", "#/components/schemas/Error"),
			"401": response("authentication failed", "#/components/schemas/Error"),
			"403": response("plan_required", "#/components/schemas/Error"),
			"408": response("the add-on is not connected", "#/components/schemas/Error"),
			"429": response("rate_limited", "#/components/schemas/Error"),
		},
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if ep.Method == http.MethodPost {
		s := object{"type": "object", "additionalProperties": false, "properties": body}
		if len(bodyRequired) > 0 {
			s["required"] = bodyRequired
		}
		op["requestBody"] = object{
			"required": len(bodyRequired) > 0,
			"content":  object{"application/json": object{"schema": s}},
		}
		if f := ep.Fn; isWrite(f) {
			op["parameters"] = append(params, object{
				"name": IdempotencyKeyHeader, "in": "header", "required": false,
				"description": "repeat within 24 h returns the first response and runs nothing",
				"schema":      object{"type": "string", "minLength": 1, "maxLength": 255},
			})
			r := op["responses"].(object)
			r["409"] = response("a request with the same key is still running", "#/components/schemas/Error")
			r["422"] = response("the key was used for a different request", "#/components/schemas/Error")
			r["503"] = response("outcome_unknown: retry with the same key to learn the outcome", "#/components/schemas/Error")
		}
	}
	if len(ep.OneOf) > 0 {
		var groups []string
		for _, g := range ep.OneOf {
			groups = append(groups, strings.Join(g, " or "))
		}
		op["description"] = "At least one of: " + strings.Join(groups, "; ") + "."
	}
	return op
}

func operationSuffix(ep *endpoint) string {
	s := strings.TrimPrefix(ep.Path, "/v1/api/")
	s = pathParamRE.ReplaceAllString(s, "by_$1")
	return strings.NewReplacer("/", "_", "-", "_").Replace(s)
}

func response(desc, ref string) object {
	return object{"description": desc, "content": object{"application/json": object{"schema": object{"$ref": ref}}}}
}

func schema(p param, text bool) object {
	s := object{"type": p.Type}
	if text && p.Type != tString {
		s["description"] = "sent as text"
	}
	if len(p.Enum) > 0 {
		s["enum"] = p.Enum
		s["description"] = "matched without regard to case"
	}
	if p.Default != nil {
		s["default"] = p.Default
	}
	if p.Min != 0 || p.Max != 0 {
		if p.Type == tString {
			s["maxLength"] = p.Max
		} else {
			s["minimum"], s["maximum"] = p.Min, p.Max
		}
	}
	switch p.Format {
	case formatInstrument:
		s["pattern"] = instrumentRE.String()
	case formatTime:
		s["format"] = "date-time"
	case formatPositionList:
		s["pattern"] = `^(flat|long|short)(,(flat|long|short))*$`
	case "integer-text":
		s["pattern"] = `^[0-9]+$`
	}
	return s
}

func isWrite(fn string) bool {
	f, _ := protocol.LookupFunction(fn)
	return f.Write
}
