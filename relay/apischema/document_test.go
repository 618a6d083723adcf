package apischema

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// A served document is written as the relay writes every answer: without
// HTML escaping, so a description's "P&L" reads as written.
func TestServeDocumentNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	h := ServeDocument(func() any { return map[string]any{"description": "P&L <daily>"} })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/doc", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	require.Contains(t, rec.Body.String(), `"P&L <daily>"`)
	require.NotContains(t, rec.Body.String(), `\u0026`)
	require.Equal(t, rec.Header().Get("Content-Length"), strconv.Itoa(rec.Body.Len()))
}
