package tradecall

import (
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
)

// queryEndpoints are the routes that take query parameters.
var queryEndpoints = func() []*Endpoint {
	var out []*Endpoint
	for i := range endpoints {
		for _, p := range endpoints[i].Params {
			if p.In == InQuery {
				out = append(out, &endpoints[i])
				break
			}
		}
	}
	return out
}()

// queryMarker is put in seeds: no detail may repeat it.
const queryMarker = "ZZMARKER"

// FuzzQuery parses a raw query string for one of the routes that take
// query parameters and checks that
//
//   - parseQueryStrict agrees with url.ParseQuery, verdict and values;
//   - parseQuery accepts exactly a well-formed query of the route's own
//     parameters, none repeated, each value of its type and range, and
//     then sets args to those values under the parameters' names (an
//     instrument in the form of protocol.ParseInstrument);
//   - accepted arguments written back as a query parse to the same
//     arguments;
//   - a refusal is 400 unknown_parameter or invalid_argument, whose
//     detail never repeats the caller's text and whose fields name a
//     parameter of the route or something that looks like a field name.
func FuzzQuery(f *testing.F) {
	for _, s := range []string{
		"activeOnly=true&lookbackTime=600", "activeOnly=FALSE", "lookbackTime=900", "lookbackTime=0", "lookbackTime=901",
		"lookbackTime=+5", "lookbackTime=0x10", "lookbackTime=99999999999999999999", "instrument=ES%2012-26",
		"instrument=ES+12-26", "instrument=%20ESZ26%20", "instrument=ABCDEFZ26", "root=ES&showRollover=TRUE",
		"instrument=ES&root=NQ", "a;b=1", "x=%zz", "activeOnly=true&activeOnly=false", "=", "&&", "includeFlat=yes",
		"instrument=%C3%89S", "ZZMARKER=1", "instrument=ZZMARKER", "activeOnly=ZZMARKER", "includeTerminal=",
		"%61ctiveOnly=true", "instrument", "lookbackTime=5&&", "activeOnly=true;",
	} {
		for i := range queryEndpoints {
			f.Add(s, uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, raw string, which uint8) {
		q, err := parseQueryStrict(raw)
		uq, uerr := url.ParseQuery(raw)
		if (err == nil) != (uerr == nil) || err == nil && len(q)+len(uq) > 0 && !reflect.DeepEqual(q, map[string][]string(uq)) {
			t.Fatalf("parseQueryStrict(%q) = %q, %v; url.ParseQuery: %q, %v", raw, q, err, uq, uerr)
		}

		ep := queryEndpoints[int(which)%len(queryEndpoints)]
		args := map[string]any{}
		e := parseQuery(&http.Request{Method: http.MethodGet, URL: &url.URL{RawQuery: raw}}, ep, args)

		// What parseQuery must decide, from the query's parts.
		ok := raw == "" || err == nil
		want := map[string]any{}
		if raw != "" && err == nil {
			for name, vals := range q {
				p := ep.Param(name, InQuery)
				if p == nil || len(vals) > 1 {
					ok = false
					break
				}
				v, fe := typedText(p, vals[0])
				if fe != nil {
					ok = false
					break
				}
				want[p.Name] = v
			}
		}
		if e != nil {
			if ok {
				t.Fatalf("%s?%s refused: %+v", ep.Path, raw, e)
			}
			if e.Status != http.StatusBadRequest || e.Code != errcode.UnknownParameter && e.Code != errcode.InvalidArgument && e.Code != errcode.InvalidInstrument ||
				e.Detail == "" || strings.Contains(e.Detail, queryMarker) {
				t.Fatalf("%s?%s: %+v", ep.Path, raw, e)
			}
			if err != nil && e.Code != errcode.UnknownParameter {
				t.Fatalf("%s?%s, a malformed query: %+v", ep.Path, raw, e)
			}
			for _, fe := range e.Fields {
				if ep.Param(fe.Path, InQuery) == nil && fe.Path != unnamedField && !fieldNameRE.MatchString(fe.Path) {
					t.Fatalf("%s?%s: field %+v", ep.Path, raw, fe)
				}
			}
			return
		}
		if !ok || !reflect.DeepEqual(args, want) {
			t.Fatalf("%s?%s accepted as %v, want %v (ok %v)", ep.Path, raw, args, want, ok)
		}
		back := url.Values{}
		for name, v := range args {
			p := ep.Param(name, InQuery)
			if p == nil {
				t.Fatalf("%s?%s: argument %q is no query parameter", ep.Path, raw, name)
			}
			switch v := v.(type) {
			case bool:
				back.Set(name, strconv.FormatBool(v))
			case int64:
				if p.Type != TInteger || float64(v) < p.Min || float64(v) > p.Max {
					t.Fatalf("%s?%s: %s = %d", ep.Path, raw, name, v)
				}
				back.Set(name, strconv.FormatInt(v, 10))
			case string:
				if p.Format == FormatInstrument {
					if _, err := protocol.ParseInstrument(v); err != nil {
						t.Fatalf("%s?%s: instrument %q accepted, not in the grammar", ep.Path, raw, v)
					}
				}
				back.Set(name, v)
			default:
				t.Fatalf("%s?%s: %s = %#v", ep.Path, raw, name, v)
			}
		}
		again := map[string]any{}
		if e := parseQuery(&http.Request{Method: http.MethodGet, URL: &url.URL{RawQuery: back.Encode()}}, ep, again); e != nil ||
			!reflect.DeepEqual(args, again) {
			t.Fatalf("%s?%s parses to %v; written back as %s to %v, %+v", ep.Path, raw, args, back.Encode(), again, e)
		}
	})
}
