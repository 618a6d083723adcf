package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/profile"
	"tradebridge/relay/store"
)

// run executes the relay command with args and stdin, and returns what it
// printed.
func run(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := newRootCmd(&out)
	cmd.SetArgs(args)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetErr(&bytes.Buffer{})
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal([]byte(s), &v), s)
	return v
}

// profileOf reads a token's response profile as the relay will.
func profileOf(t *testing.T, dir, token string) profile.Profile {
	return principalOf(t, dir, token).Profile
}

// principalOf authenticates an API token against the store in dir as a
// relay would, with no cache.
func principalOf(t *testing.T, dir, token string) auth.Principal {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	a, err := auth.New(auth.Options{Store: st, CacheTTL: -1})
	require.NoError(t, err)
	p, err := a.Authenticate(context.Background(), token, auth.KindAPI)
	require.NoError(t, err)
	return p
}

// The token commands that operators script against: issue with a
// profile, change it with the token on stdin, list without revealing.
func TestTokenProfileCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := run(t, "", "users", "add", "--data", dir, "--name", "dana", "--plan", "pro")
	require.NoError(t, err)
	creds := decode[auth.Credentials](t, out)
	require.Equal(t, profile.Standard, profileOf(t, dir, creds.APIToken), "the default profile")

	out, err = run(t, "", "tokens", "issue", "--data", dir, "--user", creds.UserID, "--kind", "api", "--profile", "compatible")
	require.NoError(t, err)
	issued := decode[map[string]string](t, out)
	require.Equal(t, "compatible", issued["profile"])
	require.Equal(t, profile.Compatible, profileOf(t, dir, issued["token"]))

	out, err = run(t, creds.APIToken+"\n", "tokens", "profile", "--data", dir, "--token", "-", "--profile", "compatible")
	require.NoError(t, err)
	require.JSONEq(t, `{"profile":"compatible"}`, out)
	require.Equal(t, profile.Compatible, profileOf(t, dir, creds.APIToken))
	_, err = run(t, creds.APIToken, "tokens", "profile", "--data", dir, "--token", "-", "--profile", "standard")
	require.NoError(t, err)
	require.Equal(t, profile.Standard, profileOf(t, dir, creds.APIToken))

	out, err = run(t, "", "tokens", "list", "--data", dir, "--user", creds.UserID)
	require.NoError(t, err)
	require.NotContains(t, out, creds.APIToken)
	require.NotContains(t, out, issued["token"])
	listed := decode[struct {
		UserID string           `json:"userId"`
		Tokens []auth.TokenInfo `json:"tokens"`
	}](t, out)
	require.Equal(t, creds.UserID, listed.UserID)
	require.Len(t, listed.Tokens, 3)
	profiles := map[string]int{}
	for _, ti := range listed.Tokens {
		profiles[string(ti.Kind)+"/"+ti.Profile]++
	}
	require.Equal(t, map[string]int{"api/standard": 1, "api/compatible": 1, "agent/": 1}, profiles)

	// Refusals: unknown profile, agent tokens, unknown tokens; nothing
	// changes.
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"tokens", "issue", "--data", dir, "--user", creds.UserID, "--kind", "api", "--profile", "crosstrade"}, "--profile must be"},
		{"", []string{"tokens", "issue", "--data", dir, "--user", creds.UserID, "--kind", "agent", "--profile", "compatible"}, "API tokens only"},
		{creds.AgentToken, []string{"tokens", "profile", "--data", dir, "--token", "-", "--profile", "compatible"}, "API tokens only"},
		{"tb_api_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", []string{"tokens", "profile", "--data", dir, "--token", "-", "--profile", "compatible"}, "no such token"},
		{creds.APIToken, []string{"tokens", "profile", "--data", dir, "--token", "-", "--profile", ""}, "--profile must be"},
	} {
		_, err := run(t, tc.stdin, tc.args...)
		require.ErrorContains(t, err, tc.want, tc.args)
		require.NotContains(t, err.Error(), "tb_", "errors never repeat a token")
	}
	require.Equal(t, profile.Standard, profileOf(t, dir, creds.APIToken))
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// httpStatus is the status of GET url, or 0 when it cannot be had.
func httpStatus(url string) int {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// relay serve ends with a nil error (exit status 0) on a shutdown it was
// asked for (its context ends, as on SIGINT or SIGTERM), also when a
// request had to be cut short past --shutdown-timeout: here one whose body
// never arrives. /metrics is on the operator's listener only, and the
// store is created 0600.
func TestServeShutsDownCleanly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := run(t, "", "users", "add", "--data", dir, "--name", "erin", "--plan", "pro")
	require.NoError(t, err)
	creds := decode[auth.Credentials](t, out)
	addr, operator := freeAddr(t), freeAddr(t)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	cmd := newRootCmd(io.Discard)
	cmd.SetArgs([]string{"serve", "--listen", addr, "--operator-listen", operator, "--data", dir,
		"--shutdown-timeout", "200ms", "--log-level", "error"})
	cmd.SetErr(io.Discard)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	require.Eventually(t, func() bool { return httpStatus("http://"+addr+"/healthz") == http.StatusOK },
		10*time.Second, 20*time.Millisecond, "the relay starts")
	require.Equal(t, http.StatusNotFound, httpStatus("http://"+addr+"/metrics"))
	require.Equal(t, http.StatusOK, httpStatus("http://"+operator+"/metrics"))
	fi, err := os.Stat(filepath.Join(dir, store.FileName))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "POST /v1/api/accounts/Sim101/orders/place HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer "+
		creds.APIToken+"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond) // the handler waits for the body

	start := time.Now()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, "a shutdown that was asked for exits 0")
	case <-time.After(testkit.Long):
		t.Fatal("relay serve did not return")
	}
	require.Less(t, time.Since(start), 5*time.Second)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(testkit.Medium)))
	_, err = io.Copy(io.Discard, c)
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the cut request's connection is closed")
}

// A malformed RELAY_SHUTDOWN_TIMEOUT is refused before anything starts.
func TestServeRefusesAMalformedShutdownTimeout(t *testing.T) {
	t.Setenv("RELAY_SHUTDOWN_TIMEOUT", "soon")
	_, err := run(t, "", "serve", "--listen", "127.0.0.1:0", "--operator-listen", "off", "--data", t.TempDir())
	require.ErrorContains(t, err, "RELAY_SHUTDOWN_TIMEOUT")
}

// relay serve takes the service modes at start; relay modes get and set
// read and change them live on the operator listener and print them as
// JSON.
func TestModesCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, operator := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cmd := newRootCmd(io.Discard)
	cmd.SetArgs([]string{"serve", "--listen", addr, "--operator-listen", operator, "--data", dir, "--log-level", "error",
		"--management-mode", "read_only", "--family-unavailable", "tv"})
	cmd.SetErr(io.Discard)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	require.Eventually(t, func() bool { return httpStatus("http://"+operator+"/healthz") == http.StatusOK },
		10*time.Second, 20*time.Millisecond, "the relay starts")

	out, err := run(t, "", "modes", "get", "--operator", "http://"+operator)
	require.NoError(t, err)
	require.JSONEq(t, `{"management":"read_only","families":{"desktop":"normal","tv":"unavailable"}}`, out)

	out, err = run(t, "", "modes", "set", "--operator", operator, "--management", "busy", "--family-unavailable", "desktop")
	require.NoError(t, err)
	require.JSONEq(t, `{"management":"busy","families":{"desktop":"unavailable","tv":"normal"}}`, out)
	out, err = run(t, "", "modes", "get", "--operator", operator)
	require.NoError(t, err)
	require.JSONEq(t, `{"management":"busy","families":{"desktop":"unavailable","tv":"normal"}}`, out)

	_, err = run(t, "", "modes", "set", "--operator", operator, "--management", "sleepy")
	require.ErrorContains(t, err, "--management-mode")
	_, err = run(t, "", "modes", "set", "--operator", operator, "--family-unavailable", "web")
	require.ErrorContains(t, err, "--family-unavailable")
	_, err = run(t, "", "modes", "get", "--operator", "http://"+freeAddr(t))
	require.ErrorContains(t, err, "operator listener")
}

// relay serve refuses unknown modes before anything starts.
func TestServeRefusesUnknownModes(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--management-mode", "off"},
		{"--family-unavailable", "desktop,web"},
	} {
		_, err := run(t, "", append([]string{"serve", "--listen", "127.0.0.1:0", "--operator-listen", "off", "--data", t.TempDir()}, args...)...)
		require.Error(t, err, args)
	}
}

// relay users access shows and changes a user's access to the Management
// API.
func TestUsersAccessCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := run(t, "", "users", "add", "--data", dir, "--name", "fay", "--plan", "elite")
	require.NoError(t, err)
	creds := decode[auth.Credentials](t, out)

	out, err = run(t, "", "users", "access", creds.UserID, "--data", dir)
	require.NoError(t, err)
	require.JSONEq(t, `{"userId":"`+creds.UserID+`","management":"open","withheld":[]}`, out)

	out, err = run(t, "", "users", "access", creds.UserID, "--data", dir, "--management", "closed", "--withhold", "tv,copier")
	require.NoError(t, err)
	require.JSONEq(t, `{"userId":"`+creds.UserID+`","management":"closed","withheld":["copier","tv"]}`, out)

	out, err = run(t, "", "users", "access", creds.UserID, "--data", dir, "--management", "open")
	require.NoError(t, err)
	require.JSONEq(t, `{"userId":"`+creds.UserID+`","management":"open","withheld":["copier","tv"]}`, out, "--withhold kept")

	out, err = run(t, "", "users", "access", creds.UserID, "--data", dir, "--withhold", "")
	require.NoError(t, err)
	require.JSONEq(t, `{"userId":"`+creds.UserID+`","management":"open","withheld":[]}`, out)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"users", "access", creds.UserID, "--data", dir, "--management", "ajar"}, "--management must be"},
		{[]string{"users", "access", creds.UserID, "--data", dir, "--withhold", "web"}, "unknown feature"},
		{[]string{"users", "access", "nobody", "--data", dir}, "no such user"},
	} {
		_, err := run(t, "", tc.args...)
		require.ErrorContains(t, err, tc.want)
	}
}

// --activity-retention takes whole days or a duration; a malformed
// RELAY_ACTIVITY_RETENTION is refused before anything starts.
func TestActivityRetentionFlag(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90d", 90 * 24 * time.Hour, true}, {"1d", 24 * time.Hour, true}, {"36h", 36 * time.Hour, true},
		{"0d", 0, false}, {"-1d", 0, false}, {"d", 0, false}, {"1.5d", 0, false}, {"0s", 0, false}, {"soon", 0, false},
	} {
		var d days
		err := d.Set(tc.in)
		require.Equal(t, tc.ok, err == nil, tc.in)
		if tc.ok {
			require.Equal(t, tc.want, time.Duration(d), tc.in)
		}
	}
	d := days(90 * 24 * time.Hour)
	require.Equal(t, "90d", d.String())
	d = days(36 * time.Hour)
	require.Equal(t, "36h0m0s", d.String())

	t.Setenv("RELAY_ACTIVITY_RETENTION", "forever")
	_, err := run(t, "", "serve", "--listen", "127.0.0.1:0", "--operator-listen", "off", "--data", t.TempDir())
	require.ErrorContains(t, err, "RELAY_ACTIVITY_RETENTION")
}

// The operator's changes to a user's account are in the user's activity
// log as config.changed with source operator, never with a token's text.
func TestOperatorChangesAreInTheActivityLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := run(t, "", "users", "add", "--data", dir, "--name", "gus", "--plan", "elite")
	require.NoError(t, err)
	creds := decode[auth.Credentials](t, out)
	_, err = run(t, "", "users", "access", creds.UserID, "--data", dir, "--management", "closed")
	require.NoError(t, err)
	_, err = run(t, "", "users", "access", creds.UserID, "--data", dir, "--management", "closed") // no change
	require.NoError(t, err)
	out, err = run(t, "", "tokens", "issue", "--data", dir, "--user", creds.UserID, "--kind", "api")
	require.NoError(t, err)
	issued := decode[map[string]string](t, out)["token"]
	_, err = run(t, issued, "tokens", "profile", "--data", dir, "--token", "-", "--profile", "compatible")
	require.NoError(t, err)
	_, err = run(t, issued, "tokens", "revoke", "--data", dir, "--token", "-")
	require.NoError(t, err)
	_, err = run(t, "", "tokens", "revoke", "--data", dir, "--user", creds.UserID, "--kind", "agent")
	require.NoError(t, err)
	_, err = run(t, "", "agents", "pair-code", "--data", dir, "--user", creds.UserID)
	require.NoError(t, err)

	st, err := store.Open(context.Background(), store.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	entries, err := st.ListActivity(context.Background(), creds.UserID, store.ActivityQuery{Limit: 20})
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		require.Equal(t, "operator", e.SourceKind)
		require.Equal(t, protocol.ActivityConfigChanged, e.Kind)
		for _, tok := range []string{issued, creds.APIToken, creds.AgentToken} {
			require.NotContains(t, string(e.Detail)+e.Summary, tok)
		}
		var d struct{ Resource, Op string }
		require.NoError(t, json.Unmarshal(e.Detail, &d))
		got = append(got, d.Resource+":"+d.Op)
	}
	require.Equal(t, []string{"pairing-code:create", "token:revoke", "token:revoke", "token:update", "token:create", "access:update"}, got)
	require.JSONEq(t, `{"resource":"access","op":"update","changes":[{"field":"management","before":"open","after":"closed"}]}`,
		string(entries[len(entries)-1].Detail))
}
