package main

import (
	"errors"
	"net/url"
	"os"
	"strconv"

	"github.com/spf13/pflag"

	"tradebridge/relay/alerts"
)

// smtpURLEnv holds the SMTP URL when --smtp-url is not given: its
// password is better in the environment than on a command line other
// users of the machine can read.
const smtpURLEnv = "RELAY_SMTP_URL"

// alertFlags are relay serve's flags of the alerts: private webhook
// addresses, the operator's mail server, the Discord and Telegram bases.
type alertFlags struct {
	allowPrivate            bool
	smtpURL, smtpFrom       string
	discordURL, telegramURL string
}

func (f *alertFlags) register(fs *pflag.FlagSet) {
	allow, _ := strconv.ParseBool(os.Getenv("RELAY_ALERTS_ALLOW_PRIVATE"))
	fs.BoolVar(&f.allowPrivate, "alerts-allow-private", allow,
		"let alert webhooks reach loopback and private addresses, over plain http too: for tests and on-premises receivers (env RELAY_ALERTS_ALLOW_PRIVATE)")
	// No default from the environment: --help would print the password.
	fs.StringVar(&f.smtpURL, "smtp-url", "",
		"the mail server of email alerts, smtp://user:pass@host:port (STARTTLS when offered) or smtps://…; empty: no email alerts (env "+smtpURLEnv+", where the password is safer)")
	fs.StringVar(&f.smtpFrom, "smtp-from", envOr("RELAY_SMTP_FROM", ""), "the sender address of email alerts (env RELAY_SMTP_FROM)")
	fs.StringVar(&f.discordURL, "discord-url", envOr("RELAY_DISCORD_URL", alerts.DefaultDiscordURL),
		"the base URL of Discord's API that Discord alerts are sent to (env RELAY_DISCORD_URL)")
	fs.StringVar(&f.telegramURL, "telegram-url", envOr("RELAY_TELEGRAM_URL", alerts.DefaultTelegramURL),
		"the base URL of Telegram's Bot API that Telegram alerts are sent to (env RELAY_TELEGRAM_URL)")
}

// options returns the alerts' options of the flags. The errors name the
// flag, never its value (the SMTP URL holds a password).
func (f *alertFlags) options(getenv func(string) string) (alerts.Options, error) {
	smtpURL := f.smtpURL
	if smtpURL == "" {
		smtpURL = getenv(smtpURLEnv)
	}
	o := alerts.Options{AllowPrivate: f.allowPrivate, SMTP: alerts.SMTP{URL: smtpURL, From: f.smtpFrom},
		DiscordURL: f.discordURL, TelegramURL: f.telegramURL}
	if err := o.SMTP.Check(); err != nil {
		return o, errors.New("--smtp-url and --smtp-from: " + err.Error())
	}
	for _, b := range []struct{ name, v string }{{"--discord-url", f.discordURL}, {"--telegram-url", f.telegramURL}} {
		u, err := url.Parse(b.v)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			return o, errors.New(b.name + " must be an http(s) URL with a host")
		}
	}
	return o, nil
}
