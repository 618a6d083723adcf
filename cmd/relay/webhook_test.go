package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/store"
	"tradebridge/relay/webhook"
)

// show prints the user's webhook, the same each time; rotate prints the
// same URL with a new key, recorded in the user's activity log; an
// unknown user is an error.
func TestWebhookCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := run(t, "", "users", "add", "--data", dir, "--name", "tina", "--plan", "pro")
	require.NoError(t, err)
	user := decode[auth.Credentials](t, out).UserID

	out, err = run(t, "", "webhook", "show", "--data", dir, "--user", user)
	require.NoError(t, err)
	first := decode[webhook.Info](t, out)
	require.True(t, strings.HasPrefix(first.URL, "/v1/send/wh_"), first.URL)
	require.True(t, webhook.ValidID(strings.TrimPrefix(first.URL, "/v1/send/")))
	require.NotEmpty(t, first.Key)
	require.Equal(t, `{"url":"`+first.URL+`","key":"`+first.Key+"\"}\n", out, "exactly this shape")
	out, err = run(t, "", "webhook", "show", "--data", dir, "--user", user)
	require.NoError(t, err)
	require.Equal(t, first, decode[webhook.Info](t, out))

	out, err = run(t, "", "webhook", "rotate", "--data", dir, "--user", user)
	require.NoError(t, err)
	rotated := decode[webhook.Info](t, out)
	require.Equal(t, first.URL, rotated.URL)
	require.NotEqual(t, first.Key, rotated.Key)
	out, err = run(t, "", "webhook", "show", "--data", dir, "--user", user)
	require.NoError(t, err)
	require.Equal(t, rotated, decode[webhook.Info](t, out))
	requireNoPlaintext(t, dir, first.Key, rotated.Key)

	st, err := store.Open(context.Background(), store.Options{Dir: dir})
	require.NoError(t, err)
	defer st.Close()
	entries, err := st.ListActivity(context.Background(), user, store.ActivityQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, protocol.ActivityConfigChanged, entries[0].Kind)
	require.Equal(t, protocol.SourceOperator, entries[0].SourceKind)
	require.NotContains(t, string(entries[0].Detail), rotated.Key)

	_, err = run(t, "", "webhook", "show", "--data", dir, "--user", "usr_nobody")
	require.ErrorContains(t, err, "no such user")
	_, err = run(t, "", "webhook", "rotate", "--data", dir, "--user", "usr_nobody")
	require.ErrorContains(t, err, "no such user")
}

// --webhook-allow takes addresses and prefixes; anything else is an
// error that names it.
func TestParseAllow(t *testing.T) {
	t.Parallel()
	got, err := parseAllow(TradingViewAddresses + ", 10.0.0.0/8,::1")
	require.NoError(t, err)
	require.Len(t, got, 6)
	require.Equal(t, "10.0.0.0/8", got[4].String())
	require.Equal(t, "::1/128", got[5].String())
	none, err := parseAllow("")
	require.NoError(t, err)
	require.Empty(t, none)
	_, err = parseAllow("10.0.0.0/8,nope")
	require.ErrorContains(t, err, "nope")
}
