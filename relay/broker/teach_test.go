package broker

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/errcode"
)

// A link body's value of the wrong type says what the field wants, never
// the value sent.
func TestReadObjectWrongTypeSaysTheShape(t *testing.T) {
	t.Parallel()
	body := `{"env":"demo","username":"u","password":"p","appId":"a","appVersion":"1","cid":"SECRETCID","sec":"s"}`
	r := httptest.NewRequest(http.MethodPost, "/v1/tv/link", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	var dst linkBody
	e := readObject(httptest.NewRecorder(), r, &dst, linkRequired, linkOptional)
	require.NotNil(t, e)
	require.Equal(t, errcode.InvalidField, e.Code)
	require.Equal(t, "a field has a value of the wrong type: cid wants a whole number", e.Detail)
	require.NotContains(t, e.Detail, "SECRETCID")
}
