package apischema

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
)

// ServeDocument serves the JSON encoding of build's document, built once
// at the first request, without a token: application/json, nosniff,
// cacheable for five minutes. Like every answer of the relay it is written
// without HTML escaping ("P&L", not "P\u0026L").
func ServeDocument(build func() any) http.Handler {
	var (
		once sync.Once
		doc  []byte
	)
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		once.Do(func() {
			b, err := Encode(build())
			if err != nil {
				panic("apischema: a contract document does not encode: " + err.Error())
			}
			doc = b
		})
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "public, max-age=300")
		h.Set("Content-Length", strconv.Itoa(len(doc)))
		_, _ = w.Write(doc)
	})
}

// Encode is the encoding ServeDocument serves: indented by two spaces,
// without HTML escaping.
func Encode(doc any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ErrorSchema is the schema of the relay's error body, in every document
// (component Error).
func ErrorSchema() map[string]any {
	return map[string]any{
		"type":        "object",
		"description": "An error, in both profiles. Nothing in it repeats what the caller sent.",
		"required":    []string{"success", "error"},
		"properties": map[string]any{
			"success":    map[string]any{"type": "boolean", "const": false},
			"error":      map[string]any{"type": "string", "description": "stable error code"},
			"detail":     map[string]any{"type": "string", "description": "a sentence for humans; its wording may change"},
			"fields":     map[string]any{"type": "array", "items": Ref("FieldError"), "description": "the fields at fault, on validation errors"},
			"retryAfter": map[string]any{"type": "integer", "minimum": 1, "description": "seconds after which a retry may succeed"},
			"policy":     map[string]any{"type": "string", "description": "the budget that refused the request (rate_limited)"},
			"meta": map[string]any{
				"type":       "object",
				"required":   []string{"requestId"},
				"properties": map[string]any{"requestId": map[string]any{"type": "string"}},
			},
		},
	}
}

// FieldErrorSchema is the schema of one field at fault in an error body
// (component FieldError).
func FieldErrorSchema() map[string]any {
	return map[string]any{
		"type":     "object",
		"required": []string{"path", "code"},
		"properties": map[string]any{
			"path":    map[string]any{"type": "string", "description": "the field's name (dotted for nested fields)"},
			"code":    map[string]any{"type": "string", "description": "required, wrong_type, not_allowed, string_pattern_mismatch, out_of_range, unknown_field, duplicate_field, one_of_required"},
			"limit":   map[string]any{"type": "number", "description": "the bound that was broken (out_of_range)"},
			"pattern": map[string]any{"type": "string", "description": "the regular expression the value must match"},
			"allowed": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "the values allowed (not_allowed)"},
		},
	}
}
