package sysproxy

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

func TestPickProxy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, list, scheme, want string
	}{
		{"one generic for https", "proxy.corp:8080", "https", "http://proxy.corp:8080"},
		{"one generic for http", "proxy.corp:8080", "http", "http://proxy.corp:8080"},
		{"per scheme https", "http=a:80;https=b:443", "https", "http://b:443"},
		{"per scheme http", "http=a:80;https=b:443", "http", "http://a:80"},
		{"https entry before the generic one", "c:3128;https=b:443", "https", "http://b:443"},
		{"generic after a foreign entry", "http=a:80;c:3128", "https", "http://c:3128"},
		{"only another scheme's", "http=a:80", "https", ""},
		{"space separated: the first", "a:80 b:81", "https", "http://a:80"},
		{"semicolons and spaces", " ; a:80 ;  b:81", "https", "http://a:80"},
		{"a scheme on the proxy", "https=https://b:443", "https", "https://b:443"},
		{"a generic with http://", "http://a:8080", "https", "http://a:8080"},
		{"socks skipped", "socks=s:1080;a:80", "https", "http://a:80"},
		{"socks only", "socks=s:1080", "https", ""},
		{"no port", "proxy.corp", "https", "http://proxy.corp"},
		{"IPv6", "[fd00::1]:3128", "https", "http://[fd00::1]:3128"},
		{"malformed skipped", "https=:80;https=b:443", "https", "http://b:443"},
		{"a path is not a proxy", "a:80/x", "https", ""},
		{"upper case scheme key", "HTTPS=b:443", "https", "http://b:443"},
		{"empty", "", "https", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := PickProxy(tc.list, tc.scheme)
			if tc.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tc.want, got.String())
		})
	}
}

func TestBypassed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, list, target string
		want               bool
	}{
		{"<local> a plain name", "<local>", "https://relay", true},
		{"<local> not a dotted name", "<local>", "https://relay.example", false},
		{"<local> not an IP", "<local>", "https://10.0.0.1", false},
		{"wildcard suffix", "*.corp", "wss://relay.corp", true},
		{"wildcard suffix, deeper", "*.corp", "https://a.b.corp", true},
		{"wildcard suffix not the bare domain", "*.corp", "https://corp", false},
		{"leading dot", ".corp.example", "https://relay.corp.example", true},
		{"exact host", "relay.example", "https://relay.example", true},
		{"exact host, other host", "relay.example", "https://xrelay.example", false},
		{"case-insensitive", "RELAY.Example", "https://relay.EXAMPLE", true},
		{"IP wildcard", "10.*", "https://10.1.2.3:8443", true},
		{"IP wildcard, other", "10.*", "https://100.1.2.3", false},
		{"list with semicolons", "a.example;<local>;*.corp", "https://x.corp", true},
		{"list with commas and spaces", "a.example, b.example", "https://b.example", true},
		{"port matches", "relay.example:443", "wss://relay.example", true},
		{"port differs", "relay.example:8443", "https://relay.example", false},
		{"scheme matches", "https://relay.example", "wss://relay.example", true},
		{"scheme differs", "http://relay.example", "https://relay.example", false},
		{"middle wildcard", "relay-*.example", "https://relay-eu.example", true},
		{"loopback marker ignored", "<-loopback>", "https://relay", false},
		{"IPv6 entry", "[::1]", "https://[::1]:8443", true},
		{"empty", "", "https://relay", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, Bypassed(tc.list, mustURL(t, tc.target)))
		})
	}
}

func TestFromEnvironment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		env    map[string]string
		target string
		want   string // "" with answers: direct
		answer bool
	}{
		{"nothing set", nil, "https://relay.example", "", false},
		{"HTTPS_PROXY", map[string]string{"HTTPS_PROXY": "http://p:3128"}, "wss://relay.example", "http://p:3128", true},
		{"lower case", map[string]string{"https_proxy": "p:3128"}, "https://relay.example", "http://p:3128", true},
		{"HTTP_PROXY is not for https", map[string]string{"HTTP_PROXY": "p:3128"}, "https://relay.example", "", false},
		{"HTTP_PROXY for http", map[string]string{"HTTP_PROXY": "p:3128"}, "ws://relay.example", "http://p:3128", true},
		{"NO_PROXY domain", map[string]string{"HTTPS_PROXY": "p:3128", "NO_PROXY": "example"}, "https://relay.example", "", true},
		{"NO_PROXY other domain", map[string]string{"HTTPS_PROXY": "p:3128", "NO_PROXY": "corp"}, "https://relay.example", "http://p:3128", true},
		{"NO_PROXY dot", map[string]string{"HTTPS_PROXY": "p:3128", "NO_PROXY": ".example"}, "https://example", "http://p:3128", true},
		{"NO_PROXY star", map[string]string{"HTTPS_PROXY": "p:3128", "NO_PROXY": "*"}, "https://relay.example", "", true},
		{"NO_PROXY CIDR", map[string]string{"HTTPS_PROXY": "p:3128", "no_proxy": "10.0.0.0/8"}, "https://10.2.3.4", "", true},
		{"NO_PROXY port", map[string]string{"HTTPS_PROXY": "p:3128", "NO_PROXY": "relay.example:8443"}, "https://relay.example", "http://p:3128", true},
		{"loopback never", map[string]string{"HTTPS_PROXY": "p:3128"}, "https://127.0.0.1:8443", "", true},
		{"localhost never", map[string]string{"HTTPS_PROXY": "p:3128"}, "https://localhost", "", true},
		{"credentials kept for the transport", map[string]string{"HTTPS_PROXY": "http://u:pw@p:3128"}, "https://relay.example", "http://u:pw@p:3128", true},
		{"unknown scheme ignored", map[string]string{"HTTPS_PROXY": "ftp://p"}, "https://relay.example", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u, ok := fromEnvironment(func(k string) string { return tc.env[k] }, normalize(mustURL(t, tc.target)))
			assert.Equal(t, tc.answer, ok)
			if tc.want == "" {
				assert.Nil(t, u)
				return
			}
			require.NotNil(t, u)
			assert.Equal(t, tc.want, u.String())
		})
	}
}

func TestCheckSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"", true}, {"direct", true}, {"http://proxy.corp:3128", true}, {"https://proxy.corp", true},
		{"http://u:secretpw@proxy.corp:3128", true}, {"http://proxy.corp:3128/", true},
		{"proxy.corp:3128", false}, {"socks5://p:1080", false}, {"http://p:3128/x", false},
		{"http://p:3128?q=1", false}, {"http://:3128", false}, {"DIRECT", false},
	} {
		err := CheckSetting(tc.in)
		if tc.ok {
			assert.NoError(t, err, tc.in)
			continue
		}
		require.ErrorIs(t, err, ErrInvalidSetting, tc.in)
		assert.NotContains(t, err.Error(), tc.in, "errors never repeat the value")
	}
	assert.NoError(t, CheckPACURL("http://wpad.corp/proxy.pac"))
	assert.ErrorIs(t, CheckPACURL("file:///c:/proxy.pac"), ErrInvalidSetting)
}

// fakeSystem stands for WinHTTP.
type fakeSystem struct {
	def     Settings
	defErr  error
	auto    Settings
	autoOK  bool
	autoErr error
	lookups atomic.Int32
	pacURL  atomic.Value // the pacURL AutoProxy was given
}

func (f *fakeSystem) DefaultProxy() (Settings, error) {
	f.lookups.Add(1)
	return f.def, f.defErr
}

func (f *fakeSystem) AutoProxy(_ context.Context, _ *url.URL, pacURL string) (Settings, bool, error) {
	f.pacURL.Store(pacURL)
	return f.auto, f.autoOK, f.autoErr
}

func TestResolutionOrder(t *testing.T) {
	t.Parallel()
	const relay = "wss://relay.example/v1/agent/connect"
	envProxy := map[string]string{"HTTPS_PROXY": "http://env:3128"}
	winhttp := Settings{Proxy: "http=w:80;https=w:443", Bypass: "<local>;*.corp"}
	pac := Settings{Proxy: "pac:8080;pac2:8080"}
	for _, tc := range []struct {
		name    string
		setting string
		env     map[string]string
		sys     *fakeSystem
		target  string
		source  Source
		url     string
	}{
		{"config first", "http://cfg:3128", envProxy, &fakeSystem{def: winhttp}, relay, SourceConfig, "http://cfg:3128"},
		{"config direct beats all", "direct", envProxy, &fakeSystem{def: winhttp}, relay, SourceConfig, ""},
		{"environment second", "", envProxy, &fakeSystem{def: winhttp}, relay, SourceEnvironment, "http://env:3128"},
		{"winhttp third", "", nil, &fakeSystem{def: winhttp, auto: pac, autoOK: true}, relay, SourceWinHTTP, "http://w:443"},
		{"winhttp bypass", "", nil, &fakeSystem{def: winhttp, auto: pac, autoOK: true}, "wss://relay.corp", SourceWinHTTP, ""},
		{"winhttp failing, pac", "", nil, &fakeSystem{defErr: errors.New("boom"), auto: pac, autoOK: true}, relay, SourcePAC, "http://pac:8080"},
		{"pac fourth", "", nil, &fakeSystem{auto: pac, autoOK: true}, relay, SourcePAC, "http://pac:8080"},
		{"pac says DIRECT", "", nil, &fakeSystem{autoOK: true}, relay, SourcePAC, ""},
		{"pac failing: direct", "", nil, &fakeSystem{autoErr: errors.New("script")}, relay, SourceDirect, ""},
		{"nothing: direct", "", nil, &fakeSystem{}, relay, SourceDirect, ""},
		{"no system: direct", "", nil, nil, relay, SourceDirect, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := Options{Proxy: tc.setting, Getenv: func(k string) string { return tc.env[k] }}
			if tc.sys != nil {
				opts.System = tc.sys
			} else {
				opts.System = noSystem{}
			}
			r, err := New(opts)
			require.NoError(t, err)
			if tc.sys == nil {
				r.opts.System = nil
			}
			c := r.Choose(context.Background(), mustURL(t, tc.target))
			assert.Equal(t, tc.source, c.Source)
			assert.Equal(t, tc.url, Redact(c.URL))
			req, err := http.NewRequest(http.MethodGet, tc.target, nil)
			require.NoError(t, err)
			u, err := r.Proxy(req)
			require.NoError(t, err)
			assert.Equal(t, tc.url, Redact(u), "Proxy agrees with Choose")
		})
	}
}

// noSystem is replaced by nil after New, which would otherwise pick the
// platform's.
type noSystem struct{}

func (noSystem) DefaultProxy() (Settings, error) { return Settings{}, nil }
func (noSystem) AutoProxy(context.Context, *url.URL, string) (Settings, bool, error) {
	return Settings{}, false, nil
}

func TestPACURLPassedOn(t *testing.T) {
	t.Parallel()
	sys := &fakeSystem{autoOK: true}
	r, err := New(Options{PACURL: "http://wpad.corp/proxy.pac", Getenv: func(string) string { return "" }, System: sys})
	require.NoError(t, err)
	r.Choose(context.Background(), mustURL(t, "https://relay.example"))
	assert.Equal(t, "http://wpad.corp/proxy.pac", sys.pacURL.Load())
}

func TestSystemAnswersAreCached(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	sys := &fakeSystem{def: Settings{Proxy: "w:80"}}
	r, err := New(Options{Getenv: func(string) string { return "" }, System: sys, CacheFor: time.Minute,
		Now: func() time.Time { return now }})
	require.NoError(t, err)
	target := mustURL(t, "https://relay.example")
	for range 3 {
		assert.Equal(t, "http://w:80", Redact(r.Choose(context.Background(), target).URL))
	}
	assert.EqualValues(t, 1, sys.lookups.Load(), "asked once within the cache's time")
	r.Choose(context.Background(), mustURL(t, "https://other.example"))
	assert.EqualValues(t, 2, sys.lookups.Load(), "each host has its own answer")
	now = now.Add(time.Minute)
	r.Choose(context.Background(), target)
	assert.EqualValues(t, 3, sys.lookups.Load(), "asked again once the answer is stale")

	// A caller changing the URL it got does not change the cache.
	c := r.Choose(context.Background(), target)
	c.URL.Host = "changed:1"
	assert.Equal(t, "http://w:80", Redact(r.Choose(context.Background(), target).URL))
}

func TestReportStripsCredentials(t *testing.T) {
	t.Parallel()
	r, err := New(Options{Proxy: "http://user:secretpw@proxy.corp:3128"})
	require.NoError(t, err)
	c := r.Choose(context.Background(), mustURL(t, "https://relay.example"))
	assert.Equal(t, "secretpw", func() string { p, _ := c.URL.User.Password(); return p }(), "the transport gets the credentials")
	rep := c.Report()
	assert.Equal(t, "config", rep.Source)
	assert.Equal(t, "http://proxy.corp:3128", rep.URL)
}

func TestNewRefusesBadSettings(t *testing.T) {
	t.Parallel()
	_, err := New(Options{Proxy: "proxy:3128"})
	require.ErrorIs(t, err, ErrInvalidSetting)
	_, err = New(Options{PACURL: "wpad"})
	require.ErrorIs(t, err, ErrInvalidSetting)
}

func TestProxyError(t *testing.T) {
	t.Parallel()
	err := CheckConnectResponse(context.Background(), nil, nil, &http.Response{StatusCode: http.StatusProxyAuthRequired})
	require.ErrorIs(t, err, ErrProxyAuth)
	assert.Contains(t, err.Error(), "the proxy asks for authentication")
	err = CheckConnectResponse(context.Background(), nil, nil, &http.Response{StatusCode: http.StatusForbidden})
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrProxyAuth)
	assert.Contains(t, err.Error(), "HTTP 403")
	assert.NoError(t, CheckConnectResponse(context.Background(), nil, nil, &http.Response{StatusCode: http.StatusOK}))
}
