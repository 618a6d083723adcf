package tradovate

import (
	"fmt"
	"net/url"
	"strings"
)

// Env is a Tradovate environment: demo (simulated accounts) or live.
type Env string

// The environments.
const (
	EnvDemo Env = "demo"
	EnvLive Env = "live"
)

// Valid reports whether e is EnvDemo or EnvLive.
func (e Env) Valid() bool { return e == EnvDemo || e == EnvLive }

// Endpoints are the broker's base addresses, relay configuration so that
// tests and operators can point them at a fake (relay serve
// --tradovate-demo-url …). The user-data socket lives on the REST host
// (UserSocket).
type Endpoints struct {
	// DemoREST and LiveREST are the REST bases, ending in /v1.
	DemoREST, LiveREST string
	// DemoMD and LiveMD are the market-data websocket addresses.
	DemoMD, LiveMD string
	// OAuthAuthorize is the page a user is sent to to grant access (the
	// OAuth authorization-code flow).
	OAuthAuthorize string
}

// DefaultEndpoints are Tradovate's documented addresses.
func DefaultEndpoints() Endpoints {
	return Endpoints{
		DemoREST:       "https://demo.tradovateapi.com/v1",
		LiveREST:       "https://live.tradovateapi.com/v1",
		DemoMD:         "wss://md-demo.tradovateapi.com/v1/websocket",
		LiveMD:         "wss://md.tradovateapi.com/v1/websocket",
		OAuthAuthorize: "https://trader.tradovate.com/oauth",
	}
}

// REST returns env's REST base.
func (e Endpoints) REST(env Env) string {
	if env == EnvLive {
		return e.LiveREST
	}
	return e.DemoREST
}

// MD returns env's market-data socket address.
func (e Endpoints) MD(env Env) string {
	if env == EnvLive {
		return e.LiveMD
	}
	return e.DemoMD
}

// UserSocket returns env's user-data socket address: the REST base's host
// with path /v1/websocket, over ws or wss as the base is http or https.
func (e Endpoints) UserSocket(env Env) string {
	u, err := url.Parse(e.REST(env))
	if err != nil {
		return ""
	}
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	case "http":
		u.Scheme = "ws"
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/websocket"
	u.RawQuery, u.Fragment = "", ""
	return u.String()
}

// Validate checks that every address is absolute, with a scheme of its
// kind (http or https for REST and OAuth, ws or wss for market data).
func (e Endpoints) Validate() error {
	for _, c := range []struct {
		name, v string
		schemes []string
	}{
		{"demo REST", e.DemoREST, []string{"http", "https"}},
		{"live REST", e.LiveREST, []string{"http", "https"}},
		{"demo market data", e.DemoMD, []string{"ws", "wss"}},
		{"live market data", e.LiveMD, []string{"ws", "wss"}},
		{"OAuth authorize", e.OAuthAuthorize, []string{"http", "https"}},
	} {
		u, err := url.Parse(c.v)
		if err != nil || u.Host == "" || !contains(c.schemes, u.Scheme) {
			return fmt.Errorf("tradovate: the %s address must be an absolute %s URL", c.name, strings.Join(c.schemes, " or "))
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// OAuthClient is the relay's registration with the broker's OAuth
// service: the client id and secret, and the address the broker sends
// the user back to with a code. An empty ID turns the OAuth link off.
type OAuthClient struct {
	ID          string
	Secret      string
	RedirectURL string
}
