// Command openapidump writes the trading API's OpenAPI document, the one
// the relay serves at /v1/api/openapi.json (tradeapi.OpenAPI), to standard
// output, for the client generators of make clients. With -doc manage it
// writes the Management API's, served at /v1/api/manage/openapi.json
// (manage.OpenAPI).
//
// With -openapi 3.0 it writes the same document in OpenAPI 3.0 terms, for
// generators that do not read 3.1 (Swagger Codegen 3): the version field
// becomes 3.0.3, const becomes a one-value enum, a type list with "null"
// becomes the type with nullable, and a schema's examples list becomes
// example. One more change serves the Python generator: where two
// properties of an object have the same snake_case name (period_type, an
// alias the API accepts, beside periodType), the one already in snake_case
// is left out, since the generator would name both period_type. Nothing
// else changes.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"unicode"

	"tradebridge/relay/manage"
	"tradebridge/relay/tradeapi"
)

func main() {
	version := flag.String("openapi", "3.1", "OpenAPI version to write: 3.1 (as served) or 3.0")
	which := flag.String("doc", "trading", "the document to write: trading (/v1/api/openapi.json) or manage (/v1/api/manage/openapi.json)")
	flag.Parse()
	var doc any
	switch *which {
	case "trading":
		doc = tradeapi.OpenAPI()
	case "manage":
		doc = manage.OpenAPI()
	default:
		fail(fmt.Errorf("-doc %q: want trading or manage", *which))
	}
	switch *version {
	case "3.1":
	case "3.0":
		// Round-trip through JSON so that every node is a plain map or slice.
		b, err := json.Marshal(doc)
		if err != nil {
			fail(err)
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			fail(err)
		}
		doc.(map[string]any)["openapi"] = "3.0.3"
		doc = downgrade(doc)
	default:
		fail(fmt.Errorf("-openapi %q: want 3.1 or 3.0", *version))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false) // as the relay serves it
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "openapidump:", err)
	os.Exit(1)
}

// downgrade rewrites the 3.1-only schema keywords of v in 3.0 terms.
func downgrade(v any) any {
	switch n := v.(type) {
	case []any:
		for i := range n {
			n[i] = downgrade(n[i])
		}
	case map[string]any:
		for k, c := range n {
			n[k] = downgrade(c)
		}
		if c, ok := n["const"]; ok {
			delete(n, "const")
			n["enum"] = []any{c}
			if _, typed := n["type"]; !typed {
				switch c.(type) {
				case bool:
					n["type"] = "boolean"
				case string:
					n["type"] = "string"
				case float64:
					n["type"] = "number"
				}
			}
		}
		if ts, ok := n["type"].([]any); ok {
			var rest []any
			for _, t := range ts {
				if t == "null" {
					n["nullable"] = true
				} else {
					rest = append(rest, t)
				}
			}
			if len(rest) == 1 {
				n["type"] = rest[0]
			} else if len(rest) > 1 {
				delete(n, "type")
				var anyOf []any
				for _, t := range rest {
					anyOf = append(anyOf, map[string]any{"type": t})
				}
				n["anyOf"] = anyOf
			}
		}
		if props, ok := n["properties"].(map[string]any); ok {
			dropSnakeAliases(n, props)
		}
		if ex, ok := n["examples"].([]any); ok && len(ex) > 0 {
			if _, isSchema := n["type"]; isSchema {
				delete(n, "examples")
				n["example"] = ex[0]
			}
		}
	}
	return v
}

// dropSnakeAliases removes from props (the properties of schema n) each
// name written in snake_case whose camelCase twin is also a property.
func dropSnakeAliases(n, props map[string]any) {
	for name := range props {
		if !strings.Contains(name, "_") {
			continue
		}
		for other := range props {
			if other != name && snake(other) == name {
				delete(props, name)
				if req, ok := n["required"].([]any); ok {
					kept := req[:0]
					for _, r := range req {
						if r != name {
							kept = append(kept, r)
						}
					}
					n["required"] = kept
				}
				break
			}
		}
	}
}

// snake returns the snake_case form of a camelCase name.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
