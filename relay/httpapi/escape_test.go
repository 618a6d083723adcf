package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/httpapi"
)

// A detail or a value holding "&", "<" or ">" reaches the caller as
// written, not as encoding/json's HTML escapes, on every writer of the
// package.
func TestNoHTMLEscaping(t *testing.T) {
	t.Parallel()
	const text = "S&P <E-mini> futures"
	for _, tc := range []struct {
		name  string
		write func() []byte
	}{
		{"WriteError", func() []byte {
			rec := httptest.NewRecorder()
			httpapi.WriteError(rec, http.StatusBadRequest, httpapi.Error{Code: "invalid_argument", Detail: text})
			return rec.Body.Bytes()
		}},
		{"Write", func() []byte {
			rec := httptest.NewRecorder()
			httpapi.Write(rec, http.StatusOK, map[string]string{"name": text})
			return rec.Body.Bytes()
		}},
		{"Write of a raw message", func() []byte {
			rec := httptest.NewRecorder()
			httpapi.Write(rec, http.StatusOK, json.RawMessage(`{"name":"`+text+`"}`))
			return rec.Body.Bytes()
		}},
		{"WriteWithTop", func() []byte {
			rec := httptest.NewRecorder()
			httpapi.WriteWithTop(rec, http.StatusOK, nil, map[string]any{"note": text})
			return rec.Body.Bytes()
		}},
		{"EncodeError", func() []byte {
			b, err := httpapi.EncodeError(httpapi.Error{Code: "invalid_argument", Detail: text})
			require.NoError(t, err)
			return b
		}},
		{"Marshal", func() []byte {
			b, err := httpapi.Marshal(struct {
				Detail string `json:"detail"`
			}{text})
			require.NoError(t, err)
			require.NotContains(t, string(b), "\n", "no trailing newline, as json.Marshal")
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw := string(tc.write())
			require.Contains(t, raw, text, raw)
			require.NotContains(t, raw, `\u0026`, raw)
			require.NotContains(t, raw, `\u003c`, raw)
		})
	}
}
