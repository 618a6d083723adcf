package broker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/auth"
	"tradebridge/relay/broker"
	"tradebridge/relay/store"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/bridge/tradovate/tradovatefake"
)

// oauthFake is the broker's OAuth service for a test: tradovatefake over a
// market of its own.
func oauthFake(t *testing.T, f *fixture) *tradovatefake.Server {
	t.Helper()
	market, err := sim.New(sim.Options{Clock: f.markets.clock})
	require.NoError(t, err)
	t.Cleanup(func() { market.Close() })
	fake, err := tradovatefake.Start(tradovatefake.Options{Market: market})
	require.NoError(t, err)
	t.Cleanup(func() { fake.Close() })
	return fake
}

// oauthNode is a relay node that offers the OAuth link against fake.
func (f *fixture) oauthNode(t *testing.T, fake *tradovatefake.Server, net *fakeNet, name string) *broker.Manager {
	t.Helper()
	opts := broker.Options{Store: f.store, Keys: f.keys, NewPlatform: f.markets.newPlatform, Now: f.markets.clock.Now,
		Endpoints: fake.Endpoints(),
		OAuth: tradovate.OAuthClient{ID: tradovatefake.DefaultOAuthClientID, Secret: tradovatefake.DefaultOAuthClientSecret,
			RedirectURL: "https://relay.example/v1/tv/oauth/callback"}}
	if net != nil {
		opts.Node, opts.Router, opts.LeaseTTL = name, &fakeRouter{net: net, node: name}, testTTL
	}
	m, err := broker.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

// testTokenHash is the hash of the API token the tests' OAuth links start
// with; its id (auth.TokenID) is the first 12 hex digits.
const testTokenHash = "0123456789abcdef"

// startOAuth starts an OAuth link for the user on m, over the route with
// an API token of testTokenHash, and returns its state.
func startOAuth(t *testing.T, m *broker.Manager, userID string) string {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, broker.LinkOAuthPath, strings.NewReader(`{"env":"demo"}`))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	m.ServeOAuthStart(w, r, auth.Principal{UserID: userID, TokenHash: testTokenHash})
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var body struct {
		Data struct {
			AuthorizeURL string `json:"authorizeUrl"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), w.Body.String())
	u, err := url.Parse(body.Data.AuthorizeURL)
	require.NoError(t, err)
	state := u.Query().Get("state")
	require.NotEmpty(t, state, body.Data.AuthorizeURL)
	return state
}

// callback brings the browser back to m with the state and a code.
func callback(t *testing.T, m *broker.Manager, state, code string) *httptest.ResponseRecorder {
	t.Helper()
	q := url.Values{"state": {state}, "code": {code}}
	w := httptest.NewRecorder()
	m.ServeOAuthCallback(w, httptest.NewRequest(http.MethodGet, broker.OAuthCallbackPath+"?"+q.Encode(), nil))
	return w
}

// An OAuth link started on one node ends on another: the state lives in
// the store (by its hash, never its text), good once.
func TestOAuthLinkAcrossNodes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fake := oauthFake(t, f)
	net := newFakeNet()
	a := f.oauthNode(t, fake, net, "a")
	b := f.oauthNode(t, fake, net, "b")

	state := startOAuth(t, a, "alice")
	_, err := f.store.TakeOAuthState(context.Background(), state, time.Now())
	require.ErrorIs(t, err, store.ErrNotFound, "the store does not know the state by its text")

	w := callback(t, b, state, fake.IssueCode())
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Contains(t, w.Body.String(), `"linked":true`)
	link, err := b.Links().Get(context.Background(), "alice")
	require.NoError(t, err)
	require.Equal(t, broker.MethodOAuth, link.Method)
	require.Equal(t, "b", net.server("alice"), "the node that linked runs the link")

	w = callback(t, a, state, fake.IssueCode())
	require.Equal(t, http.StatusBadRequest, w.Code, "a state is good once, on any node")
}

// The OAuth links under way: a user's newest few are kept; a state that
// expired, is unknown or is not one the relay could have made is refused.
func TestOAuthStates(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fake := oauthFake(t, f)
	m := f.oauthNode(t, fake, nil, "")

	var states []string
	for range 5 {
		states = append(states, startOAuth(t, m, "alice"))
	}
	other := startOAuth(t, m, "bob")
	require.Equal(t, http.StatusBadRequest, callback(t, m, states[0], fake.IssueCode()).Code, "the oldest beyond 4 is forgotten")
	require.Equal(t, http.StatusOK, callback(t, m, states[4], fake.IssueCode()).Code)
	require.Equal(t, http.StatusOK, callback(t, m, other, fake.IssueCode()).Code, "another user's are their own")

	expired := "0123456789abcdef0123456789abcdef"
	require.NoError(t, f.store.PutOAuthState(context.Background(), store.OAuthState{Hash: broker.OAuthStateHash(expired),
		UserID: "alice", Env: broker.EnvDemo, Expires: time.Now().Add(-time.Second)}, 4))
	for name, s := range map[string]string{"expired": expired, "unknown": "feedface", "too long": strings.Repeat("a", 300), "empty": ""} {
		require.Equal(t, http.StatusBadRequest, callback(t, m, s, fake.IssueCode()).Code, name)
	}
}

// A callback that repeats state or code is refused as a bad state is,
// with the same answer (400, or the dashboard's "expired" page), and takes
// no state: the link can still end with one of each.
func TestOAuthCallbackRefusesRepeatedParameters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fake := oauthFake(t, f)
	m := f.oauthNode(t, fake, nil, "")
	state := startOAuth(t, m, "alice")
	bad := callbackQuery(t, m, url.Values{"state": {"feedface"}, "code": {fake.IssueCode()}}, "")
	badPage := callbackQuery(t, m, url.Values{"state": {"feedface"}, "code": {fake.IssueCode()}}, "text/html")
	require.Equal(t, http.StatusBadRequest, bad.Code)
	require.Equal(t, http.StatusSeeOther, badPage.Code)
	for name, q := range map[string]url.Values{
		"state twice":              {"state": {state, state}, "code": {fake.IssueCode()}},
		"state twice, another one": {"state": {state, "feedface"}, "code": {fake.IssueCode()}},
		"code twice":               {"state": {state}, "code": {fake.IssueCode(), fake.IssueCode()}},
	} {
		w := callbackQuery(t, m, q, "")
		require.Equal(t, bad.Code, w.Code, name)
		require.JSONEq(t, bad.Body.String(), w.Body.String(), name)
		w = callbackQuery(t, m, q, "text/html")
		require.Equal(t, badPage.Code, w.Code, name)
		require.Equal(t, badPage.Header().Get("Location"), w.Header().Get("Location"), name)
	}
	_, err := m.Links().Get(context.Background(), "alice")
	require.Error(t, err, "nothing was linked")
	w := callback(t, m, state, fake.IssueCode())
	require.Equal(t, http.StatusOK, w.Code, "the state was not taken: %s", w.Body.String())
}

// callbackQuery brings the browser back to m with the query q, asking for
// accept ("" for none).
func callbackQuery(t *testing.T, m *broker.Manager, q url.Values, accept string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, broker.OAuthCallbackPath+"?"+q.Encode(), nil)
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	m.ServeOAuthCallback(w, r)
	return w
}
