package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"tradebridge/relay/auth"
	"tradebridge/relay/broker"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
	"tradebridge/trading/bridge/tradovate"
)

// linkArgs are the arguments of relay broker link for user in dir.
func linkArgs(dir, user string, extra ...string) []string {
	return append([]string{"broker", "link", "--data", dir, "--user", user, "--env", "demo", "--username", "dana",
		"--app-id", "tradebridge", "--app-version", "1.0", "--cid", "8"}, extra...)
}

const linkSecrets = `{"password":"pw-hunter2","sec":"sec-f00dfeed"}`

// openLink reads a user's link as the relay will, with the key file.
func openLink(t *testing.T, dir, keysPath, user string) (broker.Link, error) {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	keys, err := sealed.LoadOrCreate(keysPath)
	require.NoError(t, err)
	links, err := broker.NewLinks(broker.LinkOptions{Store: st, Keys: keys})
	require.NoError(t, err)
	return links.Get(context.Background(), user)
}

// requireNoPlaintext checks that no file of the data directory but the
// key file holds any of the secrets.
func requireNoPlaintext(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	read := 0
	for _, e := range entries {
		if e.IsDir() || e.Name() == secretKeysFile {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		read += len(b)
		for _, s := range secrets {
			require.NotContains(t, string(b), s, "%s holds a secret in clear", e.Name())
		}
	}
	require.Positive(t, read, "the database was read")
}

// link → status → unlink, as operators script them: the exact JSON, the
// key file made on first use, no secret in the database.
func TestBrokerLinkCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := run(t, "", "users", "add", "--data", dir, "--name", "dana", "--plan", "elite")
	require.NoError(t, err)
	user := decode[auth.Credentials](t, out).UserID

	out, err = run(t, "", "broker", "status", "--data", dir, "--user", user)
	require.NoError(t, err)
	require.Equal(t, "{\"linked\":false}\n", out)

	before := time.Now().UTC().Truncate(time.Millisecond)
	out, err = run(t, linkSecrets, linkArgs(dir, user)...)
	require.NoError(t, err)
	require.Equal(t, "{\"linked\":true,\"env\":\"demo\"}\n", out)

	keysPath := filepath.Join(dir, secretKeysFile)
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(keysPath)
		require.NoError(t, err, "the key file is made on first use")
		require.Equal(t, sealed.FileMode, fi.Mode().Perm())
	}
	l, err := openLink(t, dir, keysPath, user)
	require.NoError(t, err)
	require.Equal(t, broker.MethodAPIKey, l.Method)
	require.Equal(t, "pw-hunter2", l.Secrets.Password)
	require.Equal(t, "sec-f00dfeed", l.Secrets.Sec)
	require.Equal(t, broker.Secrets{Username: "dana", Password: "pw-hunter2", AppID: "tradebridge", AppVersion: "1.0",
		CID: 8, Sec: "sec-f00dfeed", DeviceID: l.Secrets.DeviceID}, l.Secrets)
	require.NotEmpty(t, l.Secrets.DeviceID)
	requireNoPlaintext(t, dir, "pw-hunter2", "sec-f00dfeed")

	out, err = run(t, "", "broker", "status", "--data", dir, "--user", user)
	require.NoError(t, err)
	status := decode[map[string]any](t, out)
	linkedAt, err := time.Parse(time.RFC3339, status["linkedAt"].(string))
	require.NoError(t, err)
	require.False(t, linkedAt.Before(before))
	require.Equal(t, `{"linked":true,"env":"demo","method":"apikey","linkedAt":"`+status["linkedAt"].(string)+"\"}\n", out)
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, status["linkedAt"])

	// A given device id is kept; a relink replaces the login.
	out, err = run(t, `{"password":"pw-second","sec":"sec-second"}`, linkArgs(dir, user, "--device-id", "desk-1")...)
	require.NoError(t, err)
	require.Equal(t, "{\"linked\":true,\"env\":\"demo\"}\n", out)
	l, err = openLink(t, dir, keysPath, user)
	require.NoError(t, err)
	require.Equal(t, "desk-1", l.Secrets.DeviceID)
	require.Equal(t, "pw-second", l.Secrets.Password)
	requireNoPlaintext(t, dir, "pw-hunter2", "sec-f00dfeed", "pw-second", "sec-second")

	out, err = run(t, "", "broker", "unlink", "--data", dir, "--user", user)
	require.NoError(t, err)
	require.Equal(t, "{\"unlinked\":true}\n", out)
	out, err = run(t, "", "broker", "unlink", "--data", dir, "--user", user)
	require.NoError(t, err)
	require.Equal(t, "{\"unlinked\":false}\n", out)
	out, err = run(t, "", "broker", "status", "--data", dir, "--user", user)
	require.NoError(t, err)
	require.Equal(t, "{\"linked\":false}\n", out)

	// The user's activity log holds the operator's links and the one
	// unlink that removed a login, no secret in them.
	st, err := store.Open(context.Background(), store.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	entries, err := st.ListActivity(context.Background(), user, store.ActivityQuery{Limit: 10})
	require.NoError(t, err)
	var kinds []string
	for _, e := range entries {
		kinds = append(kinds, e.Kind)
		require.Equal(t, "operator", e.SourceKind)
		require.NotContains(t, string(e.Detail)+e.Summary, "pw-")
	}
	require.Equal(t, []string{"broker.unlinked", "broker.linked", "broker.linked"}, kinds)
	require.JSONEq(t, `{"env":"demo","method":"apikey"}`, string(entries[1].Detail))
}

// Standard input that is not exactly {"password","sec"} is refused with
// a message that never repeats it, and nothing is linked.
func TestBrokerLinkRefusesBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := run(t, "", "users", "add", "--data", dir, "--name", "dana", "--plan", "elite")
	require.NoError(t, err)
	user := decode[auth.Credentials](t, out).UserID

	for _, tc := range []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"empty", "", nil, "must be one JSON object"},
		{"not JSON", "pw-hunter2", nil, "must be one JSON object"},
		{"array", `["pw-hunter2"]`, nil, "must be one JSON object"},
		{"number password", `{"password":12345678,"sec":"sec-f00dfeed"}`, nil, "must be one JSON object"},
		{"unknown field", `{"password":"pw-hunter2","sec":"sec-f00dfeed","pw-hunter2-field":"x"}`, nil, `only the fields "password" and "sec"`},
		{"missing sec", `{"password":"pw-hunter2"}`, nil, `lacks "sec"`},
		{"empty password", `{"password":"","sec":"sec-f00dfeed"}`, nil, `lacks "password"`},
		{"both missing", `{}`, nil, `lacks "password" and "sec"`},
		{"two objects", linkSecrets + linkSecrets, nil, "must be one JSON object"},
		{"trailing text", linkSecrets + " pw-hunter2", nil, "must be one JSON object"},
		{"too long", `{"password":"pw-hunter2` + strings.Repeat("x", 70000) + `","sec":"s"}`, nil, "must be one JSON object"},
		{"unknown env", linkSecrets, []string{"--env", "paper"}, "--env must be demo or live"},
		{"cid zero", linkSecrets, []string{"--cid", "0"}, "missing or invalid: --cid"},
		{"empty username", linkSecrets, []string{"--username", ""}, "missing or invalid: --username"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(t, tc.stdin, linkArgs(dir, user, tc.args...)...)
			require.ErrorContains(t, err, tc.want)
			for _, s := range []string{"pw-hunter2", "sec-f00dfeed", "12345678", "paper"} {
				require.NotContains(t, err.Error(), s, "errors never repeat the input")
			}
		})
	}
	_, err = run(t, linkSecrets, linkArgs(dir, "usr_nobody")...)
	require.ErrorContains(t, err, "no such user")
	_, err = run(t, linkSecrets, "broker", "link", "--data", dir, "--user", user, "--env", "demo")
	require.ErrorContains(t, err, "required flag")

	out, err = run(t, "", "broker", "status", "--data", dir, "--user", user)
	require.NoError(t, err)
	require.Equal(t, "{\"linked\":false}\n", out, "nothing was linked")
}

// Rotation: a new key first in the file, relay broker rekey, and the old
// key can go.
func TestBrokerRekeyCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keysPath := filepath.Join(t.TempDir(), "keys", "relay.keys")
	var users []string
	for _, name := range []string{"dana", "erin"} {
		out, err := run(t, "", "users", "add", "--data", dir, "--name", name, "--plan", "elite")
		require.NoError(t, err)
		user := decode[auth.Credentials](t, out).UserID
		users = append(users, user)
		_, err = run(t, linkSecrets, linkArgs(dir, user, "--secret-keys", keysPath)...)
		require.NoError(t, err)
	}
	_, err := os.Stat(filepath.Join(dir, secretKeysFile))
	require.ErrorIs(t, err, os.ErrNotExist, "--secret-keys puts the key file elsewhere")

	out, err := run(t, "", "broker", "rekey", "--data", dir, "--secret-keys", keysPath)
	require.NoError(t, err)
	require.Equal(t, "{\"rekeyed\":0}\n", out, "all sealed with the primary already")

	old, err := os.ReadFile(keysPath)
	require.NoError(t, err)
	line, err := sealed.NewKeyLine("k2")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(keysPath, []byte(line+"\n"+string(old)), 0o600))

	out, err = run(t, "", "broker", "rekey", "--data", dir, "--secret-keys", keysPath)
	require.NoError(t, err)
	require.Equal(t, "{\"rekeyed\":2}\n", out)
	out, err = run(t, "", "broker", "rekey", "--data", dir, "--secret-keys", keysPath)
	require.NoError(t, err)
	require.Equal(t, "{\"rekeyed\":0}\n", out)

	require.NoError(t, os.WriteFile(keysPath, []byte(line+"\n"), 0o600))
	for _, u := range users {
		l, err := openLink(t, dir, keysPath, u)
		require.NoError(t, err, "opens without the old key")
		require.Equal(t, "pw-hunter2", l.Secrets.Password)
	}

	// A key file without the key of a link: rekey says so, exit 1.
	other := filepath.Join(t.TempDir(), "other.keys")
	out, err = run(t, "", "broker", "rekey", "--data", dir, "--secret-keys", other)
	require.ErrorIs(t, err, sealed.ErrUnknownKey)
	require.Equal(t, "{\"rekeyed\":0}\n", out)

	if runtime.GOOS != "windows" {
		require.NoError(t, os.Chmod(keysPath, 0o644))
		_, err = run(t, "", "broker", "rekey", "--data", dir, "--secret-keys", keysPath)
		require.ErrorIs(t, err, sealed.ErrInsecureFile)
	}
}

// parseBrokerFlags registers relay serve's broker flags and parses args.
func parseBrokerFlags(t *testing.T, args ...string) *brokerFlags {
	t.Helper()
	var f brokerFlags
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	f.register(fs)
	require.NoError(t, fs.Parse(args))
	return &f
}

func TestServeBrokerFlags(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	withSecret := env(map[string]string{oauthSecretEnv: "client-secret"})

	ep, oc, err := parseBrokerFlags(t).tradovate(withSecret)
	require.NoError(t, err)
	require.Equal(t, tradovate.DefaultEndpoints(), ep, "the broker's real addresses by default")
	require.Equal(t, tradovate.OAuthClient{}, oc, "OAuth off without a client id")

	ep, oc, err = parseBrokerFlags(t,
		"--tradovate-demo-url", "http://127.0.0.1:9001/v1", "--tradovate-live-url", "https://live.example/v1",
		"--tradovate-md-demo-url", "ws://127.0.0.1:9002/v1/websocket", "--tradovate-md-live-url", "wss://md.example/v1/websocket",
		"--tradovate-oauth-url", "http://127.0.0.1:9001/oauth",
		"--tradovate-oauth-client-id", "client-1", "--tradovate-oauth-redirect-url", "https://relay.example/v1/api/tv/link/oauth/callback",
	).tradovate(withSecret)
	require.NoError(t, err)
	require.Equal(t, tradovate.Endpoints{DemoREST: "http://127.0.0.1:9001/v1", LiveREST: "https://live.example/v1",
		DemoMD: "ws://127.0.0.1:9002/v1/websocket", LiveMD: "wss://md.example/v1/websocket", OAuthAuthorize: "http://127.0.0.1:9001/oauth"}, ep)
	require.Equal(t, tradovate.OAuthClient{ID: "client-1", Secret: "client-secret",
		RedirectURL: "https://relay.example/v1/api/tv/link/oauth/callback"}, oc, "the secret from the environment")

	for _, tc := range []struct {
		args []string
		env  func(string) string
		want string
	}{
		{[]string{"--tradovate-demo-url", "demo.tradovateapi.com/v1"}, withSecret, "--tradovate-demo-url must be an absolute http or https URL"},
		{[]string{"--tradovate-live-url", "wss://live.example/v1"}, withSecret, "--tradovate-live-url must be"},
		{[]string{"--tradovate-md-demo-url", "https://md.example"}, withSecret, "--tradovate-md-demo-url must be an absolute ws or wss URL"},
		{[]string{"--tradovate-md-live-url", ""}, withSecret, "--tradovate-md-live-url must be"},
		{[]string{"--tradovate-oauth-url", "/oauth"}, withSecret, "--tradovate-oauth-url must be"},
		{[]string{"--tradovate-oauth-client-id", "c"}, withSecret, "needs --tradovate-oauth-redirect-url"},
		{[]string{"--tradovate-oauth-client-id", "c", "--tradovate-oauth-redirect-url", "relay/cb"}, withSecret, "needs --tradovate-oauth-redirect-url"},
		{[]string{"--tradovate-oauth-client-id", "c", "--tradovate-oauth-redirect-url", "https://relay/cb"}, env(nil), oauthSecretEnv},
		{[]string{"--tradovate-oauth-redirect-url", "https://relay/cb"}, withSecret, "needs --tradovate-oauth-client-id"},
	} {
		_, _, err := parseBrokerFlags(t, tc.args...).tradovate(tc.env)
		require.ErrorContains(t, err, tc.want, tc.args)
		require.NotContains(t, err.Error(), "client-secret")
	}
}

// relay serve refuses a bad broker address before anything starts, and
// takes the OAuth secret from the environment only.
func TestServeRefusesBadBrokerFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := run(t, "", "serve", "--listen", "127.0.0.1:0", "--operator-listen", "off", "--data", dir,
		"--tradovate-md-live-url", "https://md.example")
	require.ErrorContains(t, err, "--tradovate-md-live-url")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing was opened")
	_, err = run(t, "", "serve", "--listen", "127.0.0.1:0", "--operator-listen", "off", "--data", dir,
		"--tradovate-oauth-secret", "x")
	require.ErrorContains(t, err, "unknown flag")
}
