package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"tradebridge/relay/errcode"
)

// fuzzDepth is the depth limit the comparison with encoding/json uses:
// encoding/json's own.
const fuzzDepth = 10000

// addCorpus seeds f with every document of the JSONTestSuite corpus (see
// conformance_test.go) and with documents about our own rules.
func addCorpus(f *testing.F, add func([]byte)) {
	entries, err := os.ReadDir(corpusDirInternal)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(corpusDirInternal, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		add(data)
	}
	for _, s := range []string{
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"x":{"a":1},"y":{"a":1}}`, `[NaN]`, `[-Infinity]`,
		`{"k":"\ud800"}`, `{"k":"\udc00\ud800"}`, `{"k":"\ud83d\ude00"}`, "{\"k\":\"\xff\"}", `[[[[[[[[1]]]]]]]]`,
		`{"a":0,"b":1,"c":2,"d":3,"e":4,"f":5,"g":6,"h":7,"i":8,"j":9,"k":10,"l":11,"m":12,"n":13,"o":14,"p":15,"q":16,"a":17}`,
		` {"action":"Buy","quantity":2,"limitPrice":6800.25} `, `{"quantity":"2"}`, `{"legs":[{"qty":1.5}]}`, `1e400`,
		`{"ZZMARKER":"ZZMARKER"}`,
	} {
		add([]byte(s))
	}
}

// corpusDirInternal is conformance_test.go's corpusDir, which package
// httpapi_test holds.
var corpusDirInternal = filepath.Join("..", "..", "testdata", "jsontestsuite", "test_parsing")

var reasons = map[string]bool{reasonEnd: true, reasonChar: true, reasonTrailing: true, reasonUTF8: true,
	reasonControl: true, reasonEscape: true, reasonSurrogate: true, reasonNumber: true, reasonNaN: true,
	reasonDuplicate: true, reasonDepth: true}

// FuzzValidateOracle checks Validate against encoding/json and its own rules:
//
//   - it neither modifies data nor fails other than with a *SyntaxError
//     matching ErrInvalidJSON, with an offset inside data and one of the
//     fixed reasons (so its text never quotes data);
//   - what it accepts, json.Valid accepts; what json.Valid accepts, it
//     accepts unless the document breaks one of its further rules: invalid
//     UTF-8, an unpaired surrogate escape, or a duplicate key, which a
//     duplicate finder built on json.Decoder confirms (and never finds in
//     an accepted document);
//   - an accepted document is accepted with a depth limit equal to its
//     depth and refused with ErrTooDeep below it;
//   - an accepted document decodes (json.Number for numbers) and
//     re-encodes to a document it accepts again.
func FuzzValidateOracle(f *testing.F) {
	addCorpus(f, func(b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := bytes.Clone(data)
		err := Validate(data, fuzzDepth)
		if !bytes.Equal(orig, data) {
			t.Fatal("Validate modified its input")
		}
		valid := json.Valid(data)
		if err == nil {
			if !valid {
				t.Fatalf("Validate accepts %q, json.Valid does not", data)
			}
			if hasDuplicateKey(data) {
				t.Fatalf("Validate accepts %q, which has a duplicate key", data)
			}
			checkDepth(t, data)
			checkReencode(t, data)
			return
		}
		var se *SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, ErrInvalidJSON) || se.Offset < 0 || se.Offset > int64(len(data)) || !reasons[se.Reason] {
			t.Fatalf("Validate(%q): %#v", data, err)
		}
		if !valid {
			return
		}
		switch se.Reason {
		case reasonUTF8:
			if utf8.Valid(data) {
				t.Fatalf("Validate(%q): invalid UTF-8 in valid UTF-8", data)
			}
		case reasonSurrogate:
			if !bytes.Contains(data, []byte(`\u`)) {
				t.Fatalf("Validate(%q): a surrogate escape without escapes", data)
			}
		case reasonDuplicate:
			if !errors.Is(err, ErrDuplicateKey) || !hasDuplicateKey(data) {
				t.Fatalf("Validate(%q): a duplicate key that json.Decoder does not see", data)
			}
		default:
			t.Fatalf("Validate(%q): %v, but json.Valid accepts it", data, err)
		}
	})
}

// hasDuplicateKey reports whether some object of data, a document
// json.Valid accepts, holds two keys equal after unescaping. Invalid
// UTF-8 and unpaired surrogates decode to U+FFFD: the answer is exact for
// documents without them.
func hasDuplicateKey(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type level struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token is a key
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &level{object: v == '{', keys: map[string]bool{}, key: v == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.object && top.key {
				if top.keys[v] {
					return true
				}
				top.keys[v] = true
				top.key = false
				continue
			}
		}
		if top != nil && top.object {
			top.key = true
		}
	}
}

// depthOf returns the deepest nesting of arrays and objects in a valid
// document.
func depthOf(data []byte) int {
	depth, max, inString := 0, 0, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			max = maxInt(max, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return max
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func checkDepth(t *testing.T, data []byte) {
	t.Helper()
	d := depthOf(data)
	if d >= 1 {
		if err := Validate(data, d); err != nil {
			t.Fatalf("Validate(%q, %d), its depth: %v", data, d, err)
		}
	}
	if d >= 2 {
		if err := Validate(data, d-1); !errors.Is(err, ErrTooDeep) {
			t.Fatalf("Validate(%q, %d), below its depth: %v", data, d-1, err)
		}
	}
	if err := Validate(data, 0); (err == nil) != (d <= DefaultMaxDepth) {
		t.Fatalf("Validate(%q, default) of depth %d: %v", data, d, err)
	}
}

func checkReencode(t *testing.T, data []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("Validate accepts %q, encoding/json cannot decode it: %v", data, err)
	}
	enc, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%q decodes to %#v, which does not encode: %v", data, v, err)
	}
	if err := Validate(enc, fuzzDepth); err != nil {
		t.Fatalf("%q re-encodes as %q, which Validate refuses: %v", data, enc, err)
	}
}

// fuzzArgs is a destination of ReadJSON, like a route's arguments.
type fuzzArgs struct {
	Action     string   `json:"action"`
	Quantity   int      `json:"quantity"`
	LimitPrice *float64 `json:"limitPrice"`
	Nested     struct {
		X int `json:"x"`
	} `json:"nested"`
	Legs []struct {
		Qty int `json:"qty"`
	} `json:"legs"`
	Tags map[string]int `json:"tags"`
}

// fuzzPaths are the dotted paths of fuzzArgs' fields.
var fuzzPaths = map[string]bool{"action": true, "quantity": true, "limitPrice": true, "nested": true,
	"nested.x": true, "legs": true, "legs.qty": true, "tags": true}

// marker is put in seeds: no detail may repeat it.
const fuzzMarker = "ZZMARKER"

// FuzzReadJSON sends a body with a Content-Type (and, by mode, a hidden
// length or a Content-Encoding) to ReadJSON and checks that
//
//   - a refusal is one of its documented status and code pairs, with a
//     detail that does not repeat the caller's marker, and a cause that
//     matches the code: ErrUnsupportedContentType, *http.MaxBytesError,
//     ErrInvalidJSON, or a decoding error naming only the destination's
//     own fields;
//   - it accepts exactly an accepted Content-Type, a body within
//     MaxBytes, that Validate accepts within MaxDepth and that is an
//     object which encoding/json decodes into the destination, and then
//     decodes it as encoding/json does.
func FuzzReadJSON(f *testing.F) {
	addCorpus(f, func(b []byte) { f.Add(b, "application/json", uint8(0)) })
	for _, ct := range []string{"application/json; charset=utf-8", "Application/JSON;charset=\"UTF-8\"", "text/plain",
		"application/json; charset=latin1", "application/json; x=ZZMARKER", "application/json, text/plain", "", "application/json;"} {
		f.Add([]byte(`{"action":"Buy"}`), ct, uint8(0))
	}
	f.Add([]byte(`{"action":"Buy"}`), "application/json", uint8(1))
	f.Add([]byte(`{"action":"Buy"}`), "application/json", uint8(2))
	f.Add([]byte(`{"action":"Buy","pad":"`+strings.Repeat("x", 300)+`"}`), "application/json", uint8(0))
	f.Add([]byte(`{"nested":{"x":{"y":{"z":{"w":1}}}}}`), "application/json", uint8(0))
	f.Fuzz(func(t *testing.T, body []byte, ct string, mode uint8) {
		opts := ReadOptions{MaxBytes: 256, MaxDepth: 4}
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		if mode&1 != 0 {
			r.Body = io.NopCloser(struct{ io.Reader }{bytes.NewReader(body)})
			r.ContentLength = -1
		}
		if mode&2 != 0 {
			r.Header.Set("Content-Encoding", "gzip")
		}
		r.Header.Set("Content-Type", ct)
		var dst fuzzArgs
		e := ReadJSON(httptest.NewRecorder(), r, &dst, opts)

		ctOK := mode&2 == 0 && contentTypeOK(ct)
		if e == nil {
			var want fuzzArgs
			if !ctOK || int64(len(body)) > opts.MaxBytes || Validate(body, opts.MaxDepth) != nil ||
				firstByte(body) != '{' || json.Unmarshal(body, &want) != nil {
				t.Fatalf("ReadJSON accepted %q (%q, mode %d)", body, ct, mode)
			}
			if !reflect.DeepEqual(dst, want) {
				t.Fatalf("ReadJSON decoded %q as %+v, encoding/json as %+v", body, dst, want)
			}
			return
		}
		if e.Detail == "" || strings.Contains(e.Detail, fuzzMarker) || e.Unwrap() == nil {
			t.Fatalf("ReadJSON(%q, %q): %#v", body, ct, e)
		}
		var mbe *http.MaxBytesError
		switch {
		case e.Status == http.StatusUnsupportedMediaType && e.Code == errcode.UnsupportedContentType:
			if ctOK || !errors.Is(e, ErrUnsupportedContentType) {
				t.Fatalf("ReadJSON refused Content-Type %q (mode %d): %v", ct, mode, e)
			}
		case !ctOK:
			t.Fatalf("ReadJSON(%q) with Content-Type %q (mode %d): %v", body, ct, mode, e)
		case e.Status == http.StatusRequestEntityTooLarge && e.Code == errcode.BodyTooLarge:
			if int64(len(body)) <= opts.MaxBytes || !errors.As(e, &mbe) {
				t.Fatalf("ReadJSON refused %d bytes as too large: %v", len(body), e)
			}
		case int64(len(body)) > opts.MaxBytes:
			t.Fatalf("ReadJSON(%d bytes): %v", len(body), e)
		case e.Status == http.StatusBadRequest && e.Code == errcode.InvalidJSON:
			if !errors.Is(e, ErrInvalidJSON) {
				t.Fatalf("ReadJSON(%q): invalid_json without a syntax error: %v", body, e)
			}
			if err := Validate(body, opts.MaxDepth); err == nil && firstByte(body) == '{' {
				t.Fatalf("ReadJSON(%q): invalid_json for a valid object: %v", body, e)
			}
		case e.Status == http.StatusBadRequest && e.Code == errcode.InvalidField:
			var want fuzzArgs
			if Validate(body, opts.MaxDepth) != nil || json.Unmarshal(body, &want) == nil {
				t.Fatalf("ReadJSON(%q): invalid_field, but encoding/json decodes it", body)
			}
			for _, fe := range e.Fields {
				if !fuzzPaths[fe.Path] || fe.Code != errcode.FieldCodeWrongType {
					t.Fatalf("ReadJSON(%q): field %+v is none of the destination's", body, fe)
				}
			}
		default:
			t.Fatalf("ReadJSON(%q, %q): undocumented %d %s: %v", body, ct, e.Status, e.Code, e)
		}
	})
}

// contentTypeOK is ReadJSON's documented rule for Content-Type: one
// application/json, with no parameter but charset=utf-8 (any case).
func contentTypeOK(ct string) bool {
	if strings.EqualFold(ct, "application/json") {
		return true
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return false
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return false
		}
	}
	return true
}

// firstByte is the first byte of data after JSON white space, or 0.
func firstByte(data []byte) byte {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 {
		return t[0]
	}
	return 0
}
