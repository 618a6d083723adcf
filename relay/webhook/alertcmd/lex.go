package alertcmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"strings"
)

// pair is one key=value of an alert, the key lower case and both trimmed.
type pair struct {
	key, value string
}

// isJSON reports whether body is read as a JSON object: a JSON content
// type (application/json or a +json type), or, when the content type is
// neither JSON nor text/plain, a body whose first byte other than white
// space opens an object or an array (but not a {{placeholder}}).
func isJSON(body []byte, contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(contentType))
	}
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return true
	case mt == "text/plain":
		return false
	}
	b := bytes.TrimLeft(body, " \t\r\n")
	return len(b) > 0 && (b[0] == '[' || b[0] == '{' && !bytes.HasPrefix(b, []byte("{{")))
}

// textSegments splits a text body at ';' and line breaks, the separators
// of the language, without dropping anything: the segments joined with
// their separators are the body.
func textSegments(body string) []string {
	return strings.FieldsFunc(body, isSep)
}

func isSep(r rune) bool { return r == ';' || r == '\n' || r == '\r' }

// lexText reads the pairs of a text body. It reads every segment it can
// and reports the first malformed one.
func lexText(body string) ([]pair, *Error) {
	var pairs []pair
	var first *Error
	for _, seg := range textSegments(body) {
		s := strings.TrimSpace(seg)
		if s == "" {
			continue
		}
		k, v, ok := strings.Cut(s, "=")
		k = lowerASCII(strings.TrimSpace(k))
		switch {
		case !ok && strings.Contains(s, "{{"):
			first = firstErr(first, placeholderError(""))
		case !ok:
			first = firstErr(first, errorf("", "each field is written key=value, separated by ';' or line breaks: a part of the text has no '='"))
		case k == "":
			first = firstErr(first, errorf("", "a part of the text has '=' but no field name before it"))
		default:
			pairs = append(pairs, pair{k, strings.TrimSpace(v)})
		}
	}
	return pairs, first
}

// errJSONSyntax is a body that is not JSON.
var errJSONSyntax = errors.New("syntax")

// validJSON reports whether body is a stream of one or more JSON values
// and nothing else.
func validJSON(body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	n := 0
	for {
		var v json.RawMessage
		switch err := dec.Decode(&v); {
		case err == io.EOF:
			return n > 0
		case err != nil:
			return false
		}
		n++
	}
}

// lexJSON reads the members of a JSON body: one object whose values are
// strings, numbers or booleans. A body that is not JSON has no pairs
// (syntax is true): an alert whose JSON does not parse has no key. A body
// of several alerts (an array, or objects one after the other) is an
// error, with the pairs of its first object, so that its key is read.
func lexJSON(body []byte) (pairs []pair, syntax bool, _ *Error) {
	if !validJSON(body) {
		return nil, true, errorf("", "the body is not valid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, _ := dec.Token()
	if d, ok := tok.(json.Delim); ok && d == '[' {
		if tok, _ := dec.Token(); tok == json.Delim('{') {
			pairs, _ = lexObject(dec)
		}
		return pairs, false, errorf("", "one alert per request: the body is a JSON array; send one object")
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, false, errorf("", "a JSON body must be one object of fields")
	}
	pairs, first := lexObject(dec)
	if dec.More() {
		return pairs, false, errorf("", "one alert per request: the body holds more than one JSON value")
	}
	return pairs, false, first
}

// lexObject reads the members of an object whose '{' was just read, up
// to its '}', from a decoder of valid JSON. It reports the first value
// that is not a string, number or boolean.
func lexObject(dec *json.Decoder) ([]pair, *Error) {
	var pairs []pair
	var first *Error
	for dec.More() {
		tok, _ := dec.Token()
		name, _ := tok.(string)
		k := lowerASCII(strings.TrimSpace(name))
		tok, _ = dec.Token()
		switch v := tok.(type) {
		case string:
			pairs = append(pairs, pair{k, strings.TrimSpace(v)})
		case json.Number:
			pairs = append(pairs, pair{k, v.String()})
		case bool:
			if v {
				pairs = append(pairs, pair{k, "true"})
			} else {
				pairs = append(pairs, pair{k, "false"})
			}
		case nil:
			first = firstErr(first, errorf(safeField(k), "%s must be a string, a number or a boolean, not null", fieldName(k)))
		case json.Delim:
			first = firstErr(first, errorf(safeField(k), "%s must be a string, a number or a boolean: nested objects and arrays are not part of the language", fieldName(k)))
			_ = skipNested(dec)
		}
	}
	_, _ = dec.Token() // the closing '}'
	return pairs, first
}

// safeField is k for Error.Field when it may be repeated, else "".
func safeField(k string) string {
	if safeName(k) {
		return k
	}
	return ""
}

// skipNested reads the rest of an object or array whose opening
// delimiter was just read.
func skipNested(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return errJSONSyntax
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

func firstErr(first, e *Error) *Error {
	if first != nil {
		return first
	}
	return e
}
