package tunnel_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"tradebridge/agent"
	"tradebridge/agent/sysproxy"
	"tradebridge/agent/tunnel"
	"tradebridge/internal/systemtest"
	"tradebridge/internal/testkit"
	"tradebridge/protocol"
)

// TestTunnelThroughConnectProxy runs a real relay behind HTTPS and an
// agent configured with a proxy: the agent's tunnel goes through the
// proxy's CONNECT, the agent serves a bot's call, and its diagnostics
// and log say which proxy it used, without the proxy's password.
func TestTunnelThroughConnectProxy(t *testing.T) {
	t.Parallel()
	s := systemtest.New(t)
	front, roots := testkit.TLSFront(t, s.Addr)
	proxy := testkit.NewConnectProxy(t, 0)
	withPassword := strings.Replace(proxy.URL, "http://", "http://trader:secretpw@", 1)
	resolver, err := sysproxy.New(sysproxy.Options{Proxy: withPassword})
	require.NoError(t, err)

	ra := s.StartAgentWith("alice", func(o *agent.Options) {
		o.RelayURL = "https://" + front
		o.Tunnel.Proxy = resolver
		o.Tunnel.TLSConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	})
	targets := proxy.Targets()
	require.NotEmpty(t, targets, "the tunnel went through the proxy")
	for _, target := range targets {
		assert.Equal(t, front, target, "the proxy was asked for the relay only")
	}

	r := s.Do("GET", "/v1/api/accounts", s.Users["alice"].APIToken, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	assert.True(t, r.Success)

	d := ra.Agent.Diagnostics(context.Background())
	require.NotNil(t, d.Tunnel.Proxy)
	assert.Equal(t, protocol.ProxyDiagnostic{Source: "config", URL: proxy.URL}, *d.Tunnel.Proxy)

	lines := s.Logs.FilterMessage("the tunnel goes through a proxy").All()
	require.NotEmpty(t, lines)
	fields := lines[0].ContextMap()
	assert.Equal(t, proxy.URL, fields["proxy"])
	assert.Equal(t, "config", fields["proxySource"])
	for _, e := range s.Logs.All() {
		for _, v := range e.ContextMap() {
			if s, ok := v.(string); ok {
				assert.NotContains(t, s, "secretpw", "the proxy's password is never logged")
			}
		}
	}
}

// TestProxyAskingForAuthentication: a proxy that answers 407 gives a
// sentence that says so, in Status and in the log.
func TestProxyAskingForAuthentication(t *testing.T) {
	t.Parallel()
	proxy := testkit.NewConnectProxy(t, http.StatusProxyAuthRequired)
	resolver, err := sysproxy.New(sysproxy.Options{Proxy: proxy.URL})
	require.NoError(t, err)
	core, logs := observer.New(zapcore.InfoLevel)
	c, err := tunnel.New(tunnel.Options{
		RelayURL: "https://relay.example", // never reached: the proxy refuses first
		Token:    "tb_agent_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG",
		Hello:    func(context.Context) (protocol.Hello, error) { return protocol.Hello{}, nil },
		Handler:  nopHandler{},
		Logger:   zap.New(core),
		Proxy:    resolver,
	})
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(context.Background())
	}()
	defer func() {
		c.Close()
		<-done
	}()
	require.Eventually(t, func() bool { return c.Status().LastError != "" }, testkit.Medium, testkit.Tick)
	st := c.Status()
	assert.Contains(t, st.LastError, "the proxy asks for authentication (HTTP 407)")
	assert.Contains(t, st.LastError, "NTLM")
	require.NotNil(t, st.Proxy)
	assert.Equal(t, protocol.ProxyDiagnostic{Source: "config", URL: proxy.URL}, *st.Proxy)
	assert.Contains(t, proxy.Targets(), "relay.example:443")
	require.Eventually(t, func() bool {
		return logs.FilterMessageSnippet("the proxy asks for authentication").Len() > 0
	}, testkit.Medium, testkit.Tick)
	assert.Equal(t, zapcore.ErrorLevel, logs.FilterMessageSnippet("the proxy asks for authentication").All()[0].Level)
}

type nopHandler struct{}

func (nopHandler) Handle(context.Context, *protocol.Request) (json.RawMessage, *protocol.Error) {
	return nil, nil
}
