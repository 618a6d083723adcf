package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/account"
	"tradebridge/relay/auth"
	"tradebridge/relay/store"
)

// signIn signs in to the dashboard's accounts of the relay in dir, as
// relay serve would.
func signIn(t *testing.T, dir, email, password string) (account.Session, error) {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	svc, err := account.New(account.Options{Store: st})
	require.NoError(t, err)
	defer svc.Close()
	return svc.SignIn(context.Background(), email, password, "127.0.0.1")
}

// sessionValid reports whether the session still signs in.
func sessionValid(t *testing.T, dir, token string) bool {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	a, err := auth.New(auth.Options{Store: st})
	require.NoError(t, err)
	_, err = a.Authenticate(context.Background(), token, auth.KindSession)
	return err == nil
}

// relay users add --email --password-stdin makes a user who signs in to
// the dashboard; relay users password sets another password and ends
// the user's sessions.
func TestUsersEmailAndPassword(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const pw = "a long password 1"
	out, err := run(t, pw+"\n", "users", "add", "--data", dir, "--name", "erin", "--plan", "elite",
		"--email", "Erin@Example.com", "--password-stdin")
	require.NoError(t, err)
	creds := decode[auth.Credentials](t, out)
	require.NotEmpty(t, creds.APIToken, "the operator's tokens as before")
	sess, err := signIn(t, dir, "erin@example.com", pw)
	require.NoError(t, err)
	require.Equal(t, creds.UserID, sess.UserID)

	// --email alone: no password, no sign-in.
	out, err = run(t, "", "users", "add", "--data", dir, "--name", "fay", "--email", "fay@example.com")
	require.NoError(t, err)
	fay := decode[auth.Credentials](t, out)
	_, err = signIn(t, dir, "fay@example.com", pw)
	require.ErrorIs(t, err, account.ErrBadCredentials)

	// relay users password: fay gets one (CRLF ended), erin's sessions end.
	out, err = run(t, pw+"\r\n", "users", "password", "--data", dir, "--user", fay.UserID, "--password-stdin")
	require.NoError(t, err)
	require.JSONEq(t, `{"userId":"`+fay.UserID+`","passwordSet":true}`, out)
	_, err = signIn(t, dir, "fay@example.com", pw)
	require.NoError(t, err)
	require.True(t, sessionValid(t, dir, sess.Token))
	_, err = run(t, "another password 2", "users", "password", "--data", dir, "--user", creds.UserID, "--password-stdin")
	require.NoError(t, err)
	require.False(t, sessionValid(t, dir, sess.Token), "a new password ends the sessions")
	_, err = signIn(t, dir, "erin@example.com", "another password 2")
	require.NoError(t, err)

	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{pw, []string{"users", "add", "--data", dir, "--name", "g", "--email", "ERIN@example.com", "--password-stdin"}, "another user has that email"},
		{pw, []string{"users", "add", "--data", dir, "--name", "g", "--email", "not-an-email"}, "--email is not an email address"},
		{pw, []string{"users", "add", "--data", dir, "--name", "g", "--password-stdin"}, "--password-stdin needs --email"},
		{"short\n", []string{"users", "add", "--data", dir, "--name", "g", "--email", "g@example.com", "--password-stdin"}, "10 to 256 characters"},
		{"", []string{"users", "add", "--data", dir, "--name", "g", "--email", "g@example.com", "--password-stdin"}, "no password on standard input"},
		{pw, []string{"users", "password", "--data", dir, "--user", "usr_nobody", "--password-stdin"}, "no such user"},
		{pw, []string{"users", "password", "--data", dir, "--user", fay.UserID}, "--password-stdin is required"},
		{"short", []string{"users", "password", "--data", dir, "--user", fay.UserID, "--password-stdin"}, "10 to 256 characters"},
	} {
		_, err := run(t, tc.stdin, tc.args...)
		require.ErrorContains(t, err, tc.want, tc.args)
		require.NotContains(t, err.Error(), pw, "errors never repeat the password")
	}
	_, err = signIn(t, dir, "g@example.com", pw)
	require.ErrorIs(t, err, account.ErrBadCredentials, "no refused command made a user")
	_, err = signIn(t, dir, "fay@example.com", pw)
	require.NoError(t, err, "no refused command changed a password")
}

// relay tokens list shows a token's name; relay serve refuses a bad
// --signup.
func TestTokenNameListedAndSignupFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := run(t, "", "users", "add", "--data", dir, "--name", "hal")
	require.NoError(t, err)
	creds := decode[auth.Credentials](t, out)
	st, err := store.Open(context.Background(), store.Options{Dir: dir})
	require.NoError(t, err)
	_, err = auth.IssueNamedToken(context.Background(), st, creds.UserID, auth.KindAPI, "", "my bot", time.Now())
	require.NoError(t, err)
	require.NoError(t, st.Close())
	out, err = run(t, "", "tokens", "list", "--data", dir, "--user", creds.UserID)
	require.NoError(t, err)
	require.Contains(t, out, `"name":"my bot"`)
	require.Equal(t, 1, strings.Count(out, `"name"`), "unnamed tokens show none")

	_, err = run(t, "", "serve", "--data", t.TempDir(), "--signup", "maybe", "--listen", "127.0.0.1:0", "--operator-listen", "off")
	require.ErrorContains(t, err, "--signup must be open or closed")
	_, err = run(t, "", "tokens", "issue", "--data", dir, "--user", creds.UserID, "--kind", "session")
	require.ErrorContains(t, err, "--kind must be api, agent or support")
}

// relay users list prints every user without secrets; relay users plan
// changes a plan, which the relay's next authentication sees, records it
// in the user's activity log, and refuses an unknown plan with the list
// of plans.
func TestUsersPlanAndList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := run(t, "", "users", "list", "--data", dir)
	require.NoError(t, err)
	require.JSONEq(t, `{"users":[]}`, out, "an empty store lists no user")

	const pw = "a long password 1"
	out, err = run(t, pw+"\n", "users", "add", "--data", dir, "--name", "ivy", "--plan", "pro", "--email", "ivy@example.com", "--password-stdin")
	require.NoError(t, err)
	ivy := decode[auth.Credentials](t, out)
	out, err = run(t, "", "users", "add", "--data", dir, "--name", "jon", "--plan", "free")
	require.NoError(t, err)
	jon := decode[auth.Credentials](t, out)

	out, err = run(t, "", "users", "list", "--data", dir)
	require.NoError(t, err)
	for _, secret := range []string{ivy.APIToken, ivy.AgentToken, jon.APIToken, "tb_", "argon2", pw, "password"} {
		require.NotContains(t, out, secret, "the list shows no secret")
	}
	listed := decode[struct {
		Users []map[string]string `json:"users"`
	}](t, out)
	require.Len(t, listed.Users, 2)
	require.Equal(t, ivy.UserID, listed.Users[0]["id"], "oldest first")
	require.Equal(t, "ivy", listed.Users[0]["name"])
	require.Equal(t, "ivy@example.com", listed.Users[0]["email"])
	require.Equal(t, "pro", listed.Users[0]["plan"])
	require.NotEmpty(t, listed.Users[0]["createdAt"])
	require.Equal(t, map[string]string{"id": jon.UserID, "name": "jon", "email": "", "plan": "free", "createdAt": listed.Users[1]["createdAt"]},
		listed.Users[1], "exactly these members")

	out, err = run(t, "", "users", "plan", ivy.UserID, "elite", "--data", dir)
	require.NoError(t, err)
	require.JSONEq(t, `{"userId":"`+ivy.UserID+`","plan":"elite","previousPlan":"pro"}`, out)
	require.Equal(t, auth.PlanElite, planOf(t, dir, ivy.APIToken), "the relay's next authentication sees the new plan")
	require.Equal(t, auth.PlanFree, planOf(t, dir, jon.APIToken), "another user's plan is untouched")
	out, err = run(t, "", "users", "plan", ivy.UserID, "ELITE", "--data", dir)
	require.NoError(t, err, "plans match in any casing")
	require.JSONEq(t, `{"userId":"`+ivy.UserID+`","plan":"elite","previousPlan":"elite"}`, out)

	st, err := store.Open(context.Background(), store.Options{Dir: dir})
	require.NoError(t, err)
	entries, err := st.ListActivity(context.Background(), ivy.UserID, store.ActivityQuery{Limit: 20})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	var plans []string
	for _, e := range entries {
		if strings.HasPrefix(e.Summary, "Plan changed") {
			plans = append(plans, e.Summary+" "+string(e.Detail))
		}
	}
	require.Len(t, plans, 1, "one change recorded; setting the same plan records none: %v", plans)
	require.Contains(t, plans[0], `"before":"pro"`)
	require.Contains(t, plans[0], `"after":"elite"`)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"users", "plan", ivy.UserID, "platinum", "--data", dir}, "the plans are free, pro or elite"},
		{[]string{"users", "plan", "usr_nobody", "pro", "--data", dir}, "no such user in store sqlite:" + filepath.Join(dir, store.FileName)},
		{[]string{"users", "plan", ivy.UserID, "--data", dir}, "accepts 2 arg(s)"},
	} {
		_, err := run(t, "", tc.args...)
		require.ErrorContains(t, err, tc.want, tc.args)
		require.NotContains(t, err.Error(), "platinum", "the refusal does not repeat the value")
	}
	require.Equal(t, auth.PlanElite, planOf(t, dir, ivy.APIToken), "a refused change changed nothing")
}

// planOf reads the plan of a token's user as the relay authenticates it.
func planOf(t *testing.T, dir, token string) auth.Plan { return principalOf(t, dir, token).Plan }

// Every store command that looks up a user or a token in an empty store
// names the store it opened: the SQLite file's absolute path, or a
// PostgreSQL URL without its password.
func TestLookupsNameTheStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := "in store sqlite:" + filepath.Join(dir, store.FileName)
	const tok = "tb_api_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	for _, tc := range []struct {
		stdin string
		args  []string
	}{
		{"", []string{"users", "access", "usr_nobody"}},
		{"", []string{"users", "plan", "usr_nobody", "elite"}},
		{"a long password 1", []string{"users", "password", "--user", "usr_nobody", "--password-stdin"}},
		{"", []string{"tokens", "issue", "--user", "usr_nobody", "--kind", "api"}},
		{"", []string{"tokens", "issue", "--kind", "support", "--grant", "usr_nobody"}},
		{"", []string{"tokens", "list", "--user", "usr_nobody"}},
		{"", []string{"tokens", "revoke", "--user", "usr_nobody"}},
		{tok, []string{"tokens", "revoke", "--token", "-"}},
		{tok, []string{"tokens", "profile", "--token", "-", "--profile", "compatible"}},
		{"", []string{"agents", "pair-code", "--user", "usr_nobody"}},
		{"", []string{"webhook", "show", "--user", "usr_nobody"}},
		{`{"password":"p","sec":"s"}`, []string{"broker", "link", "--user", "usr_nobody", "--env", "demo", "--username", "u",
			"--app-id", "a", "--app-version", "1", "--cid", "1"}},
	} {
		_, err := run(t, tc.stdin, append(tc.args, "--data", dir)...)
		require.ErrorContains(t, err, db, tc.args)
		require.ErrorContains(t, err, "no such", tc.args)
	}

	// A PostgreSQL URL is named without its password, even when the
	// store cannot be reached.
	_, err := run(t, "", "users", "list", "--store", "postgres://relay:s3cr3t@127.0.0.1:1/relay?connect_timeout=1")
	require.Error(t, err)
	require.Contains(t, err.Error(), "postgres://relay:xxxxx@127.0.0.1:1/relay")
	require.NotContains(t, err.Error(), "s3cr3t")
}
