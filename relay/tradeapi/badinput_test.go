package tradeapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/tradeapi"
)

// For every route of the OpenAPI document, and every parameter of it, bad
// values (missing, wrong type, unknown enum value, bad instrument, NaN-like
// strings, huge numbers, an empty body where one is required) are answered
// 400 and nothing reaches the agent.
func TestBadInputEveryRoute(t *testing.T) {
	e := newEnv(t)
	doc := tradeapi.OpenAPI()
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	var spec struct {
		Paths map[string]map[string]struct {
			// XRoute marks a route another package serves (the activity
			// log, the Management API's alerts: their packages test their
			// bad input).
			XRoute     string `json:"x-route"`
			Parameters []struct {
				Name     string         `json:"name"`
				In       string         `json:"in"`
				Required bool           `json:"required"`
				Schema   map[string]any `json:"schema"`
			} `json:"parameters"`
			RequestBody *struct {
				Content map[string]struct {
					Schema struct {
						Properties map[string]map[string]any `json:"properties"`
						Required   []string                  `json:"required"`
					} `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(raw, &spec))
	pathValues := strings.NewReplacer("{account}", "Sim101", "{id}", "s1", "{orderId}", "o1")
	cases := 0
	expectRefused := func(method, path, body, what string) {
		t.Helper()
		before := len(e.agent.all())
		r := e.do(method, path, "tb_api_pro", body)
		require.Equal(t, 400, r.Status, "%s %s (%s): %s", method, path, what, r.Raw)
		require.Len(t, e.agent.all(), before, "%s %s (%s) reached the agent", method, path, what)
		cases++
	}
	for path, ops := range spec.Paths {
		for method, op := range ops {
			if op.XRoute != "" {
				continue
			}
			method = strings.ToUpper(method)
			target := pathValues.Replace(path)
			// Query parameters.
			query := url.Values{}
			for _, p := range op.Parameters {
				if p.In == "query" {
					query.Set(p.Name, validText(p.Schema))
				}
			}
			for _, p := range op.Parameters {
				if p.In != "query" {
					continue
				}
				if p.Required {
					q := clone(query)
					q.Del(p.Name)
					expectRefused(method, target+"?"+q.Encode(), "", "missing "+p.Name)
				}
				for _, bad := range badText(p.Schema) {
					q := clone(query)
					q.Set(p.Name, bad)
					expectRefused(method, target+"?"+q.Encode(), "", fmt.Sprintf("%s=%q", p.Name, bad))
				}
			}
			if op.RequestBody == nil {
				continue
			}
			schema := op.RequestBody.Content["application/json"].Schema
			valid := map[string]any{}
			var names []string
			for name, prop := range schema.Properties {
				if d, _ := prop["description"].(string); strings.HasPrefix(d, "alias of") {
					continue
				}
				valid[name] = validJSON(prop)
				names = append(names, name)
			}
			sort.Strings(names)
			if _, ok := valid["orderId"]; ok {
				valid["orderId"] = fmt.Sprintf("order-%d", len(e.agent.all())) // one key per route
			}
			qs := ""
			if len(query) > 0 {
				qs = "?" + query.Encode()
			}
			// The valid body passes (so each refusal below is the mutation's).
			b, _ := json.Marshal(valid)
			before := len(e.agent.all())
			r := e.do(method, target+qs, "tb_api_pro", string(b))
			require.Equal(t, 200, r.Status, "%s %s with a valid body: %s", method, path, r.Raw)
			require.Len(t, e.agent.all(), before+1)
			if len(schema.Required) > 0 {
				expectRefused(method, target+qs, "", "empty body")
			}
			for _, name := range schema.Required {
				m := cloneMap(valid)
				delete(m, name)
				b, _ := json.Marshal(m)
				expectRefused(method, target+qs, string(b), "missing "+name)
			}
			for _, name := range names {
				for _, bad := range badJSON(schema.Properties[name]) {
					m := cloneMap(valid)
					m[name] = bad
					b, _ := json.Marshal(m)
					expectRefused(method, target+qs, string(b), fmt.Sprintf("%s=%v", name, bad))
				}
			}
			m := cloneMap(valid)
			m["notAField"] = 1
			b, _ = json.Marshal(m)
			expectRefused(method, target+qs, string(b), "unknown field")
		}
	}
	require.Greater(t, cases, 300)
	t.Logf("%d bad inputs refused", cases)
}

func clone(v url.Values) url.Values {
	c := url.Values{}
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

func cloneMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func validJSON(s map[string]any) any {
	if enum, ok := s["enum"].([]any); ok {
		return enum[0]
	}
	switch s["type"] {
	case "string":
		switch {
		case s["format"] == "date-time":
			return "2026-11-18T15:00:00Z"
		case s["pattern"] == `^[0-9]+$`:
			return "5"
		case strings.Contains(fmt.Sprint(s["pattern"]), "flat|long|short"):
			return "flat,long"
		case s["pattern"] != nil:
			return "ES 12-26"
		}
		return "abc-1"
	case "integer":
		if lo, ok := s["minimum"].(float64); ok && lo > 0 {
			return lo
		}
		return 1
	case "number":
		if hi, ok := s["maximum"].(float64); ok && hi < 1.25 {
			return hi / 2 // a fraction (percent)
		}
		return 1.25
	case "boolean":
		return true
	case "object":
		return map[string]any{}
	}
	return nil
}

func badJSON(s map[string]any) []any {
	var bad []any
	switch s["type"] {
	case "string":
		bad = append(bad, 12, true, []any{"x"})
		if _, ok := s["enum"]; ok {
			bad = append(bad, "NotAValue")
		}
		if s["pattern"] != nil || s["format"] != nil {
			bad = append(bad, "ES 13-26; DROP", "ES 13-26")
			if !strings.HasPrefix(fmt.Sprint(s["pattern"]), "^[A-Za-z0-9]{1,6}") {
				bad = append(bad, "NaN") // a well-formed root otherwise
			}
		}
		if max, ok := s["maxLength"].(float64); ok {
			bad = append(bad, strings.Repeat("x", int(max)+1))
		}
	case "integer":
		bad = append(bad, "1", 1.5, 1e12, -1e12, "NaN")
	case "number":
		bad = append(bad, "1.5", "NaN", "Infinity", 1e300, -1e300)
	case "boolean":
		bad = append(bad, "true", 1, "yes")
	case "object":
		bad = append(bad, []any{}, "x", 1)
	}
	return bad
}

func validText(s map[string]any) string {
	v := validJSON(s)
	if f, ok := v.(float64); ok {
		return fmt.Sprint(int(f))
	}
	return fmt.Sprint(v)
}

func badText(s map[string]any) []string {
	switch s["type"] {
	case "boolean":
		return []string{"yes", "1", ""}
	case "integer":
		return []string{"1.5", "NaN", "99999999999999999999", "-5"}
	case "string":
		if s["pattern"] != nil {
			return []string{"ES 13-26", "NaN;x"}
		}
	}
	return nil
}
