package tunnel

import (
	"testing"
	"time"

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

func TestBackoffFullJitter(t *testing.T) {
	b := newBackoff(500*time.Millisecond, 30*time.Second)
	b.rand = func() float64 { return 0.999999 } // the ceiling, nearly
	var got []time.Duration
	for range 9 {
		got = append(got, b.next().Round(time.Millisecond))
	}
	require.Equal(t, []time.Duration{
		500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second,
	}, got)
	b.reset()
	require.Equal(t, 500*time.Millisecond, b.next().Round(time.Millisecond))

	b.rand = func() float64 { return 0 }
	require.Equal(t, time.Duration(0), b.next(), "full jitter reaches zero")
	require.Equal(t, 15*time.Second, b.patient(), "patient waits at least half the cap")

	for range 100 { // far past any shift overflow
		b.rand = func() float64 { return 0.5 }
		d := b.next()
		require.GreaterOrEqual(t, d, time.Duration(0))
		require.LessOrEqual(t, d, 30*time.Second)
	}
}
