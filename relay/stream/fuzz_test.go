package stream

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// frameMarker is put in seeds: no detail may repeat it.
const frameMarker = "ZZMARKER"

// fuzzMaxInstruments is the instrument limit FuzzClientFrame reads
// subscriptions with.
const fuzzMaxInstruments = 5

// FuzzClientFrame decodes a client frame of /ws/stream as the socket does
// (parseFrame, then parseInstruments or parseStreamPnl by action) and
// checks that
//
//   - a refusal has one of the stream's documented codes, a detail that
//     never repeats the client's text, and fields that name only what
//     looks like a field name; invalid_json exactly when httpapi.Validate
//     refuses the frame;
//   - an accepted frame is a valid JSON object with a known action, no
//     field its action does not take, and an id that is a string of at
//     most 128 bytes or a number; re-encoded, it decodes to the same
//     frame;
//   - accepted instruments are 1 to the limit distinct names, trimmed,
//     upper case, each in the form of protocol.ParseInstrument;
//   - an accepted P&L interval lies within MinPnlInterval and
//     MaxPnlInterval.
func FuzzClientFrame(f *testing.F) {
	for _, s := range []string{
		`{"action":"ping"}`, `{"action":"ping","id":7}`, `{"action":"ping","id":"a-1"}`, `{"action":"ping","id":1e400}`,
		`{"action":"ping","id":null}`, `{"action":"ping","id":{"x":1}}`, `{"action":"ping","id":"` + strings.Repeat("x", 129) + `"}`,
		`{"action":"subscribe","instruments":["ES"," es 12-26 ","ESZ26","esz6","NQ"]}`,
		`{"action":"subscribe","instruments":["ES","ES","es"]}`, `{"action":"subscribe","instruments":[]}`,
		`{"action":"subscribe","instruments":["A","B","C","D","E","F"]}`, `{"action":"subscribe","instruments":["ES  12-26"]}`,
		`{"action":"unsubscribe","instruments":["ABCDEFZ26"]}`, `{"action":"unsubscribe","instruments":"ES"}`,
		`{"action":"subscribe","instruments":[null]}`, `{"action":"subscribe","instruments":["ZZMARKER"]}`,
		`{"action":"streamPnl","enabled":true}`, `{"action":"streamPnl","enabled":true,"interval":250}`,
		`{"action":"streamPnl","enabled":false,"interval":null}`, `{"action":"streamPnl","enabled":true,"interval":249}`,
		`{"action":"streamPnl","enabled":true,"interval":60000.5}`, `{"action":"streamPnl","enabled":"yes"}`,
		`{"action":"streamPnl","enabled":true,"interval":1e300}`,
		`{"action":"rpc","id":1,"api":"GetQuote","args":{"instrument":"ES"}}`, `{"action":"rpc","api":"x","ZZMARKER":1}`,
		`{"action":"nope"}`, `{"action":1}`, `{}`, `[]`, `"ping"`, ``, `{"action":"ping","action":"ping"}`,
		`{"action":"ping","\u0061ction":"ping"}`, `{"action":"ping"} x`, "{\"action\":\"ping\",\"id\":\"\xff\"}",
		`{"action":"ping","é":1}`, `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	} {
		f.Add([]byte(s))
	}
	codes := map[string]bool{errcode.InvalidJSON: true, errcode.InvalidFrame: true, errcode.UnknownAction: true, errcode.InvalidArgument: true, errcode.InvalidInstrument: true}
	checkRefusal := func(t *testing.T, data []byte, e *frameError) {
		t.Helper()
		if !codes[e.code] || e.detail == "" || strings.Contains(e.detail, frameMarker) {
			t.Fatalf("%q: %+v", data, e)
		}
		for _, fe := range e.fields {
			if fe.Path != "(unnamed)" && !fieldNameRE.MatchString(fe.Path) {
				t.Fatalf("%q: field %+v", data, fe)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, e := parseFrame(data)
		valid := httpapi.Validate(data, maxDepth) == nil
		if e != nil {
			checkRefusal(t, data, e)
			if !e.bad || (e.code == errcode.InvalidJSON) == valid {
				t.Fatalf("%q: %+v (valid JSON: %v)", data, e, valid)
			}
			return
		}
		if !valid || bytes.TrimLeft(data, " \t\r\n")[0] != '{' {
			t.Fatalf("accepted %q", data)
		}
		allowed, known := allowedFields[fr.action]
		if !known {
			t.Fatalf("%q: accepted action %q", data, fr.action)
		}
		for name := range fr.fields {
			if name != "action" && name != "id" && !slices.Contains(allowed, name) {
				t.Fatalf("%q: accepted field %q for %s", data, name, fr.action)
			}
		}
		if fr.id != nil {
			id := bytes.TrimSpace(fr.id)
			var s string
			var n json.Number
			if len(id) > maxIDLen || json.Unmarshal(id, &s) != nil && json.Unmarshal(id, &n) != nil {
				t.Fatalf("%q: accepted id %s", data, id)
			}
		}
		// Re-encoded as sent: the id's bound is on its bytes as sent,
		// which an escaping encoder (& as \u0026) would lengthen.
		var buf bytes.Buffer
		je := json.NewEncoder(&buf)
		je.SetEscapeHTML(false)
		if err := je.Encode(fr.fields); err != nil {
			t.Fatal(err)
		}
		enc := bytes.TrimSpace(buf.Bytes())
		again, e2 := parseFrame(enc)
		if e2 != nil || again.action != fr.action || !sameJSON(again.id, fr.id) || !reflect.DeepEqual(keys(again.fields), keys(fr.fields)) {
			t.Fatalf("%q re-encodes as %s, which parses to %+v, %+v", data, enc, again, e2)
		}

		switch fr.action {
		case actionSubscribe, actionUnsubscribe:
			names, e := parseInstruments(fr, fuzzMaxInstruments)
			if e != nil {
				checkRefusal(t, data, e)
				return
			}
			if len(names) == 0 || len(names) > fuzzMaxInstruments {
				t.Fatalf("%q: %d instruments", data, len(names))
			}
			for i, n := range names {
				if _, err := protocol.ParseInstrument(n); err != nil || n != protocol.NormalizeInstrument(n) || slices.Contains(names[:i], n) {
					t.Fatalf("%q: accepted instruments %q", data, names)
				}
			}
		case actionStreamPnl:
			_, interval, e := parseStreamPnl(fr)
			if e != nil {
				checkRefusal(t, data, e)
				return
			}
			if interval < MinPnlInterval || interval > MaxPnlInterval || interval%time.Millisecond != 0 {
				t.Fatalf("%q: interval %v", data, interval)
			}
		}
	})
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	// Compared as values: json.Marshal escapes <, > and & ("\u0026"),
	// which spells the same string.
	va, oka := decodeNumbers(a)
	vb, okb := decodeNumbers(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}

// decodeNumbers decodes one JSON value, keeping numbers as written.
func decodeNumbers(raw json.RawMessage) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	return v, d.Decode(&v) == nil
}

func keys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
