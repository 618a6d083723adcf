package sysproxy

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWinHTTP calls the real WinHTTP: the machine's default proxy
// (`netsh winhttp show proxy` shows the same) and automatic
// configuration for a public URL. Whatever the machine's settings, the
// calls succeed and what they return parses.
func TestWinHTTP(t *testing.T) {
	sys := DefaultSystem()
	require.NotNil(t, sys)
	def, err := sys.DefaultProxy()
	require.NoError(t, err, "WinHttpGetDefaultProxyConfiguration")
	if def.Proxy != "" {
		t.Logf("WinHTTP proxy %q, bypass %q", def.Proxy, def.Bypass)
		assert.True(t, PickProxy(def.Proxy, "https") != nil || PickProxy(def.Proxy, "http") != nil,
			"the machine's proxy list names a proxy the agent understands")
	}
	start := time.Now()
	auto, ok, err := sys.AutoProxy(context.Background(), mustURL(t, "https://relay.example"), "")
	t.Logf("automatic configuration: ok=%v proxy=%q bypass=%q err=%v in %s", ok, auto.Proxy, auto.Bypass, err, time.Since(start))
	if err == nil && ok && auto.Proxy != "" {
		assert.NotNil(t, PickProxy(auto.Proxy, "https"))
	}

	r, err := New(Options{})
	require.NoError(t, err)
	c := r.Choose(context.Background(), mustURL(t, "wss://relay.example/v1/agent/connect"))
	t.Logf("the agent would use %+v", c.Report())
	assert.Contains(t, []Source{SourceEnvironment, SourceWinHTTP, SourcePAC, SourceDirect}, c.Source)
}

// TestWinHTTPUnreachablePAC points automatic configuration at a PAC
// script nobody serves: WinHTTP fails, and the resolver connects
// directly rather than failing the connection.
func TestWinHTTPUnreachablePAC(t *testing.T) {
	_, _, err := DefaultSystem().AutoProxy(context.Background(), mustURL(t, "https://relay.example"), "http://127.0.0.1:1/proxy.pac")
	assert.Error(t, err)
	r, err := New(Options{PACURL: "http://127.0.0.1:1/proxy.pac", Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	if def, _ := DefaultSystem().DefaultProxy(); def.Proxy != "" {
		t.Skip("the machine has a WinHTTP proxy, which comes before automatic configuration")
	}
	assert.Equal(t, SourceDirect, r.Choose(context.Background(), mustURL(t, "https://relay.example")).Source)
}
