package httpapi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/httpapi"
)

func TestValidate(t *testing.T) {
	manyKeys := func(n int, dupAt int) string {
		var b strings.Builder
		b.WriteByte('{')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			k := i
			if i == dupAt {
				k = 0
			}
			fmt.Fprintf(&b, `"k%d":%d`, k, i)
		}
		b.WriteByte('}')
		return b.String()
	}
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

	tests := []struct {
		name       string
		in         string
		depth      int
		want       error // nil, ErrInvalidJSON, ErrDuplicateKey or ErrTooDeep
		wantOffset int64 // checked when want != nil and wantOffset >= 0
	}{
		{name: "object", in: `{"a":1,"b":[true,false,null],"c":{"d":"e"}}`},
		{name: "scalar top level", in: ` 12 `},
		{name: "string top level", in: `"x"`},
		{name: "whitespace everywhere", in: " \t\r\n{ \"a\" : [ 1 , 2 ] } \n"},
		{name: "numbers", in: `[0,-0,1.5,-1.5e10,1E+2,1e-2,123456789012345678901234567890]`},
		{name: "escapes", in: `["\"\\\/\b\f\n\r\t","\u00e9\uD834\uDD1E","\u0000"]`},
		{name: "utf8", in: `{"é":"日本語 🎉"}`},
		{name: "same key in sibling objects", in: `[{"a":1},{"a":2}]`},
		{name: "same key in parent and child", in: `{"a":{"a":1}}`},
		{name: "keys differing by case", in: `{"a":1,"A":2}`},
		{name: "empty key once", in: `{"":1}`},
		{name: "many distinct keys", in: manyKeys(100, -1)},
		{name: "depth at limit", in: nest(4), depth: 4},

		{name: "empty", in: ``, want: httpapi.ErrInvalidJSON, wantOffset: 0},
		{name: "only space", in: `   `, want: httpapi.ErrInvalidJSON, wantOffset: 3},
		{name: "trailing data", in: `{} {}`, want: httpapi.ErrInvalidJSON, wantOffset: 3},
		{name: "trailing comma object", in: `{"a":1,}`, want: httpapi.ErrInvalidJSON, wantOffset: 7},
		{name: "trailing comma array", in: `[1,]`, want: httpapi.ErrInvalidJSON, wantOffset: 3},
		{name: "unclosed", in: `{"a":[1`, want: httpapi.ErrInvalidJSON, wantOffset: 7},
		{name: "mismatched close", in: `[1}`, want: httpapi.ErrInvalidJSON, wantOffset: 2},
		{name: "unquoted key", in: `{a:1}`, want: httpapi.ErrInvalidJSON, wantOffset: 1},
		{name: "single quotes", in: `['a']`, want: httpapi.ErrInvalidJSON, wantOffset: 1},
		{name: "NaN", in: `{"a":NaN}`, want: httpapi.ErrInvalidJSON, wantOffset: 5},
		{name: "Infinity", in: `[Infinity]`, want: httpapi.ErrInvalidJSON, wantOffset: 1},
		{name: "minus Infinity", in: `[-Infinity]`, want: httpapi.ErrInvalidJSON, wantOffset: 2},
		{name: "leading zero", in: `[01]`, want: httpapi.ErrInvalidJSON, wantOffset: 2},
		{name: "bare minus", in: `[-]`, want: httpapi.ErrInvalidJSON, wantOffset: 2},
		{name: "dot without digits", in: `[1.]`, want: httpapi.ErrInvalidJSON, wantOffset: 3},
		{name: "exponent without digits", in: `[1e+]`, want: httpapi.ErrInvalidJSON, wantOffset: 4},
		{name: "plus sign", in: `[+1]`, want: httpapi.ErrInvalidJSON, wantOffset: 1},
		{name: "hex number", in: `[0x1]`, want: httpapi.ErrInvalidJSON, wantOffset: 2},
		{name: "truncated literal", in: `[tru]`, want: httpapi.ErrInvalidJSON, wantOffset: 4},
		{name: "literal case", in: `[True]`, want: httpapi.ErrInvalidJSON, wantOffset: 1},
		{name: "control char in string", in: "[\"a\tb\"]", want: httpapi.ErrInvalidJSON, wantOffset: 3},
		{name: "bad escape", in: `["\x"]`, want: httpapi.ErrInvalidJSON, wantOffset: 2},
		{name: "short unicode escape", in: `["\u12"]`, want: httpapi.ErrInvalidJSON, wantOffset: 6},
		{name: "lone high surrogate", in: `["\uD800"]`, want: httpapi.ErrInvalidJSON, wantOffset: 2},
		{name: "lone low surrogate", in: `["\uDC00"]`, want: httpapi.ErrInvalidJSON, wantOffset: 2},
		{name: "high surrogate then letter escape", in: `["\uD800\n"]`, want: httpapi.ErrInvalidJSON, wantOffset: 2},
		{name: "two high surrogates", in: `["\uD800\uD800"]`, want: httpapi.ErrInvalidJSON, wantOffset: 2},
		{name: "surrogate in key", in: `{"\uDFFF":1}`, want: httpapi.ErrInvalidJSON, wantOffset: 2},
		{name: "invalid utf8", in: "[\"\xff\"]", want: httpapi.ErrInvalidJSON, wantOffset: 2},
		{name: "overlong utf8", in: "[\"\xc0\xaf\"]", want: httpapi.ErrInvalidJSON, wantOffset: 2},
		{name: "utf8 surrogate", in: "[\"\xed\xa0\x80\"]", want: httpapi.ErrInvalidJSON, wantOffset: 2},
		{name: "byte order mark", in: "\xef\xbb\xbf{}", want: httpapi.ErrInvalidJSON, wantOffset: 0},
		{name: "unterminated string", in: `["abc`, want: httpapi.ErrInvalidJSON, wantOffset: 5},
		{name: "missing colon", in: `{"a" 1}`, want: httpapi.ErrInvalidJSON, wantOffset: 5},
		{name: "missing comma", in: `[1 2]`, want: httpapi.ErrInvalidJSON, wantOffset: 3},

		{name: "duplicate key", in: `{"a":1,"a":2}`, want: httpapi.ErrDuplicateKey, wantOffset: 7},
		{name: "duplicate key nested", in: `{"x":[{"o":{"b":1,"c":2,"b":3}}]}`, want: httpapi.ErrDuplicateKey, wantOffset: 24},
		{name: "duplicate after unescaping", in: `{"a":1,"\u0061":2}`, want: httpapi.ErrDuplicateKey, wantOffset: 7},
		{name: "duplicate both escaped", in: `{"\n":1,"\u000a":2}`, want: httpapi.ErrDuplicateKey, wantOffset: 8},
		{name: "duplicate surrogate pair", in: `{"🎉":1,"\ud83c\udf89":2}`, want: httpapi.ErrDuplicateKey, wantOffset: 10},
		{name: "duplicate empty key", in: `{"":1,"":2}`, want: httpapi.ErrDuplicateKey, wantOffset: 6},
		{name: "duplicate among many keys", in: manyKeys(100, 70), want: httpapi.ErrDuplicateKey, wantOffset: -1},
		{name: "duplicate at set threshold", in: manyKeys(17, 16), want: httpapi.ErrDuplicateKey, wantOffset: -1},
		{name: "duplicate after closing child", in: `{"a":{"b":1},"a":2}`, want: httpapi.ErrDuplicateKey, wantOffset: 13},

		{name: "too deep", in: nest(5), depth: 4, want: httpapi.ErrTooDeep, wantOffset: 4},
		{name: "too deep default", in: nest(33), want: httpapi.ErrTooDeep, wantOffset: 32},
		{name: "too deep objects", in: `{"a":{"b":{}}}`, depth: 2, want: httpapi.ErrTooDeep, wantOffset: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := httpapi.Validate([]byte(tt.in), tt.depth)
			if tt.want == nil {
				require.NoError(t, err)
				require.True(t, json.Valid([]byte(tt.in)), "encoding/json disagrees")
				return
			}
			require.Error(t, err)
			require.ErrorIs(t, err, httpapi.ErrInvalidJSON)
			require.ErrorIs(t, err, tt.want)
			if tt.want == httpapi.ErrInvalidJSON {
				require.False(t, errors.Is(err, httpapi.ErrDuplicateKey))
				require.False(t, errors.Is(err, httpapi.ErrTooDeep))
			}
			var se *httpapi.SyntaxError
			require.ErrorAs(t, err, &se)
			if tt.wantOffset >= 0 {
				require.Equal(t, tt.wantOffset, se.Offset, se.Reason)
			}
			require.Contains(t, err.Error(), se.Reason)
		})
	}
}

// TestValidateNeverQuotesInput checks that error texts are fixed.
func TestValidateNeverQuotesInput(t *testing.T) {
	const marker = "SECRETMARKER"
	for _, in := range []string{
		`{"` + marker + `":1,"` + marker + `":2}`,
		`{"a":"` + marker + "\x01" + `"}`,
		`{"a":` + marker + `}`,
		`{"a":1} ` + marker,
		`["` + marker + `\q"]`,
	} {
		err := httpapi.Validate([]byte(in), 0)
		require.Error(t, err, in)
		require.NotContains(t, err.Error(), marker)
	}
}

// TestValidateDoesNotModifyInput guards the zero-copy key handling.
func TestValidateDoesNotModifyInput(t *testing.T) {
	in := []byte(`{"\u0061":{"b\n":1},"c":[{"\ud83c\udf89":2}]}`)
	orig := append([]byte(nil), in...)
	require.NoError(t, httpapi.Validate(in, 0))
	require.Equal(t, orig, in)
}

// orderBody is a typical place-order request, about 300 bytes.
var orderBody = []byte(`{"action":"Buy","instrument":"ES 03-26","orderType":"Limit","quantity":2,"limitPrice":5012.25,"timeInForce":"Day","orderId":"bot-7f3a9c21-0001","strategyTag":"mean-reversion\u002dv2","maxPositions":3,"requireMarketPosition":"Flat","smartOptions":{"trailTicks":8,"breakEven":true,"notes":"entry on the open"}}`)

func BenchmarkValidate(b *testing.B) {
	if err := httpapi.Validate(orderBody, 0); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(orderBody)))
	b.ReportAllocs()
	for b.Loop() {
		if err := httpapi.Validate(orderBody, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzValidate checks that Validate never panics, accepts nothing that
// encoding/json refuses, and refuses what encoding/json accepts only for the
// service's own rules: duplicate keys, depth, UTF-8 and surrogates.
func FuzzValidate(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.json"))
	require.NoError(f, err)
	require.NotEmpty(f, files)
	for _, name := range files {
		data, err := os.ReadFile(name)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add(orderBody)
	f.Fuzz(func(t *testing.T, data []byte) {
		err := httpapi.Validate(data, 512)
		valid := json.Valid(data)
		if err == nil {
			if !valid {
				t.Fatalf("Validate accepted what encoding/json refuses: %q", data)
			}
			return
		}
		var se *httpapi.SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("error %T is not a *SyntaxError", err)
		}
		if valid && !errors.Is(err, httpapi.ErrDuplicateKey) && !errors.Is(err, httpapi.ErrTooDeep) &&
			se.Reason != "invalid UTF-8" && !strings.Contains(se.Reason, "surrogate") {
			t.Fatalf("Validate refused valid JSON (%v): %q", err, data)
		}
	})
}
