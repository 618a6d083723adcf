package tradecall

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// argsError is a 400 about the arguments.
func argsError(code, detail string, fields ...httpapi.FieldError) *httpapi.Error {
	return &httpapi.Error{Status: http.StatusBadRequest, Code: code, Detail: detail, Fields: fields}
}

// ParseHTTP builds the RPC arguments of ep from an HTTP request r of its
// route: path parameters, query parameters (typed from their text,
// defaults filled in) and body fields (typed as JSON), under their
// canonical names. Nothing the caller sent is repeated in an error; fields
// are named by the API's own names. The error carries its HTTP status.
func ParseHTTP(w http.ResponseWriter, r *http.Request, ep *Endpoint) (map[string]any, *httpapi.Error) {
	args := make(map[string]any, len(ep.Params))
	for i := range ep.Params {
		p := &ep.Params[i]
		if p.In != InPath {
			continue
		}
		v := r.PathValue(p.Name)
		if !validName(v) {
			return nil, &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.InvalidPath,
				Detail: "the " + p.Name + " in the path must be 1 to 64 printable characters, without leading or trailing spaces (URL-encode spaces and slashes)",
				Fields: []httpapi.FieldError{{Path: p.Name, Code: errcode.FieldCodeStringPatternMismatch, Limit: 64}}}
		}
		args[p.Name] = v
	}
	if e := parseQuery(r, ep, args); e != nil {
		return nil, e
	}
	if r.Method == http.MethodGet {
		if e := httpapi.RejectBody(r); e != nil {
			return nil, e
		}
	} else if e := parseBody(w, r, ep, args); e != nil {
		return nil, e
	}
	if e := completeArgs(ep, args); e != nil {
		return nil, e
	}
	return args, nil
}

// completeArgs fills in the defaults of absent parameters and refuses args
// that lack a required parameter, a price their orderType needs, or every
// member of a OneOf group. An optional orderType (FlatPlace) defaults from
// the prices sent: protocol.FlatPlaceOrderType.
func completeArgs(ep *Endpoint, args map[string]any) *httpapi.Error {
	if p := ep.Param("orderType", InBody); p != nil && !p.Required {
		if _, ok := args["orderType"]; !ok {
			_, limit := args["limitPrice"]
			_, stop := args["stopPrice"]
			args["orderType"] = protocol.FlatPlaceOrderType(limit, stop)
		}
	}
	var missing []httpapi.FieldError
	for i := range ep.Params {
		p := &ep.Params[i]
		if _, ok := args[p.Name]; !ok {
			if p.Required {
				missing = append(missing, httpapi.FieldError{Path: p.Name, Code: errcode.FieldCodeRequired})
			} else if p.Default != nil {
				args[p.Name] = p.Default
			}
		}
	}
	missing = append(missing, missingPrices(ep, args)...)
	if len(missing) > 0 {
		names := make([]string, len(missing))
		for i, f := range missing {
			names[i] = f.Path
		}
		detail := "missing required fields: " + strings.Join(names, ", ")
		if hint := missingHints[ep.Fn]; hint != "" {
			detail += "; " + hint
		}
		return argsError(errcode.MissingRequiredFields, detail, missing...)
	}
	for _, group := range ep.OneOf {
		if !slices.ContainsFunc(group, func(n string) bool { _, ok := args[n]; return ok }) {
			fields := make([]httpapi.FieldError, len(group))
			for i, n := range group {
				fields[i] = httpapi.FieldError{Path: n, Code: errcode.FieldCodeOneOfRequired}
			}
			return argsError(errcode.MissingRequiredFields, "missing required fields: one of "+strings.Join(group, ", "), fields...)
		}
	}
	return nil
}

// missingHints complete the detail of a route's missing fields.
var missingHints = map[string]string{
	protocol.FnFlatPlace: "flat place needs them to know what to place",
}

// missingPrices names the prices args' orderType needs
// (protocol.OrderPricesOf) and lacks, among those the route takes (a
// trail distance only the routes of WithTrailingStops take).
func missingPrices(ep *Endpoint, args map[string]any) []httpapi.FieldError {
	t, _ := args["orderType"].(string)
	need := protocol.OrderPricesOf(t)
	var out []httpapi.FieldError
	for _, f := range []struct {
		name   string
		needed bool
	}{
		{"limitPrice", need.Limit}, {"stopPrice", need.Stop}, {"trailDistance", need.TrailDistance},
	} {
		if _, ok := args[f.name]; !ok && f.needed && ep.Param(f.name, InBody) != nil {
			out = append(out, httpapi.FieldError{Path: f.name, Code: errcode.FieldCodeRequired})
		}
	}
	return out
}

// parseQuery types the query parameters. Unknown and repeated parameters are
// refused: a misspelt filter must not silently widen a query.
func parseQuery(r *http.Request, ep *Endpoint, args map[string]any) *httpapi.Error {
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := parseQueryStrict(r.URL.RawQuery)
	if err != nil {
		return argsError(errcode.UnknownParameter, "the query string is malformed")
	}
	for name, vals := range q {
		p := ep.Param(name, InQuery)
		if p == nil {
			return unknownError(ep, InQuery, name)
		}
		if len(vals) > 1 {
			return argsError(errcode.UnknownParameter, "the query parameter "+p.Name+" is repeated")
		}
		v, fe := typedText(p, vals[0])
		if fe != nil {
			return argsError(fieldCode(p, fe), "the query parameter "+fieldDetail(p, fe), *fe)
		}
		args[p.Name] = v
	}
	return nil
}

// unknownError refuses a query parameter or body field the route does not
// take. fields names it only when it looks like a field name (never
// arbitrary bytes of the caller's); the detail lists what the route takes
// there.
func unknownError(ep *Endpoint, in, name string) *httpapi.Error {
	code, what := errcode.InvalidArgument, "the body has a field"
	if in == InQuery {
		code, what = errcode.UnknownParameter, "the query has a parameter"
	}
	safe := safeFieldName(name)
	detail := what + " this route does not take (named in fields when it looks like a field name)"
	var takes []string
	for i := range ep.Params {
		if ep.Params[i].In == in {
			takes = append(takes, ep.Params[i].Name)
		}
	}
	if len(takes) == 0 {
		detail += "; it takes none"
	} else {
		detail += "; it takes " + strings.Join(takes, ", ")
	}
	return argsError(code, detail, httpapi.FieldError{Path: safe, Code: errcode.FieldCodeUnknownField})
}

// fieldCode is the code of a refused field: invalid_instrument for an
// instrument name outside the instrument grammar (of a form it does not
// take, or too long to be one), as the agent answers a name it cannot
// resolve; invalid_argument for anything else.
func fieldCode(p *Param, fe *httpapi.FieldError) string {
	if p.Format == FormatInstrument && (fe.Code == errcode.FieldCodeStringPatternMismatch || fe.Code == errcode.FieldCodeOutOfRange) {
		return errcode.InvalidInstrument
	}
	return errcode.InvalidArgument
}

// fieldDetail is the sentence of a field error: the field's name and the
// rule it broke (the allowed values, the bound crossed, the form), never the
// value sent.
func fieldDetail(p *Param, fe *httpapi.FieldError) string {
	n := p.Name
	switch fe.Code {
	case errcode.FieldCodeNotAllowed:
		return n + " must be one of " + strings.Join(p.Enum, ", ") + " (any casing)"
	case errcode.FieldCodeGreaterThanEqual:
		return n + " must be at least " + number(p.Min) + rangeHint(p)
	case errcode.FieldCodeGreaterThan:
		return n + " must be above " + number(p.Min) + rangeHint(p)
	case errcode.FieldCodeLessThanEqual:
		return n + " must be at most " + number(p.Max) + rangeHint(p)
	case errcode.FieldCodeOutOfRange:
		return n + " must be at most " + number(p.Max) + " characters"
	case errcode.FieldCodeWrongType:
		switch p.Type {
		case TInteger:
			return n + " must be a whole number"
		case TNumber:
			return n + " must be a finite number"
		case TBoolean:
			return n + " must be true or false"
		case TObject:
			return n + " must be an object"
		}
		return n + " must be a string"
	case errcode.FieldCodeStringPatternMismatch:
		switch p.Format {
		case FormatInstrument:
			return n + ` must be written as "ES 12-26" (root and contract month), "ES" (the front month) or "ESZ26" (month code)`
		case FormatName:
			return n + " must be 1 to 64 printable characters without leading or trailing spaces"
		case FormatTime:
			return n + " must be an RFC 3339 time such as 2026-11-18T15:00:00Z"
		case FormatPositionList:
			return n + " must be a comma-separated list of flat, long, short"
		case FormatIntegerText:
			return n + ` must be a whole number from 1 to 100000, as text ("5")`
		}
	}
	return "the field " + n + " is not valid"
}

// rangeHints explain a number's range where the bound alone does not.
var rangeHints = map[string]string{
	"percent": "percent is a fraction of the position: 0.5 closes half",
}

func rangeHint(p *Param) string {
	if h := rangeHints[p.Name]; h != "" {
		return "; " + h
	}
	return ""
}

// number spells a bound: 1, 0.5, 10000.
func number(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// parseQueryStrict is url.ParseQuery that refuses ';' separators and keeps
// empty values.
func parseQueryStrict(raw string) (map[string][]string, error) {
	m := make(map[string][]string)
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		if strings.Contains(part, ";") {
			return nil, errBadQuery
		}
		k, v, _ := strings.Cut(part, "=")
		key, err := unescape(k)
		if err != nil {
			return nil, err
		}
		val, err := unescape(v)
		if err != nil {
			return nil, err
		}
		m[key] = append(m[key], val)
	}
	return m, nil
}

var errBadQuery = errors.New("tradecall: malformed query string")

func unescape(s string) (string, error) { return url.QueryUnescape(s) }

// typedText converts a query value to its parameter's type.
func typedText(p *Param, s string) (any, *httpapi.FieldError) {
	switch p.Type {
	case TBoolean:
		switch strings.ToLower(s) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, &httpapi.FieldError{Path: p.Name, Code: errcode.FieldCodeWrongType}
	case TInteger:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, &httpapi.FieldError{Path: p.Name, Code: errcode.FieldCodeWrongType}
		}
		if fe := p.checkRange(float64(n)); fe != nil {
			return nil, fe
		}
		return n, nil
	case TString:
		return p.checkString(s)
	}
	return nil, &httpapi.FieldError{Path: p.Name, Code: errcode.FieldCodeWrongType}
}

// parseBody reads the JSON body and types its fields. An absent body is
// an empty object.
func parseBody(w http.ResponseWriter, r *http.Request, ep *Endpoint, args map[string]any) *httpapi.Error {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	var body map[string]json.RawMessage
	if e := httpapi.ReadJSON(w, r, &body, httpapi.ReadOptions{}); e != nil {
		return e
	}
	seen := make(map[string]bool, len(body))
	for name, raw := range body {
		p := ep.Param(name, InBody)
		if p == nil {
			return unknownError(ep, InBody, name)
		}
		if seen[p.Name] {
			return argsError(errcode.InvalidArgument, "the field "+p.Name+" is sent twice under different names",
				httpapi.FieldError{Path: p.Name, Code: errcode.FieldCodeDuplicateField})
		}
		seen[p.Name] = true
		if bytes.Equal(raw, []byte("null")) {
			continue // null means absent
		}
		v, fe := typedJSON(p, raw)
		if fe != nil {
			return argsError(fieldCode(p, fe), fieldDetail(p, fe), *fe)
		}
		args[p.Name] = v
	}
	return nil
}

// safeFieldName names an unknown field in an error only when it looks like
// a field name; anything else is not repeated.
func safeFieldName(s string) string {
	if fieldNameRE.MatchString(s) {
		return s
	}
	return unnamedField
}

// unnamedField stands for a field name that is not repeated.
const unnamedField = "(unnamed)"

var fieldNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,39}$`)

// typedJSON checks a body value against its parameter.
func typedJSON(p *Param, raw json.RawMessage) (any, *httpapi.FieldError) {
	wrong := &httpapi.FieldError{Path: p.Name, Code: errcode.FieldCodeWrongType}
	switch p.Type {
	case TString:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, wrong
		}
		return p.checkString(s)
	case TBoolean:
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return nil, wrong
		}
		return b, nil
	case TInteger:
		var f float64
		if raw[0] == '"' || json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return nil, wrong
		}
		if fe := p.checkRange(f); fe != nil {
			return nil, fe
		}
		return int64(f), nil
	case TNumber:
		var f float64
		if raw[0] == '"' || json.Unmarshal(raw, &f) != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, wrong
		}
		if fe := p.checkRange(f); fe != nil {
			return nil, fe
		}
		return f, nil
	case TObject:
		if raw[0] != '{' {
			return nil, wrong
		}
		return json.RawMessage(raw), nil
	}
	return nil, wrong
}

// checkRange checks a number against its parameter's bounds and reports
// the bound crossed. A number parameter (prices, fractions) whose minimum
// is 0 must be above it: no price or fraction of this API may be 0.
func (p *Param) checkRange(f float64) *httpapi.FieldError {
	if p.Min == 0 && p.Max == 0 {
		return nil
	}
	switch {
	case p.Type == TNumber && p.Min == 0 && f <= 0:
		return &httpapi.FieldError{Path: p.Name, Code: errcode.FieldCodeGreaterThan, Limit: p.bound(p.Min)}
	case f < p.Min:
		return &httpapi.FieldError{Path: p.Name, Code: errcode.FieldCodeGreaterThanEqual, Limit: p.bound(p.Min)}
	case f > p.Max:
		return &httpapi.FieldError{Path: p.Name, Code: errcode.FieldCodeLessThanEqual, Limit: p.bound(p.Max)}
	}
	return nil
}

// bound is a limit as the field's type writes it (1, not 1.0).
func (p *Param) bound(f float64) any {
	if p.Type == TInteger {
		return int64(f)
	}
	return f
}

// checkString checks a string's enumeration and format and returns the
// value to forward.
func (p *Param) checkString(s string) (any, *httpapi.FieldError) {
	if len(p.Enum) > 0 {
		for _, e := range p.Enum {
			if strings.EqualFold(s, e) {
				return e, nil
			}
		}
		return nil, &httpapi.FieldError{Path: p.Name, Code: errcode.FieldCodeNotAllowed, Allowed: p.Enum}
	}
	if p.Max > 0 && float64(utf8.RuneCountInString(s)) > p.Max {
		return nil, &httpapi.FieldError{Path: p.Name, Code: errcode.FieldCodeOutOfRange, Limit: p.Max}
	}
	bad := &httpapi.FieldError{Path: p.Name, Code: errcode.FieldCodeStringPatternMismatch}
	switch p.Format {
	case FormatName:
		if !validName(s) {
			return nil, bad
		}
	case FormatInstrument:
		s = strings.TrimSpace(s)
		if !instrumentRE.MatchString(s) {
			bad.Pattern = instrumentRE.String()
			return nil, bad
		}
	case FormatTime:
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return nil, bad
		}
	case FormatPositionList:
		for part := range strings.SplitSeq(s, ",") {
			switch strings.ToLower(strings.TrimSpace(part)) {
			case "flat", "long", "short":
			default:
				return nil, bad
			}
		}
	case FormatIntegerText:
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 100000 {
			return nil, bad
		}
		return n, nil
	}
	return s, nil
}

// instrumentRE is the one instrument grammar (protocol.ParseInstrument):
// "ES 12-26", a root ("ES"), or a month code ("ESZ26", "ESZ6"). Whether
// the root exists is the platform's to say.
var instrumentRE = regexp.MustCompile(protocol.InstrumentPattern)

// Param finds the endpoint's parameter named name (or an alias) in in.
func (ep *Endpoint) Param(name, in string) *Param {
	for i := range ep.Params {
		p := &ep.Params[i]
		if p.In != in {
			continue
		}
		if p.Name == name || slices.Contains(p.Aliases, name) {
			return p
		}
	}
	return nil
}

// ValidName reports whether s is what the trading API accepts as an
// account name, an id or a tag (FormatName): 1–64 printable characters
// with no leading or trailing space.
func ValidName(s string) bool { return validName(s) }

// validName accepts 1–64 printable characters with no leading or trailing
// space: account names as platforms show them (Sim101, APEX-12345-01),
// order and strategy ids, tags.
func validName(s string) bool {
	if s == "" || len(s) > 64 || !utf8.ValidString(s) || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
