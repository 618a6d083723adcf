package main

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/auth"
	"tradebridge/relay/pairing"
	"tradebridge/relay/store"
)

// relay agents pair-code mints a code the relay exchanges once for a new
// agent token of the user; an unknown user is a clear error.
func TestAgentsPairCode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := run(t, "", "users", "add", "--data", dir, "--name", "dana")
	require.NoError(t, err)
	creds := decode[auth.Credentials](t, out)

	before := time.Now()
	out, err = run(t, "", "agents", "pair-code", "--data", dir, "--user", creds.UserID)
	require.NoError(t, err)
	got := decode[map[string]string](t, out)
	require.Len(t, got, 2, out)
	require.Regexp(t, regexp.MustCompile(`^[A-HJKMNP-Z2-9]{4}-[A-HJKMNP-Z2-9]{4}$`), got["code"])
	expires, err := time.Parse(time.RFC3339, got["expiresAt"])
	require.NoError(t, err)
	require.WithinDuration(t, before.Add(pairing.TTL), expires, 2*time.Second)

	st, err := store.Open(context.Background(), store.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	res, err := pairing.Exchange(context.Background(), st, got["code"], time.Now())
	require.NoError(t, err)
	require.Equal(t, creds.UserID, res.UserID)
	_, err = pairing.Exchange(context.Background(), st, got["code"], time.Now())
	require.ErrorIs(t, err, pairing.ErrInvalidCode, "once")
	require.NoError(t, st.Close())

	for _, args := range [][]string{
		{"agents", "pair-code", "--data", dir, "--user", "usr_nobody"},
		{"agents", "pair-code", "--data", dir},
	} {
		out, err := run(t, "", args...)
		require.Error(t, err, "%v", args)
		require.Empty(t, out)
	}
	_, err = run(t, "", "agents", "pair-code", "--data", dir, "--user", "usr_nobody")
	require.ErrorContains(t, err, "no such user")
}
