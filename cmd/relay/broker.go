package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"tradebridge/protocol"
	"tradebridge/relay/broker"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
	"tradebridge/trading/bridge/tradovate"
)

// secretKeysFile is the key file inside the data directory unless
// --secret-keys names another.
const secretKeysFile = "secret.keys"

// oauthSecretEnv holds the relay's OAuth client secret at the broker:
// never a flag, which other users of the machine could read.
const oauthSecretEnv = "TRADEBRIDGE_TRADOVATE_OAUTH_SECRET"

// secretKeysFlag registers --secret-keys on fs.
func secretKeysFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "secret-keys", envOr("RELAY_SECRET_KEYS", ""),
		"the key file sealing the broker logins; created with one fresh key when missing (default DATA/"+secretKeysFile+"; env RELAY_SECRET_KEYS)")
}

// loadSecretKeys reads the key file, or creates it, at path or in the
// data directory.
func loadSecretKeys(path, data string) (*sealed.Keyring, error) {
	if path == "" {
		path = filepath.Join(data, secretKeysFile)
	}
	k, err := sealed.LoadOrCreate(path)
	if err != nil {
		return nil, fmt.Errorf("the secret key file %s: %w", path, err)
	}
	return k, nil
}

// brokerFlags are relay serve's flags of the broker family: where the
// broker's services are, the relay's OAuth registration, the key file.
type brokerFlags struct {
	demoURL, liveURL     string
	mdDemoURL, mdLiveURL string
	oauthURL             string
	oauthClientID        string
	oauthRedirectURL     string
	secretKeys           string
}

func (f *brokerFlags) register(fs *pflag.FlagSet) {
	def := tradovate.DefaultEndpoints()
	fs.StringVar(&f.demoURL, "tradovate-demo-url", def.DemoREST, "Tradovate's REST base of the demo environment")
	fs.StringVar(&f.liveURL, "tradovate-live-url", def.LiveREST, "Tradovate's REST base of the live environment")
	fs.StringVar(&f.mdDemoURL, "tradovate-md-demo-url", def.DemoMD, "Tradovate's market-data websocket of the demo environment")
	fs.StringVar(&f.mdLiveURL, "tradovate-md-live-url", def.LiveMD, "Tradovate's market-data websocket of the live environment")
	fs.StringVar(&f.oauthURL, "tradovate-oauth-url", def.OAuthAuthorize, "Tradovate's OAuth page, where a user grants the relay access")
	fs.StringVar(&f.oauthClientID, "tradovate-oauth-client-id", "",
		"the relay's OAuth client id at Tradovate; empty turns the OAuth link off (the secret is read from "+oauthSecretEnv+")")
	fs.StringVar(&f.oauthRedirectURL, "tradovate-oauth-redirect-url", "",
		"where Tradovate sends the user back with a code: the relay's public address of the OAuth callback")
	secretKeysFlag(fs, &f.secretKeys)
}

// tradovate returns the broker's addresses and the relay's OAuth client
// of the flags, the client secret read with getenv. The errors name the
// flag, not its value.
func (f *brokerFlags) tradovate(getenv func(string) string) (tradovate.Endpoints, tradovate.OAuthClient, error) {
	web, ws := []string{"http", "https"}, []string{"ws", "wss"}
	for _, c := range []struct {
		flag, v string
		schemes []string
	}{
		{"--tradovate-demo-url", f.demoURL, web},
		{"--tradovate-live-url", f.liveURL, web},
		{"--tradovate-md-demo-url", f.mdDemoURL, ws},
		{"--tradovate-md-live-url", f.mdLiveURL, ws},
		{"--tradovate-oauth-url", f.oauthURL, web},
	} {
		if !absoluteURL(c.v, c.schemes) {
			return tradovate.Endpoints{}, tradovate.OAuthClient{}, fmt.Errorf("%s must be an absolute %s URL", c.flag, strings.Join(c.schemes, " or "))
		}
	}
	ep := tradovate.Endpoints{DemoREST: f.demoURL, LiveREST: f.liveURL, DemoMD: f.mdDemoURL, LiveMD: f.mdLiveURL, OAuthAuthorize: f.oauthURL}
	if err := ep.Validate(); err != nil {
		return tradovate.Endpoints{}, tradovate.OAuthClient{}, err
	}
	oc := tradovate.OAuthClient{ID: f.oauthClientID, RedirectURL: f.oauthRedirectURL}
	switch {
	case oc.ID == "" && oc.RedirectURL != "":
		return ep, tradovate.OAuthClient{}, errors.New("--tradovate-oauth-redirect-url needs --tradovate-oauth-client-id")
	case oc.ID == "":
		return ep, tradovate.OAuthClient{}, nil // the OAuth link is off
	case !absoluteURL(oc.RedirectURL, web):
		return ep, tradovate.OAuthClient{}, errors.New("--tradovate-oauth-client-id needs --tradovate-oauth-redirect-url, an absolute http or https URL")
	}
	if oc.Secret = getenv(oauthSecretEnv); oc.Secret == "" {
		return ep, tradovate.OAuthClient{}, errors.New("--tradovate-oauth-client-id needs the client secret in the environment variable " + oauthSecretEnv)
	}
	return ep, oc, nil
}

// absoluteURL reports whether s is an absolute URL with a host and one of
// the schemes.
func absoluteURL(s string, schemes []string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Host != "" && slices.Contains(schemes, u.Scheme)
}

func newBrokerCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Link users' broker logins (Tradovate) for the tv family, in the data directory",
		Long: "The broker logins the relay trades with server-side for the /v1/api/tv routes. A\n" +
			"login's secrets are sealed (AES-256-GCM) with the key file (--secret-keys, default\n" +
			"DATA/" + secretKeysFile + ") before they are stored: keep that file secret and backed up\n" +
			"apart from the database. Rotate with relay broker rekey.",
	}
	cmd.AddCommand(newBrokerLinkCmd(stdout), newBrokerUnlinkCmd(stdout), newBrokerStatusCmd(stdout), newBrokerRekeyCmd(stdout))
	return cmd
}

// linkStdinMax bounds what relay broker link reads from standard input.
const linkStdinMax = 64 << 10

// errLinkStdin is what relay broker link says of standard input it
// cannot read; it never repeats the input.
var errLinkStdin = errors.New(`standard input must be one JSON object {"password":"…","sec":"…"}`)

// readLinkStdin reads the password and the API key's secret: one JSON
// object with exactly the fields password and sec, both non-empty.
func readLinkStdin(r io.Reader) (password, sec string, err error) {
	b, err := io.ReadAll(io.LimitReader(r, linkStdinMax+1))
	if err != nil {
		return "", "", errors.New("cannot read standard input")
	}
	if len(b) > linkStdinMax {
		return "", "", errLinkStdin
	}
	var in struct {
		Password *string `json:"password"`
		Sec      *string `json:"sec"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field") {
			return "", "", errors.New(`standard input may hold only the fields "password" and "sec"`)
		}
		return "", "", errLinkStdin
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", "", errLinkStdin // something after the object
	}
	var missing []string
	if in.Password == nil || *in.Password == "" {
		missing = append(missing, `"password"`)
	}
	if in.Sec == nil || *in.Sec == "" {
		missing = append(missing, `"sec"`)
	}
	if missing != nil {
		return "", "", fmt.Errorf("standard input lacks %s", strings.Join(missing, " and "))
	}
	return *in.Password, *in.Sec, nil
}

// linkFieldFlags names a link field by the flag (or the input) that
// gives it.
var linkFieldFlags = map[string]string{
	"userId": "--user", "env": "--env", "username": "--username", "appId": "--app-id",
	"appVersion": "--app-version", "cid": "--cid", "deviceId": "--device-id",
	"password": `"password" on standard input`, "sec": `"sec" on standard input`,
}

func newBrokerLinkCmd(stdout io.Writer) *cobra.Command {
	var data, keys, user, env, username, appID, appVersion, deviceID string
	var cid int
	cmd := &cobra.Command{
		Use:   "link",
		Short: `Link a user's Tradovate login (API key), the password and secret on standard input; print {"linked":true,"env"}`,
		Long: "Link a user's Tradovate login with an API key: the flags give the login's name and\n" +
			"the API key's app id, app version and cid; standard input gives the secrets as one\n" +
			"JSON object {\"password\":\"…\",\"sec\":\"…\"} (never on the command line, which other\n" +
			"users of the machine can read). The login replaces any the user had. Nothing is\n" +
			"sent to the broker: a running relay logs in when the user first trades. The link is\n" +
			"recorded in the user's activity log (broker.linked, source operator).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if env != broker.EnvDemo && env != broker.EnvLive {
				return errors.New("--env must be demo or live")
			}
			password, sec, err := readLinkStdin(cmd.InOrStdin())
			if err != nil {
				return err
			}
			return withStore(cmd, data, func(ctx context.Context, st store.Store) error {
				links, err := brokerLinks(st, keys, data)
				if err != nil {
					return err
				}
				_, err = links.Put(ctx, user, env, broker.MethodAPIKey, broker.Secrets{
					Username: username, Password: password, AppID: appID, AppVersion: appVersion,
					CID: cid, Sec: sec, DeviceID: deviceID,
				})
				var verr *broker.ValidationError
				switch {
				case errors.As(err, &verr):
					names := make([]string, 0, len(verr.Fields))
					for _, f := range verr.Fields {
						if n, ok := linkFieldFlags[f]; ok {
							names = append(names, n)
						} else {
							names = append(names, f)
						}
					}
					return fmt.Errorf("missing or invalid: %s", strings.Join(names, ", "))
				case errors.Is(err, store.ErrNotFound):
					return noSuch("user", "")
				case err != nil:
					return err
				}
				recordOperator(ctx, cmd, st, user, protocol.ActivityBrokerLinked, "Tradovate login linked ("+env+") by the operator",
					map[string]any{"env": env, "method": broker.MethodAPIKey})
				return printJSON(stdout, struct {
					Linked bool   `json:"linked"`
					Env    string `json:"env"`
				}{true, env})
			})
		},
	}
	cmd.Flags().StringVar(&data, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")
	secretKeysFlag(cmd.Flags(), &keys)
	cmd.Flags().StringVar(&user, "user", "", "the relay user's id (required)")
	cmd.Flags().StringVar(&env, "env", "", "the broker environment: demo or live (required)")
	cmd.Flags().StringVar(&username, "username", "", "the Tradovate login's name (required)")
	cmd.Flags().StringVar(&appID, "app-id", "", "the API key's app id (required)")
	cmd.Flags().StringVar(&appVersion, "app-version", "", "the API key's app version (required)")
	cmd.Flags().IntVar(&cid, "cid", 0, "the API key's cid (required)")
	cmd.Flags().StringVar(&deviceID, "device-id", "", "the device id the relay logs in as (default: a random one, kept for the login)")
	for _, f := range []string{"user", "env", "username", "app-id", "app-version", "cid"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}

// brokerLinks returns the links of st sealed with the key file.
func brokerLinks(st store.Store, keysPath, data string) (*broker.Links, error) {
	keys, err := loadSecretKeys(keysPath, data)
	if err != nil {
		return nil, err
	}
	return broker.NewLinks(broker.LinkOptions{Store: st, Keys: keys})
}

func newBrokerUnlinkCmd(stdout io.Writer) *cobra.Command {
	var data, user string
	cmd := &cobra.Command{
		Use:   "unlink",
		Short: `Remove a user's broker login, with what the relay remembered of its trading; print {"unlinked":true|false}`,
		Long: "Remove a user's broker login and the state the relay kept for it (strategy-tag\n" +
			"ownership, the journal of trading writes). Prints {\"unlinked\":false} when the user had\n" +
			"none. Orders and positions at the broker are untouched. An unlink is recorded in the\n" +
			"user's activity log (broker.unlinked, source operator).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, data, func(ctx context.Context, st store.Store) error {
				had, err := st.DeleteBrokerLink(ctx, user)
				if err != nil {
					return err
				}
				if had {
					recordOperator(ctx, cmd, st, user, protocol.ActivityBrokerUnlinked, "Tradovate login unlinked by the operator", map[string]any{})
				}
				return printJSON(stdout, map[string]bool{"unlinked": had})
			})
		},
	}
	cmd.Flags().StringVar(&data, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")
	cmd.Flags().StringVar(&user, "user", "", "the relay user's id (required)")
	_ = cmd.MarkFlagRequired("user")
	return cmd
}

// brokerStatus is what relay broker status prints: never a secret.
type brokerStatus struct {
	Linked   bool   `json:"linked"`
	Env      string `json:"env,omitempty"`
	Method   string `json:"method,omitempty"`
	LinkedAt string `json:"linkedAt,omitempty"`
}

func newBrokerStatusCmd(stdout io.Writer) *cobra.Command {
	var data, user string
	cmd := &cobra.Command{
		Use:   "status",
		Short: `Print whether a user has a broker login linked: {"linked","env","method","linkedAt"}`,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, data, func(ctx context.Context, st store.Store) error {
				l, err := st.BrokerLink(ctx, user)
				if errors.Is(err, store.ErrNotFound) {
					return printJSON(stdout, brokerStatus{})
				}
				if err != nil {
					return err
				}
				return printJSON(stdout, brokerStatus{Linked: true, Env: l.Env, Method: l.Method, LinkedAt: protocol.FormatTime(l.LinkedAt)})
			})
		},
	}
	cmd.Flags().StringVar(&data, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")
	cmd.Flags().StringVar(&user, "user", "", "the relay user's id (required)")
	_ = cmd.MarkFlagRequired("user")
	return cmd
}

func newBrokerRekeyCmd(stdout io.Writer) *cobra.Command {
	var data, keys string
	cmd := &cobra.Command{
		Use:   "rekey",
		Short: `Re-seal with the key file's first key every broker login sealed with another; print {"rekeyed":N}`,
		Long: "After adding a new key as the first line of the key file, re-seal every broker login\n" +
			"with it; then the old key can be removed from the file. A login sealed with a key the\n" +
			"file no longer holds is reported (exit status 1) after the others are done.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, data, func(ctx context.Context, st store.Store) error {
				links, err := brokerLinks(st, keys, data)
				if err != nil {
					return err
				}
				n, rerr := links.Rekey(ctx)
				if err := printJSON(stdout, map[string]int{"rekeyed": n}); err != nil {
					return err
				}
				return rerr
			})
		},
	}
	cmd.Flags().StringVar(&data, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")
	secretKeysFlag(cmd.Flags(), &keys)
	return cmd
}
