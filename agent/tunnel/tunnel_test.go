package tunnel

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConnectURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:8080", "ws://127.0.0.1:8080/v1/agent/connect"},
		{"https://relay.example", "wss://relay.example/v1/agent/connect"},
		{"https://relay.example/", "wss://relay.example/v1/agent/connect"},
		{"https://relay.example/base", "wss://relay.example/base/v1/agent/connect"},
		{"HTTPS://relay.example", "wss://relay.example/v1/agent/connect"},
		{"wss://relay.example", "wss://relay.example/v1/agent/connect"},
		{"ftp://relay.example", ""},
		{"relay.example", ""},
		{"https://user:pw@relay.example", ""},
		{"https://relay.example/?token=x", ""},
		{"", ""},
	} {
		got, err := ConnectURL(tc.in)
		if tc.want == "" {
			require.Error(t, err, tc.in)
			require.NotContains(t, err.Error(), "pw", "errors never echo credentials")
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got)
	}
}
