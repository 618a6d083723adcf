package main

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"tradebridge/relay/alerts"
)

// parseAlertFlags parses relay serve's alert flags from args.
func parseAlertFlags(t *testing.T, args ...string) *alertFlags {
	t.Helper()
	var f alertFlags
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	f.register(fs)
	require.NoError(t, fs.Parse(args))
	return &f
}

// The alert flags reach the options; the SMTP URL comes from the flag or
// the environment, and no error repeats its password.
func TestServeAlertFlags(t *testing.T) {
	t.Parallel()
	none := func(string) string { return "" }
	o, err := parseAlertFlags(t).options(none)
	require.NoError(t, err)
	require.False(t, o.AllowPrivate)
	require.False(t, o.SMTP.Enabled())
	require.Equal(t, alerts.DefaultDiscordURL, o.DiscordURL)
	require.Equal(t, alerts.DefaultTelegramURL, o.TelegramURL)

	o, err = parseAlertFlags(t, "--alerts-allow-private", "--smtp-from", "alerts@relay.example",
		"--discord-url", "http://127.0.0.1:9001", "--telegram-url", "http://127.0.0.1:9002").
		options(func(k string) string {
			if k == smtpURLEnv {
				return "smtp://relay:s3cret-pw@mail.example:587"
			}
			return ""
		})
	require.NoError(t, err)
	require.True(t, o.AllowPrivate)
	require.True(t, o.SMTP.Enabled())
	require.Equal(t, "smtp://relay:s3cret-pw@mail.example:587", o.SMTP.URL, "from the environment")
	require.Equal(t, "http://127.0.0.1:9001", o.DiscordURL)

	for _, args := range [][]string{
		{"--smtp-url", "smtp://relay:s3cret-pw@mail.example:587"},
		{"--smtp-url", "ftp://relay:s3cret-pw@mail.example", "--smtp-from", "a@relay.example"},
		{"--smtp-url", "smtp://relay:s3cret-pw@mail.example", "--smtp-from", "not an address"},
		{"--discord-url", "discord.com"},
		{"--telegram-url", "https://u:s3cret-pw@api.telegram.org"},
	} {
		_, err := parseAlertFlags(t, args...).options(none)
		require.Error(t, err, args)
		require.NotContains(t, err.Error(), "s3cret-pw", args)
	}
}
