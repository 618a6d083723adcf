package httpapi_test

import (
	"crypto/tls"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/httpapi"
)

func TestSameOrigin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		host, origin string
		tls          bool
		want         bool
	}{
		{"relay.example.com", "https://relay.example.com", true, true},
		{"relay.example.com", "https://RELAY.example.com", true, true},
		{"relay.example.com", "http://relay.example.com", true, false}, // a downgraded page
		{"relay.example.com", "http://relay.example.com", false, true},
		{"relay.example.com", "https://relay.example.com", false, true}, // behind a proxy that ends TLS
		{"127.0.0.1:8080", "http://127.0.0.1:8080", false, true},
		{"127.0.0.1:8080", "http://127.0.0.1:8081", false, false},
		{"relay.example.com", "https://evil.example", true, false},
		{"relay.example.com", "https://relay.example.com.evil.example", true, false},
		{"relay.example.com", "https://relay.example.com/path", true, false},
		{"relay.example.com", "https://user@relay.example.com", true, false},
		{"relay.example.com", "null", true, false},
		{"relay.example.com", "", true, false},
		{"relay.example.com", "ws://relay.example.com", false, false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = tc.host
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if tc.tls {
			r.TLS = &tls.ConnectionState{}
		} else {
			r.TLS = nil
		}
		require.Equal(t, tc.want, httpapi.SameOrigin(r), "%s from %q (tls %v)", tc.host, tc.origin, tc.tls)
	}
}
