package tradeapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay"
	"tradebridge/relay/store"
	"tradebridge/relay/tradeapi"
)

// Every route of the table answers every other method on its concrete path
// with 405 method_not_allowed and the right Allow header, also where
// another route's wildcard would match the path (GET …/orders/place is not
// GetOrder of an order named "place"). The relay's own wiring is under
// test, so this runs the whole relay, without an agent.
func TestWrongMethodEveryRoute(t *testing.T) {
	t.Parallel()
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	r, err := relay.New(relay.Options{Store: st})
	require.NoError(t, err)
	srv := httptest.NewServer(r.Handler())
	t.Cleanup(func() {
		srv.Close()
		r.Close()
		st.Close()
	})
	concrete := strings.NewReplacer("{account}", "Sim101", "{id}", "s1", "{orderId}", "o1")
	served := map[string][]string{} // concrete path → methods of the table
	for _, rt := range tradeapi.Routes() {
		p := concrete.Replace(rt[1])
		served[p] = append(served[p], rt[0])
	}
	order := []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
	cases := 0
	for path, methods := range served {
		var allow []string
		for _, m := range order {
			if slices.Contains(methods, m) {
				allow = append(allow, m)
			}
		}
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			if slices.Contains(methods, m) || (m == "HEAD" && slices.Contains(methods, "GET")) {
				continue
			}
			req, err := http.NewRequest(m, srv.URL+path, nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer tb_api_whatever")
			res, err := srv.Client().Do(req)
			require.NoError(t, err)
			var body strings.Builder
			_, _ = io.Copy(&body, res.Body)
			res.Body.Close()
			require.Equal(t, http.StatusMethodNotAllowed, res.StatusCode, "%s %s: %s", m, path, body.String())
			require.Equal(t, strings.Join(allow, ", "), res.Header.Get("Allow"), "%s %s", m, path)
			if m != "HEAD" {
				require.Contains(t, body.String(), `"error":"method_not_allowed"`, "%s %s", m, path)
			}
			cases++
		}
	}
	require.Greater(t, cases, 5*len(served))
	t.Logf("%d wrong methods on %d paths answered 405", cases, len(served))
}
