package main

import (
	"context"
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
