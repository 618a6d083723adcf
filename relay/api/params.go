package api

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
	"tradebridge/relay/httpapi"
)

// Field error codes of the trading API's 400 responses (the fields array).
const (
	fieldMissing     = "required"
	fieldWrongType   = httpapi.FieldCodeWrongType
	fieldNotAllowed  = "not_allowed" // a value outside the enumeration
	fieldBadFormat   = "string_pattern_mismatch"
	fieldOutOfRange  = "out_of_range"
	fieldUnknown     = "unknown_field"
	fieldDuplicate   = "duplicate_field" // a field and its alias both sent
	fieldOneRequired = "one_of_required"
)

// Error codes of argument problems found by the relay; they are the
// agent's codes, so a caller sees the same code whichever side refused.
const (
	CodeInvalidArgument  = protocol.CodeInvalidArgument
	CodeMissingFields    = protocol.CodeMissingFields
	CodeUnknownParameter = "unknown_parameter"
)

// argsError is a 400 about the arguments.
func argsError(code, detail string, fields ...httpapi.FieldError) *httpapi.Error {
	return &httpapi.Error{Status: http.StatusBadRequest, Code: code, Detail: detail, Fields: fields}
}

// parseArgs builds the RPC arguments of ep from r: path parameters, query
// parameters (typed from their text, defaults filled in) and body fields
// (typed as JSON), under their canonical names. Nothing the caller sent is
// repeated in an error; fields are named by the API's own names.
func parseArgs(w http.ResponseWriter, r *http.Request, ep *endpoint) (map[string]any, *httpapi.Error) {
	args := make(map[string]any, len(ep.Params))
	for i := range ep.Params {
		p := &ep.Params[i]
		if p.In != inPath {
			continue
		}
		v := r.PathValue(p.Name)
		if !validName(v) {
			return nil, &httpapi.Error{Status: http.StatusBadRequest, Code: CodeInvalidPath,
				Detail: "the " + p.Name + " in the path is not valid"}
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
// that lack a required parameter or every member of a OneOf group.
func completeArgs(ep *endpoint, args map[string]any) *httpapi.Error {
	var missing []httpapi.FieldError
	for i := range ep.Params {
		p := &ep.Params[i]
		if _, ok := args[p.Name]; !ok {
			if p.Required {
				missing = append(missing, httpapi.FieldError{Path: p.Name, Code: fieldMissing})
			} else if p.Default != nil {
				args[p.Name] = p.Default
			}
		}
	}
	if len(missing) > 0 {
		names := make([]string, len(missing))
		for i, f := range missing {
			names[i] = f.Path
		}
		return argsError(CodeMissingFields, "missing required fields: "+strings.Join(names, ", "), missing...)
	}
	for _, group := range ep.OneOf {
		if !slices.ContainsFunc(group, func(n string) bool { _, ok := args[n]; return ok }) {
			fields := make([]httpapi.FieldError, len(group))
			for i, n := range group {
				fields[i] = httpapi.FieldError{Path: n, Code: fieldOneRequired}
			}
			return argsError(CodeMissingFields, "missing required fields: one of "+strings.Join(group, ", "), fields...)
		}
	}
	return nil
}

// parseQuery types the query parameters. Unknown and repeated parameters are
// refused: a misspelt filter must not silently widen a query.
func parseQuery(r *http.Request, ep *endpoint, args map[string]any) *httpapi.Error {
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := parseQueryStrict(r.URL.RawQuery)
	if err != nil {
		return argsError(CodeUnknownParameter, "the query string is malformed")
	}
	for name, vals := range q {
		p := ep.param(name, inQuery)
		if p == nil {
			return argsError(CodeUnknownParameter, "the query has a parameter this route does not take")
		}
		if len(vals) > 1 {
			return argsError(CodeUnknownParameter, "the query parameter "+p.Name+" is repeated")
		}
		v, fe := typedText(p, vals[0])
		if fe != nil {
			return argsError(CodeInvalidArgument, "the query parameter "+p.Name+" is not valid", *fe)
		}
		args[p.Name] = v
	}
	return nil
}

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

var errBadQuery = errors.New("api: malformed query string")

func unescape(s string) (string, error) { return url.QueryUnescape(s) }

// typedText converts a query value to its parameter's type.
func typedText(p *param, s string) (any, *httpapi.FieldError) {
	switch p.Type {
	case tBoolean:
		switch strings.ToLower(s) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, &httpapi.FieldError{Path: p.Name, Code: fieldWrongType}
	case tInteger:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, &httpapi.FieldError{Path: p.Name, Code: fieldWrongType}
		}
		if fe := p.checkRange(float64(n)); fe != nil {
			return nil, fe
		}
		return n, nil
	case tString:
		return p.checkString(s)
	}
	return nil, &httpapi.FieldError{Path: p.Name, Code: fieldWrongType}
}

// parseBody reads the JSON body and types its fields. An absent body is
// an empty object.
func parseBody(w http.ResponseWriter, r *http.Request, ep *endpoint, args map[string]any) *httpapi.Error {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	var body map[string]json.RawMessage
	if e := httpapi.ReadJSON(w, r, &body, httpapi.ReadOptions{}); e != nil {
		return e
	}
	seen := make(map[string]bool, len(body))
	for name, raw := range body {
		p := ep.param(name, inBody)
		if p == nil {
			return argsError(CodeInvalidArgument, "the body has a field this route does not take",
				httpapi.FieldError{Path: safeFieldName(name), Code: fieldUnknown})
		}
		if seen[p.Name] {
			return argsError(CodeInvalidArgument, "the field "+p.Name+" is sent twice under different names",
				httpapi.FieldError{Path: p.Name, Code: fieldDuplicate})
		}
		seen[p.Name] = true
		if bytes.Equal(raw, []byte("null")) {
			continue // null means absent
		}
		v, fe := typedJSON(p, raw)
		if fe != nil {
			return argsError(CodeInvalidArgument, "the field "+p.Name+" is not valid", *fe)
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
	return "(unnamed)"
}

var fieldNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,39}$`)

// typedJSON checks a body value against its parameter.
func typedJSON(p *param, raw json.RawMessage) (any, *httpapi.FieldError) {
	wrong := &httpapi.FieldError{Path: p.Name, Code: fieldWrongType}
	switch p.Type {
	case tString:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, wrong
		}
		return p.checkString(s)
	case tBoolean:
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return nil, wrong
		}
		return b, nil
	case tInteger:
		var f float64
		if raw[0] == '"' || json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return nil, wrong
		}
		if fe := p.checkRange(f); fe != nil {
			return nil, fe
		}
		return int64(f), nil
	case tNumber:
		var f float64
		if raw[0] == '"' || json.Unmarshal(raw, &f) != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, wrong
		}
		if fe := p.checkRange(f); fe != nil {
			return nil, fe
		}
		return f, nil
	case tObject:
		if raw[0] != '{' {
			return nil, wrong
		}
		return json.RawMessage(raw), nil
	}
	return nil, wrong
}

func (p *param) checkRange(f float64) *httpapi.FieldError {
	if p.Min == 0 && p.Max == 0 {
		return nil
	}
	if f < p.Min || f > p.Max {
		return &httpapi.FieldError{Path: p.Name, Code: fieldOutOfRange, Limit: p.Max}
	}
	return nil
}

// checkString checks a string's enumeration and format and returns the
// value to forward.
func (p *param) checkString(s string) (any, *httpapi.FieldError) {
	if len(p.Enum) > 0 {
		for _, e := range p.Enum {
			if strings.EqualFold(s, e) {
				return e, nil
			}
		}
		return nil, &httpapi.FieldError{Path: p.Name, Code: fieldNotAllowed}
	}
	if p.Max > 0 && float64(utf8.RuneCountInString(s)) > p.Max {
		return nil, &httpapi.FieldError{Path: p.Name, Code: fieldOutOfRange, Limit: p.Max}
	}
	bad := &httpapi.FieldError{Path: p.Name, Code: fieldBadFormat}
	switch p.Format {
	case formatName:
		if !validName(s) {
			return nil, bad
		}
	case formatInstrument:
		s = strings.TrimSpace(s)
		if !instrumentRE.MatchString(s) {
			bad.Pattern = instrumentRE.String()
			return nil, bad
		}
	case formatTime:
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return nil, bad
		}
	case formatPositionList:
		for part := range strings.SplitSeq(s, ",") {
			switch strings.ToLower(strings.TrimSpace(part)) {
			case "flat", "long", "short":
			default:
				return nil, bad
			}
		}
	case "integer-text":
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 100000 {
			return nil, bad
		}
		return n, nil
	}
	return s, nil
}

// instrumentRE accepts the forms DESIGN.md allows: "ES 12-26", a root
// ("ES"), or a month code ("ESZ26", "ESZ6"). Whether the root exists is
// the platform's to say.
var instrumentRE = regexp.MustCompile(`^[A-Za-z0-9]{1,6}( (0[1-9]|1[0-2])-[0-9]{2})?$`)

// param finds the endpoint's parameter named name (or an alias) in in.
func (ep *endpoint) param(name, in string) *param {
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
