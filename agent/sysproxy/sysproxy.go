// Package sysproxy chooses the HTTP proxy the agent reaches the relay
// through, the way a Windows service finds it: the agent's own `proxy`
// setting first, then the environment (HTTPS_PROXY, HTTP_PROXY,
// NO_PROXY), then on Windows the machine's WinHTTP proxy (`netsh winhttp
// set proxy`), then automatic configuration (WPAD by DHCP and DNS, or a
// PAC script's URL), and else a direct connection. A Resolver answers
// with the proxy and where it came from (a Choice), for diagnostics; its
// Proxy method plugs into an http.Transport.
//
// It reads the machine's settings through WinHTTP, as a service must: a
// service running as LocalSystem has no user's Internet Explorer
// settings, which libraries reading the current user's settings (such as
// github.com/mattn/go-ieproxy) rely on. WinHTTP is called through
// golang.org/x/sys/windows, without cgo.
//
// Proxies that ask for NTLM or Negotiate authentication are not
// supported: a 407 answer becomes ErrProxyAuth, which says so.
package sysproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
)

// Source says where a proxy choice came from.
type Source string

// The sources, in the order a Resolver asks them.
const (
	// SourceConfig: the agent's `proxy` setting.
	SourceConfig Source = "config"
	// SourceEnvironment: HTTPS_PROXY / HTTP_PROXY and NO_PROXY.
	SourceEnvironment Source = "environment"
	// SourceWinHTTP: the machine's WinHTTP proxy (netsh winhttp).
	SourceWinHTTP Source = "winhttp"
	// SourcePAC: automatic configuration (WPAD or a PAC script).
	SourcePAC Source = "pac"
	// SourceDirect: nothing named a proxy.
	SourceDirect Source = "direct"
)

// Direct is the value of the `proxy` setting that turns proxies off.
const Direct = "direct"

// DefaultCacheFor is how long a Resolver keeps the answer of the
// system's settings and automatic configuration for a host.
const DefaultCacheFor = 5 * time.Minute

// Errors.
var (
	// ErrProxyAuth: the proxy answered 407. Proxies that authenticate
	// with NTLM or Negotiate are not supported.
	ErrProxyAuth = errors.New("the proxy asks for authentication (HTTP 407); the agent can give a proxy " +
		"only a user and password in its proxy setting (basic authentication), not Windows (NTLM or Negotiate) " +
		"authentication: ask for the relay's address to be let through the proxy without authentication")
	// ErrInvalidSetting: the proxy or PAC setting does not have its form.
	ErrInvalidSetting = errors.New("invalid proxy setting")
)

// ProxyError is a proxy's refusal of a CONNECT to the relay.
type ProxyError struct {
	Status int // the proxy's HTTP status
}

func (e *ProxyError) Error() string {
	if e.Status == http.StatusProxyAuthRequired {
		return ErrProxyAuth.Error()
	}
	return fmt.Sprintf("the proxy refused the connection to the relay (HTTP %d)", e.Status)
}

// Unwrap makes a 407 match ErrProxyAuth.
func (e *ProxyError) Unwrap() error {
	if e.Status == http.StatusProxyAuthRequired {
		return ErrProxyAuth
	}
	return nil
}

// Choice is the proxy chosen for a request.
type Choice struct {
	Source Source
	// URL is the proxy; nil means a direct connection.
	URL *url.URL
}

// Report describes c for diagnostics and logs: the source and the proxy
// without any user or password.
func (c Choice) Report() protocol.ProxyDiagnostic {
	return protocol.ProxyDiagnostic{Source: string(c.Source), URL: Redact(c.URL)}
}

// Redact is u without user information, query or fragment; "" for nil.
func Redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	r := *u
	r.User, r.RawQuery, r.ForceQuery, r.Fragment, r.RawFragment = nil, "", false, "", ""
	return r.String()
}

// Settings are a proxy list and a bypass list in WinHTTP's forms (see
// PickProxy and Bypassed).
type Settings struct {
	Proxy, Bypass string
}

// System reads the operating system's proxy configuration. The Windows
// one calls WinHTTP; elsewhere there is none.
type System interface {
	// DefaultProxy is the machine's static proxy (WinHTTP's default
	// proxy configuration); a zero Settings when none is set.
	DefaultProxy() (Settings, error)
	// AutoProxy runs automatic proxy configuration for target: the PAC
	// script at pacURL when set, else WPAD detection and the script the
	// machine names. ok is false when no automatic configuration exists
	// (nothing detected, nothing named); Settings.Proxy is empty when the
	// script says DIRECT. WinHTTP bounds the lookup itself (a few
	// seconds per step); ctx may not interrupt it.
	AutoProxy(ctx context.Context, target *url.URL, pacURL string) (s Settings, ok bool, err error)
}

// Options configure a Resolver.
type Options struct {
	// Proxy is the agent's `proxy` setting: empty to look further,
	// "direct" for no proxy, or http://[user:password@]host[:port]
	// (https:// for a proxy spoken to over TLS).
	Proxy string
	// PACURL is the `proxy-pac` setting: the URL of a proxy auto-config
	// script; empty means the one the machine names, or WPAD.
	PACURL string
	// Getenv reads the environment; default os.Getenv.
	Getenv func(string) string
	// System is the operating system's configuration; default
	// DefaultSystem() (WinHTTP on Windows, none elsewhere).
	System System
	// CacheFor is how long System's answers are kept per host; default
	// DefaultCacheFor.
	CacheFor time.Duration
	// Now is the clock; default time.Now.
	Now    func() time.Time
	Logger *zap.Logger
}

// Resolver chooses proxies. It is safe for concurrent use; it starts no
// goroutine and needs no closing.
type Resolver struct {
	opts   Options
	config *url.URL // the proxy setting, nil for none or direct
	log    *zap.Logger

	lookup sync.Mutex // one system lookup at a time
	mu     sync.Mutex
	cache  map[string]cached
}

type cached struct {
	choice Choice
	until  time.Time
}

// CheckSetting checks a `proxy` setting: "direct" or an http(s) URL with
// a host and no path, query or fragment. Errors never repeat the value.
func CheckSetting(s string) error {
	_, err := parseSetting(s)
	return err
}

// CheckPACURL checks a `proxy-pac` setting: an http(s) URL with a host.
func CheckPACURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
		return fmt.Errorf("%w: proxy-pac must be the http:// or https:// URL of a PAC script, e.g. http://wpad.corp.example/proxy.pac", ErrInvalidSetting)
	}
	return nil
}

func parseSetting(s string) (*url.URL, error) {
	if s == "" || s == Direct {
		return nil, nil
	}
	bad := fmt.Errorf("%w: proxy must be %q or http://host:port (https:// for a proxy spoken to over TLS), "+
		"with nothing after the port", ErrInvalidSetting, Direct)
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, bad
	}
	u.Path = ""
	return u, nil
}

// New validates opts and returns a Resolver.
func New(opts Options) (*Resolver, error) {
	config, err := parseSetting(opts.Proxy)
	if err != nil {
		return nil, err
	}
	if err := CheckPACURL(opts.PACURL); err != nil {
		return nil, err
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.System == nil {
		opts.System = DefaultSystem()
	}
	if opts.CacheFor <= 0 {
		opts.CacheFor = DefaultCacheFor
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	return &Resolver{opts: opts, config: config, log: opts.Logger.Named("proxy"), cache: map[string]cached{}}, nil
}

// Proxy is the proxy for req, as http.Transport.Proxy wants it.
func (r *Resolver) Proxy(req *http.Request) (*url.URL, error) {
	c := r.Choose(req.Context(), req.URL)
	return c.URL, nil
}

// Configure makes t choose its proxy with r and turn a proxy's refusal
// of a CONNECT into a ProxyError (ErrProxyAuth for a 407).
func (r *Resolver) Configure(t *http.Transport) {
	t.Proxy = r.Proxy
	t.OnProxyConnectResponse = CheckConnectResponse
}

// CheckConnectResponse is an http.Transport.OnProxyConnectResponse that
// turns a refused CONNECT into a ProxyError.
func CheckConnectResponse(_ context.Context, _ *url.URL, _ *http.Request, resp *http.Response) error {
	if resp.StatusCode/100 != 2 {
		return &ProxyError{Status: resp.StatusCode}
	}
	return nil
}

// Choose chooses the proxy for target (http, https, ws or wss): the
// first source that answers.
func (r *Resolver) Choose(ctx context.Context, target *url.URL) Choice {
	if r.opts.Proxy != "" {
		return Choice{Source: SourceConfig, URL: cloneURL(r.config)}
	}
	t := normalize(target)
	if u, ok := fromEnvironment(r.opts.Getenv, t); ok {
		return Choice{Source: SourceEnvironment, URL: u}
	}
	if r.opts.System == nil {
		return Choice{Source: SourceDirect}
	}
	key := t.Scheme + "://" + t.Host
	if c, ok := r.cached(key); ok {
		return c
	}
	r.lookup.Lock()
	defer r.lookup.Unlock()
	if c, ok := r.cached(key); ok {
		return c
	}
	c := r.fromSystem(ctx, t)
	r.mu.Lock()
	r.cache[key] = cached{choice: c, until: r.opts.Now().Add(r.opts.CacheFor)}
	r.mu.Unlock()
	return cloneChoice(c)
}

func (r *Resolver) cached(key string) (Choice, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cache[key]
	if !ok || !r.opts.Now().Before(c.until) {
		return Choice{}, false
	}
	return cloneChoice(c.choice), true
}

// fromSystem asks the operating system: its static proxy, then automatic
// configuration.
func (r *Resolver) fromSystem(ctx context.Context, t *url.URL) Choice {
	s, err := r.opts.System.DefaultProxy()
	switch {
	case err != nil:
		r.log.Warn("reading the machine's WinHTTP proxy failed", zap.Error(err))
	case s.Proxy != "":
		return Choice{Source: SourceWinHTTP, URL: pickUnlessBypassed(s, t)}
	}
	s, ok, err := r.opts.System.AutoProxy(ctx, t, r.opts.PACURL)
	switch {
	case err != nil:
		r.log.Warn("automatic proxy configuration failed; connecting directly", zap.Error(err))
	case ok:
		return Choice{Source: SourcePAC, URL: pickUnlessBypassed(s, t)}
	}
	return Choice{Source: SourceDirect}
}

func pickUnlessBypassed(s Settings, t *url.URL) *url.URL {
	if Bypassed(s.Bypass, t) {
		return nil
	}
	return PickProxy(s.Proxy, t.Scheme)
}

// normalize is target with ws and wss as http and https, and its host
// lower case.
func normalize(target *url.URL) *url.URL {
	t := &url.URL{Scheme: strings.ToLower(target.Scheme), Host: strings.ToLower(target.Host)}
	switch t.Scheme {
	case "ws":
		t.Scheme = "http"
	case "wss":
		t.Scheme = "https"
	}
	return t
}

func cloneURL(u *url.URL) *url.URL {
	if u == nil {
		return nil
	}
	c := *u
	if u.User != nil {
		ui := *u.User
		c.User = &ui
	}
	return &c
}

func cloneChoice(c Choice) Choice { return Choice{Source: c.Source, URL: cloneURL(c.URL)} }

// PickProxy picks the proxy for a target of scheme ("http" or "https")
// from a WinHTTP proxy list: entries separated by semicolons or spaces,
// each [scheme=][http://|https://]host[:port]. An https= entry serves
// https, an http= entry http; an entry without scheme= serves both, after
// the scheme's own. Entries of other schemes (socks=) and malformed ones
// are skipped. nil when none serves the scheme.
func PickProxy(list, scheme string) *url.URL {
	var generic *url.URL
	for _, entry := range splitList(list, ";") {
		key, value, keyed := strings.Cut(entry, "=")
		if !keyed {
			value = entry
		}
		u := proxyURL(value)
		if u == nil {
			continue
		}
		if keyed {
			if strings.EqualFold(key, scheme) {
				return u
			}
			continue
		}
		if generic == nil {
			generic = u
		}
	}
	return generic
}

// proxyURL parses one proxy of a list: [http://|https://]host[:port].
func proxyURL(s string) *url.URL {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return nil
	}
	u.Path = ""
	return u
}

// Bypassed reports whether target is exempt from the proxy by a WinHTTP
// bypass list: entries separated by semicolons, commas or spaces, each
// <local> (a host name without a dot) or a host pattern, with * for any
// characters (*.corp.example, 10.*), optionally scheme:// before it and
// :port after it. A pattern starting with a dot stands for *pattern.
func Bypassed(list string, target *url.URL) bool {
	t := normalize(target)
	host, port := t.Hostname(), t.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[t.Scheme]
	}
	for _, entry := range splitList(list, ";,") {
		e := strings.ToLower(entry)
		if e == "<local>" {
			if !strings.Contains(host, ".") && net.ParseIP(host) == nil {
				return true
			}
			continue
		}
		if strings.HasPrefix(e, "<") {
			continue // <-loopback> and the like: WinHTTP's own
		}
		if scheme, rest, ok := strings.Cut(e, "://"); ok {
			if scheme != t.Scheme {
				continue
			}
			e = rest
		}
		pattern, pport := splitPatternPort(e)
		if pport != "" && pport != port {
			continue
		}
		if strings.HasPrefix(pattern, ".") {
			pattern = "*" + pattern
		}
		if wildcard(pattern, host) {
			return true
		}
	}
	return false
}

// splitPatternPort splits host[:port] (or [v6]:port) of a bypass entry.
func splitPatternPort(e string) (string, string) {
	if strings.HasPrefix(e, "[") {
		if i := strings.Index(e, "]"); i > 0 {
			host, rest := e[1:i], e[i+1:]
			return host, strings.TrimPrefix(rest, ":")
		}
		return e, ""
	}
	if strings.Count(e, ":") == 1 {
		h, p, _ := strings.Cut(e, ":")
		return h, p
	}
	return e, ""
}

// wildcard matches s against pattern, where * stands for any characters.
func wildcard(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}

// splitList splits s at the separators and at white space, dropping
// empty entries.
func splitList(s, seps string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return strings.ContainsRune(seps, r) || r == ' ' || r == '\t' || r == '\r' || r == '\n'
	})
}

// fromEnvironment is the environment's proxy for t, as Go's
// http.ProxyFromEnvironment chooses it: HTTPS_PROXY for https, HTTP_PROXY
// for http (or their lower-case forms), none for loopback hosts or hosts
// NO_PROXY names. ok is false when the environment names no proxy for
// t's scheme: it does not answer then.
func fromEnvironment(getenv func(string) string, t *url.URL) (*url.URL, bool) {
	get := func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return getenv(strings.ToLower(name))
	}
	var v string
	switch t.Scheme {
	case "https":
		v = get("HTTPS_PROXY")
	case "http":
		v = get("HTTP_PROXY")
	}
	if v == "" {
		return nil, false
	}
	if !strings.Contains(v, "://") {
		v = "http://" + v
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		return nil, false // as Go's: a malformed variable is an error there, ignored here
	}
	switch u.Scheme {
	case "http", "https", "socks5", "socks5h":
	default:
		return nil, false
	}
	host := t.Hostname()
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return nil, true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil, true
	}
	if noProxy(get("NO_PROXY"), t) {
		return nil, true
	}
	return u, true
}

// noProxy reports whether NO_PROXY exempts t: comma-separated entries,
// * for all, a domain (its host and subdomains; .domain for subdomains
// only), an IP address or a CIDR block, each optionally with :port.
func noProxy(list string, t *url.URL) bool {
	host, port := t.Hostname(), t.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[t.Scheme]
	}
	ip := net.ParseIP(host)
	for _, entry := range splitList(list, ",") {
		e := strings.ToLower(entry)
		if e == "*" {
			return true
		}
		if _, cidr, err := net.ParseCIDR(e); err == nil {
			if ip != nil && cidr.Contains(ip) {
				return true
			}
			continue
		}
		pattern, pport := splitPatternPort(e)
		if pport != "" && pport != port {
			continue
		}
		if pip := net.ParseIP(pattern); pip != nil {
			if ip != nil && pip.Equal(ip) {
				return true
			}
			continue
		}
		pattern = strings.TrimPrefix(pattern, "*")
		if strings.HasPrefix(pattern, ".") {
			if strings.HasSuffix(host, pattern) {
				return true
			}
			continue
		}
		if host == pattern || strings.HasSuffix(host, "."+pattern) {
			return true
		}
	}
	return false
}
