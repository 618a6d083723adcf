// Command relay is the cloud relay: it serves the trading API, the
// Management API and the agent tunnels (relay serve), administers users and
// tokens (relay users, relay tokens), support tokens (relay support
// tokens) and users' broker logins (relay broker) in its data directory,
// reads and sets a running relay's service modes (relay modes) on its
// operator listener, and reads a user's agent for support staff (relay
// support agent).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"tradebridge/cmd/internal/logflags"
	"tradebridge/protocol"
	"tradebridge/relay"
	"tradebridge/relay/account"
	"tradebridge/relay/activity"
	"tradebridge/relay/auth"
	"tradebridge/relay/broker"
	"tradebridge/relay/budget"
	"tradebridge/relay/manage"
	"tradebridge/relay/profile"
	"tradebridge/relay/store"
	"tradebridge/relay/webhook"
)

func main() {
	if err := newRootCmd(os.Stdout).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
}

func newRootCmd(stdout io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "relay",
		Short:         "The trading relay: trading API and agent tunnels",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	// Every command that reads or writes the store takes it here: the
	// SQLite store of --data, or a PostgreSQL database shared by many
	// relay nodes.
	root.PersistentFlags().String("store", envOr("RELAY_STORE", ""),
		"the store: empty for SQLite in --data, or postgres://… for a PostgreSQL database shared by many relay nodes (env RELAY_STORE)")
	root.AddCommand(newServeCmd(), newUsersCmd(stdout), newTokensCmd(stdout), newModesCmd(stdout), newBrokerCmd(stdout),
		newSupportCmd(stdout), newAgentsCmd(stdout), newWebhookCmd(stdout))
	return root
}

// defaultOperatorListen is where relay serve answers GET /metrics (and
// /healthz, /readyz) unless told otherwise: the loopback interface only,
// so that metrics are never public by accident.
const defaultOperatorListen = "127.0.0.1:9090"

func newServeCmd() *cobra.Command {
	var (
		listen, operatorListen, data string
		managementMode, familiesDown string
		shutdownTimeout              time.Duration
		logs                         logflags.Flags
		brokers                      brokerFlags
		alerting                     alertFlags
		budgets, bus, node           string
		webhookAllow                 string
		webhookDuplicates            time.Duration
		signup                       string
		activityRetention            = days(activity.DefaultRetention)
	)
	defaultShutdown, envErr := envDuration("RELAY_SHUTDOWN_TIMEOUT", relay.DefaultShutdownTimeout)
	retentionErr := activityRetention.Set(envOr("RELAY_ACTIVITY_RETENTION", activityRetention.String()))
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the trading API and agent tunnels",
		Long: "Serve the trading API, the stream API, the Management API and the agents' tunnels on\n" +
			"--listen, and the operator's routes (GET /metrics, /healthz, /readyz, and the service\n" +
			"modes at /v1/operator/modes: see relay modes) on --operator-listen. SIGINT or\n" +
			"SIGTERM shut down gracefully: running requests get --shutdown-timeout to finish, then\n" +
			"are cut short (a write waiting on an agent answers and records outcome_unknown); the\n" +
			"command exits 0 once every request has ended.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if envErr != nil && !cmd.Flags().Changed("shutdown-timeout") {
				return envErr
			}
			if shutdownTimeout <= 0 {
				return errors.New("--shutdown-timeout must be positive")
			}
			if retentionErr != nil && !cmd.Flags().Changed("activity-retention") {
				return fmt.Errorf("RELAY_ACTIVITY_RETENTION: %w", retentionErr)
			}
			allow, err := parseAllow(webhookAllow)
			if err != nil {
				return err
			}
			if webhookDuplicates <= 0 {
				return errors.New("--webhook-duplicate-window must be positive")
			}
			if signup != string(account.SignupOpen) && signup != string(account.SignupClosed) {
				return errors.New("--signup must be open or closed")
			}
			modes, err := parseModes(managementMode, familiesDown)
			if err != nil {
				return err
			}
			endpoints, oauth, err := brokers.tradovate(os.Getenv)
			if err != nil {
				return err
			}
			alertOpts, err := alerting.options(os.Getenv)
			if err != nil {
				return err
			}
			log, err := logs.Logger()
			if err != nil {
				return err
			}
			defer log.Sync() //nolint:errcheck
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			storeURL, _ := cmd.Flags().GetString("store")
			if bus != "" && !strings.Contains(storeURL, "://") {
				return errors.New("--bus needs a store every node shares: --store postgres://…")
			}
			if bus != "" && brokers.secretKeys == "" {
				return errors.New("--bus needs --secret-keys: the one key file every node seals broker logins with")
			}
			if bus != "" && node == "" {
				return errors.New("--node is required with --bus (the host's name could not be read)")
			}
			st, err := store.Dial(ctx, store.DialOptions{URL: storeURL, Dir: data, Logger: log})
			if err != nil {
				return fmt.Errorf("opening the store: %w", err)
			}
			defer st.Close()
			opts := relay.Options{Store: st, Logger: log, ShutdownTimeout: shutdownTimeout,
				Bus: bus, Node: node,
				Manage:   manage.Options{Modes: modes},
				Activity: activity.Options{Retention: time.Duration(activityRetention)}}
			if bus == "" {
				opts.Node = "" // one node: its sessions are the relay's
			}
			if budgets != "" {
				redis.SetLogger(redisLogger{log.Named("redis").Sugar()})
				b, err := budget.NewRedis(budget.RedisOptions{URL: budgets, Logger: log})
				if err != nil {
					return fmt.Errorf("--budgets: %w", err)
				}
				defer b.Close()
				opts.Budgets = b
			}
			keys, err := loadSecretKeys(brokers.secretKeys, data)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("cannot listen on %s: %w", listen, err)
			}
			defer ln.Close()
			var opLn net.Listener
			if operatorListen != "" && operatorListen != "off" {
				if opLn, err = net.Listen("tcp", operatorListen); err != nil {
					return fmt.Errorf("cannot listen on %s (--operator-listen; \"off\" disables it): %w", operatorListen, err)
				}
				defer opLn.Close()
			}
			opts.OperatorListener = opLn
			opts.Broker = broker.Options{Keys: keys, Endpoints: endpoints, OAuth: oauth}
			opts.Alerts = alertOpts
			opts.Account = account.Options{Signup: account.Signup(signup)}
			opts.Webhook = webhook.Options{Allow: allow, DuplicateWindow: webhookDuplicates}
			r, err := relay.New(opts)
			if err != nil {
				return err
			}
			defer r.Close()
			// Serve returns once every request has ended, so the store is
			// closed (deferred above) under no handler.
			return r.Serve(ctx, ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", envOr("RELAY_LISTEN", "127.0.0.1:8080"), "address to listen on (env RELAY_LISTEN)")
	cmd.Flags().StringVar(&operatorListen, "operator-listen", envOr("RELAY_OPERATOR_LISTEN", defaultOperatorListen),
		`address of the operator's routes: GET /metrics, /healthz, /readyz; "off" disables it (env RELAY_OPERATOR_LISTEN)`)
	cmd.Flags().StringVar(&data, "data", envOr("RELAY_DATA", "./relay-data"), "data directory holding the SQLite store (env RELAY_DATA)")
	cmd.Flags().StringVar(&managementMode, "management-mode", envOr("RELAY_MANAGEMENT_MODE", manage.ModeNormal),
		"the Management API's service mode at start: normal, unavailable, read_only or busy (env RELAY_MANAGEMENT_MODE)")
	cmd.Flags().StringVar(&familiesDown, "family-unavailable", envOr("RELAY_FAMILY_UNAVAILABLE", ""),
		"management families unavailable at start, comma-separated: desktop, tv (env RELAY_FAMILY_UNAVAILABLE)")
	cmd.Flags().DurationVar(&shutdownTimeout, "shutdown-timeout", defaultShutdown,
		"how long running requests may take to finish on SIGINT/SIGTERM before they are cut short (env RELAY_SHUTDOWN_TIMEOUT)")
	cmd.Flags().StringVar(&budgets, "budgets", envOr("RELAY_BUDGETS", ""),
		"where the budgets are kept: empty for this node's memory, or redis://… for a Redis every node shares (env RELAY_BUDGETS)")
	cmd.Flags().StringVar(&bus, "bus", envOr("RELAY_BUS", ""),
		"the NATS server the relay's nodes reach each other's agents through, nats://…; empty for a relay that runs alone (env RELAY_BUS)")
	hostname, _ := os.Hostname()
	cmd.Flags().StringVar(&node, "node", envOr("RELAY_NODE", hostname),
		"this node's name among the relay's nodes, distinct on each (env RELAY_NODE)")
	cmd.Flags().Var(&activityRetention, "activity-retention",
		"how long the users' activity log entries are kept: days (90d) or a duration (2160h) (env RELAY_ACTIVITY_RETENTION)")
	cmd.Flags().StringVar(&webhookAllow, "webhook-allow", envOr("RELAY_WEBHOOK_ALLOW", ""),
		"the only addresses TradingView alerts are taken from, comma-separated addresses or CIDR prefixes; empty takes them from "+
			"every address; TradingView sends from "+TradingViewAddresses+" (env RELAY_WEBHOOK_ALLOW)")
	cmd.Flags().DurationVar(&webhookDuplicates, "webhook-duplicate-window", webhook.DefaultDuplicateWindow,
		"an alert whose text equals one the same user sent this recently is answered with the first one's answer and not run again")
	cmd.Flags().StringVar(&signup, "signup", envOr("RELAY_SIGNUP", string(account.SignupClosed)),
		"open: anyone may sign up on the dashboard, on the free plan; closed: the operator creates users (relay users add) (env RELAY_SIGNUP)")
	logs.Register(cmd.Flags())
	brokers.register(cmd.Flags())
	alerting.register(cmd.Flags())
	return cmd
}

// days is a positive duration flag that also takes whole days ("90d").
type days time.Duration

func (d *days) String() string {
	if time.Duration(*d)%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(time.Duration(*d)/(24*time.Hour)), 10) + "d"
	}
	return time.Duration(*d).String()
}

func (d *days) Set(s string) error {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		v, err := strconv.Atoi(n)
		if err != nil || v <= 0 || v > 100*365 {
			return errors.New("must be a whole number of days such as 90d, or a duration such as 2160h")
		}
		*d = days(time.Duration(v) * 24 * time.Hour)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return errors.New("must be a whole number of days such as 90d, or a duration such as 2160h")
	}
	*d = days(v)
	return nil
}

func (d *days) Type() string { return "duration" }

func newUsersCmd(stdout io.Writer) *cobra.Command {
	users := &cobra.Command{Use: "users", Short: "Administer users"}
	var name, plan, data, email string
	var passwordStdin bool
	add := &cobra.Command{
		Use:   "add",
		Short: `Create a user and print {"userId","apiToken","agentToken"} as JSON`,
		Long: "Create a user with one API token (for bot authors) and one agent token (for the\n" +
			"trader's agent), and print them once as a JSON object on standard output.\n" +
			"Only their SHA-256 hashes are stored. --email gives the user the email the\n" +
			"dashboard signs in with; --password-stdin reads the password (10 to 256\n" +
			"characters) from the first line of standard input, stored as an argon2id hash.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := auth.ParsePlan(plan)
			if err != nil {
				return errors.New("--plan must be " + plansText)
			}
			if email != "" {
				if email, err = account.CheckEmail(email); err != nil {
					return errors.New("--email is not an email address")
				}
			}
			if passwordStdin && email == "" {
				return errors.New("--password-stdin needs --email: the dashboard signs in with both")
			}
			return withStore(cmd, data, func(ctx context.Context, st store.Store) error {
				var hash string
				if passwordStdin {
					if hash, err = readPasswordHash(cmd, st); err != nil {
						return err
					}
				}
				creds, err := auth.CreateUserWithLogin(ctx, st, name, p, email, hash, time.Now())
				if errors.Is(err, store.ErrConflict) && email != "" {
					return errors.New("another user has that email")
				}
				if err != nil {
					return err
				}
				return printJSON(stdout, creds)
			})
		},
	}
	add.Flags().StringVar(&name, "name", "", "the user's name (required)")
	add.Flags().StringVar(&plan, "plan", "pro", "plan: free, pro or elite")
	add.Flags().StringVar(&data, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")
	add.Flags().StringVar(&email, "email", "", "the user's email, to sign in to the dashboard with")
	add.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read the user's dashboard password from the first line of standard input (needs --email)")
	_ = add.MarkFlagRequired("name")
	users.AddCommand(add, newUsersAccessCmd(stdout), newUsersPasswordCmd(stdout), newUsersPlanCmd(stdout), newUsersListCmd(stdout))
	return users
}

// readPasswordHash reads a password from the first line of the command's
// standard input and hashes it as package relay/account does.
func readPasswordHash(cmd *cobra.Command, st store.Store) (string, error) {
	pw, err := readPassword(cmd)
	if err != nil {
		return "", err
	}
	svc, err := account.New(account.Options{Store: st})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	hash, err := svc.Hash(pw)
	if errors.Is(err, account.ErrWeakPassword) {
		return "", fmt.Errorf("the password must be %d to %d characters", account.MinPassword, account.MaxPassword)
	}
	return hash, err
}

// readPassword reads one line of standard input, without its line end.
func readPassword(cmd *cobra.Command) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(cmd.InOrStdin(), 4*account.MaxPassword+2)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading the password from standard input: %w", err)
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if line == "" {
		return "", errors.New("no password on standard input")
	}
	return line, nil
}

func newUsersPasswordCmd(stdout io.Writer) *cobra.Command {
	var data, user string
	var passwordStdin bool
	cmd := &cobra.Command{
		Use:   "password",
		Short: `Set a user's dashboard password and print {"userId","passwordSet":true}`,
		Long: "Set the password a user signs in to the dashboard with, read from the first line of\n" +
			"standard input (--password-stdin; 10 to 256 characters), and sign the user out of\n" +
			"every session. This is the password reset when the relay sends no mail (--smtp-url).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !passwordStdin {
				return errors.New("--password-stdin is required: the password is read from standard input, never an argument")
			}
			pw, err := readPassword(cmd)
			if err != nil {
				return err
			}
			return withStore(cmd, data, func(ctx context.Context, st store.Store) error {
				svc, err := account.New(account.Options{Store: st})
				if err != nil {
					return err
				}
				defer svc.Close()
				err = svc.SetPassword(ctx, user, pw)
				switch {
				case errors.Is(err, account.ErrWeakPassword):
					return fmt.Errorf("the password must be %d to %d characters", account.MinPassword, account.MaxPassword)
				case errors.Is(err, store.ErrNotFound):
					return noSuch("user", "")
				case err != nil:
					return err
				}
				return printJSON(stdout, map[string]any{"userId": user, "passwordSet": true})
			})
		},
	}
	cmd.Flags().StringVar(&data, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")
	cmd.Flags().StringVar(&user, "user", "", "the user's id (required)")
	cmd.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read the password from the first line of standard input (required)")
	_ = cmd.MarkFlagRequired("user")
	return cmd
}

// userAccess is what relay users access prints.
type userAccess struct {
	UserID     string   `json:"userId"`
	Management string   `json:"management"`
	Withheld   []string `json:"withheld"`
}

func newUsersAccessCmd(stdout io.Writer) *cobra.Command {
	var data, management, withhold string
	cmd := &cobra.Command{
		Use:   "access <user-id>",
		Short: `Open or close the Management API for a user and set the features withheld from the plan; print {"userId","management","withheld"} as JSON`,
		Long: "Show or change a user's access to the Management API: --management open|closed\n" +
			"(closed: 403 not_available), --withhold a comma-separated list of the features withheld\n" +
			"from the user's plan (403 plan_required): the families desktop and tv, and the kinds\n" +
			"copier, monitor, account-group, atm-template, controls, news-lockout,\n" +
			"connection-settings; --withhold \"\" withholds none. Flags not given keep their value.\n" +
			"A running relay applies the change within seconds.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			userID := args[0]
			return withStore(cmd, data, func(ctx context.Context, st store.Store) error {
				u, err := st.User(ctx, userID)
				if errors.Is(err, store.ErrNotFound) {
					return noSuch("user", "")
				}
				if err != nil {
					return err
				}
				closed, withheld := u.ManagementClosed, u.Withheld
				if cmd.Flags().Changed("management") {
					switch management {
					case "open":
						closed = false
					case "closed":
						closed = true
					default:
						return errors.New("--management must be open or closed")
					}
				}
				if cmd.Flags().Changed("withhold") {
					withheld = nil
					for part := range strings.SplitSeq(withhold, ",") {
						if f := strings.TrimSpace(part); f != "" {
							withheld = append(withheld, f)
						}
					}
				}
				if cmd.Flags().Changed("management") || cmd.Flags().Changed("withhold") {
					was := u
					if err := auth.SetUserAccess(ctx, st, userID, closed, withheld); err != nil {
						return err
					}
					if u, err = st.User(ctx, userID); err != nil {
						return err
					}
					recordAccess(ctx, cmd, st, was, u)
				}
				out := userAccess{UserID: u.ID, Management: "open", Withheld: u.Withheld}
				if u.ManagementClosed {
					out.Management = "closed"
				}
				if out.Withheld == nil {
					out.Withheld = []string{}
				}
				return printJSON(stdout, out)
			})
		},
	}
	cmd.Flags().StringVar(&management, "management", "", "open or closed")
	cmd.Flags().StringVar(&withhold, "withhold", "", "features withheld from the plan, comma-separated")
	cmd.Flags().StringVar(&data, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")
	return cmd
}

// parseModes reads the service modes of relay serve's flags.
func parseModes(management, families string) (*manage.Modes, error) {
	fams, err := manage.ParseFamilies(families)
	if err != nil {
		return nil, fmt.Errorf("--family-unavailable: %w", err)
	}
	modes, err := manage.NewModes(manage.ModeState{Management: management, Families: fams})
	if err != nil {
		return nil, fmt.Errorf("--management-mode: %w", err)
	}
	return modes, nil
}

// defaultOperator is the operator listener relay modes calls by default.
const defaultOperator = "http://" + defaultOperatorListen

func newModesCmd(stdout io.Writer) *cobra.Command {
	modes := &cobra.Command{
		Use:   "modes",
		Short: "Read or set a running relay's service modes of the Management API",
		Long: "The Management API's service modes, live in a running relay: management normal,\n" +
			"unavailable (503 management_unavailable), read_only (changes 503 management_read_only)\n" +
			"or busy (503 management_busy, except a copier's stop and the kill switch); and per\n" +
			"family (desktop, tv) normal or unavailable (503 family_unavailable). The commands call\n" +
			"the relay's operator listener (--operator) and print the modes then in force as JSON.",
	}
	var getOp string
	get := &cobra.Command{
		Use:   "get",
		Short: `Print the service modes as JSON: {"management","families"}`,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return callModes(cmd.Context(), stdout, getOp, http.MethodGet, nil)
		},
	}
	get.Flags().StringVar(&getOp, "operator", envOr("RELAY_OPERATOR", defaultOperator), "the relay's operator listener (env RELAY_OPERATOR)")

	var setOp, management, families string
	set := &cobra.Command{
		Use:   "set",
		Short: "Set the service modes (families not listed become normal) and print them as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			modes, err := parseModes(management, families)
			if err != nil {
				return err
			}
			return callModes(cmd.Context(), stdout, setOp, http.MethodPut, modes.Get())
		},
	}
	set.Flags().StringVar(&setOp, "operator", envOr("RELAY_OPERATOR", defaultOperator), "the relay's operator listener (env RELAY_OPERATOR)")
	set.Flags().StringVar(&management, "management", manage.ModeNormal, "normal, unavailable, read_only or busy")
	set.Flags().StringVar(&families, "family-unavailable", "", "families to make unavailable, comma-separated: desktop, tv")
	modes.AddCommand(get, set)
	return modes
}

// callModes calls the operator listener's modes route and prints the
// modes it answers.
func callModes(ctx context.Context, stdout io.Writer, operator, method string, body any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	data, err := relayCall{Method: method, Base: operator, Path: manage.OperatorModesPath, Body: rd,
		Timeout: 10 * time.Second, Limit: 1 << 20, Name: "the relay's operator listener"}.do(ctx)
	var ae *answerError
	if errors.As(err, &ae) {
		return fmt.Errorf("the operator listener answered %d %s: %s", ae.Status, ae.Code, ae.Detail)
	}
	if err != nil {
		return err
	}
	var modes manage.ModeState
	if err := json.Unmarshal(data, &modes); err != nil {
		return fmt.Errorf("the operator listener answered modes the command cannot read")
	}
	return printJSON(stdout, modes)
}

// unnamedSupport is the name of a support token issued without --name.
const unnamedSupport = "unnamed"

func newTokensCmd(stdout io.Writer) *cobra.Command {
	tokens := &cobra.Command{Use: "tokens", Short: "Issue and revoke tokens"}

	var data, token, user, kind string
	revoke := &cobra.Command{
		Use:   "revoke",
		Short: `Revoke one token (--token, or "-" to read it from stdin) or a user's tokens (--user [--kind])`,
		Long: "Revoke a token of any kind, support tokens included. A running relay stops accepting\n" +
			"it within seconds and closes an agent tunnel that used it. Prints {\"revoked\": N} as JSON.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (token == "") == (user == "") {
				return errors.New("give exactly one of --token and --user")
			}
			token, err := tokenArg(cmd, token)
			if err != nil {
				return err
			}
			k, err := parseKind(kind, true)
			if err != nil {
				return err
			}
			if k == auth.KindSupport {
				return errors.New("support tokens belong to no user: revoke one with --token")
			}
			return withStore(cmd, data, func(ctx context.Context, st store.Store) error {
				n := 1
				if token != "" {
					if err := auth.RevokeToken(ctx, st, token, time.Now()); err != nil {
						if errors.Is(err, store.ErrNotFound) {
							return noSuch("token", "")
						}
						return err
					}
					recordTokenRevoked(ctx, cmd, st, auth.Hash(token))
				} else if n, err = auth.RevokeUserTokens(ctx, st, user, k, time.Now()); errors.Is(err, store.ErrNotFound) {
					return noSuch("user", "")
				} else if err != nil {
					return err
				} else if n > 0 {
					recordOperator(ctx, cmd, st, user, protocol.ActivityConfigChanged, fmt.Sprintf("%d token(s) revoked by the operator", n),
						map[string]any{"resource": "token", "op": "revoke", "kind": string(k), "count": n})
				}
				return printJSON(stdout, map[string]int{"revoked": n})
			})
		},
	}
	revoke.Flags().StringVar(&token, "token", "", `the token to revoke, or "-" to read it from standard input`)
	revoke.Flags().StringVar(&user, "user", "", "revoke the tokens of this user id")
	revoke.Flags().StringVar(&kind, "kind", "", "with --user: only tokens of this kind (api or agent)")
	revoke.Flags().StringVar(&data, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")

	var idata, iuser, ikind, iprofile, iname, iscope string
	var igrants []string
	issue := &cobra.Command{
		Use:   "issue",
		Short: `Issue a new token for a user and print {"userId","kind","token"} as JSON, or a support token`,
		Long: "Issue a new token. An API token has a response profile (--profile): standard,\n" +
			"the specification's {success, data} envelope, or compatible, the top-level shapes\n" +
			"of the service the specification describes (see \"Porting a bot\" in the README).\n" +
			"An API token has a scope (--scope): trade, the default, reads and trades; read\n" +
			"reads everything and is refused every write (403 insufficient_scope) on every door,\n" +
			"for AI assistants, dashboards and monitoring scripts.\n" +
			"\n" +
			"--kind support issues a support token instead: it belongs to no user, names the staff\n" +
			"member (--name, for the audit log) and may read the agent diagnostics and connection\n" +
			"history of the users it is granted (--grant, once per user), nothing else. It prints\n" +
			"{\"kind\",\"name\",\"grants\",\"token\"}. Grants never change: issue a new token and revoke\n" +
			"the old one.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := parseKind(ikind, false)
			if err != nil {
				return err
			}
			if k == auth.KindSupport {
				if cmd.Flags().Changed("user") || cmd.Flags().Changed("profile") {
					return errors.New("--user and --profile do not apply to support tokens (give --name and --grant)")
				}
				if cmd.Flags().Changed("scope") {
					return errScopeAPIOnly
				}
				if iname == "" {
					iname = unnamedSupport
				}
				return issueSupport(cmd, stdout, idata, iname, igrants)
			}
			if iuser == "" {
				return errors.New("--user is required")
			}
			if cmd.Flags().Changed("name") || cmd.Flags().Changed("grant") {
				return errors.New("--name and --grant apply to support tokens only")
			}
			prof, err := parseProfile(iprofile)
			if err != nil {
				return err
			}
			scope, err := auth.ParseScope(iscope)
			if err != nil || iscope == "" {
				return errors.New("--scope must be read or trade")
			}
			if k != auth.KindAPI && cmd.Flags().Changed("scope") {
				return errScopeAPIOnly
			}
			return withStore(cmd, idata, func(ctx context.Context, st store.Store) error {
				tok, err := auth.IssueTokenWith(ctx, st, iuser, k, auth.TokenOptions{Profile: prof, Scope: scope}, time.Now())
				if err != nil {
					if errors.Is(err, store.ErrNotFound) {
						return noSuch("user", "")
					}
					if errors.Is(err, auth.ErrProfileAPIOnly) {
						return errors.New("--profile applies to API tokens only")
					}
					return err
				}
				detail := map[string]any{"resource": "token", "id": auth.TokenID(auth.Hash(tok)), "op": "create", "kind": string(k)}
				if k == auth.KindAPI {
					detail["scope"] = string(scope)
				}
				recordOperator(ctx, cmd, st, iuser, protocol.ActivityConfigChanged, "A new "+string(k)+" token issued by the operator", detail)
				out := map[string]string{"userId": iuser, "kind": string(k), "token": tok}
				if k == auth.KindAPI {
					out["profile"], out["scope"] = string(prof), string(scope)
				}
				return printJSON(stdout, out)
			})
		},
	}
	issue.Flags().StringVar(&iuser, "user", "", "user id (required for api and agent tokens)")
	issue.Flags().StringVar(&ikind, "kind", "", "api, agent or support (required)")
	issue.Flags().StringVar(&iprofile, "profile", string(profile.Standard), "response profile of an API token: standard or compatible")
	issue.Flags().StringVar(&iscope, "scope", string(auth.ScopeTrade), "scope of an API token: trade (read and place orders) or read (read only)")
	issue.Flags().StringVar(&iname, "name", "", `support tokens: the staff member's name, for the audit log (default "`+unnamedSupport+`": the log then tells staff apart by the token's id only)`)
	issue.Flags().StringArrayVar(&igrants, "grant", nil, "support tokens: a user id the token may read; repeat for each user")
	issue.Flags().StringVar(&idata, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")
	_ = issue.MarkFlagRequired("kind")

	var pdata, ptoken, pprofile string
	setProfile := &cobra.Command{
		Use:   "profile",
		Short: `Set an API token's response profile (--token, or "-" to read it from stdin) and print {"profile"} as JSON`,
		Long: "Set the response profile of an API token: standard or compatible. A running relay\n" +
			"applies it within seconds. Prefer --token - and the token on standard input:\n" +
			"command lines are visible to other users of the machine.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			prof, err := parseProfile(pprofile)
			if err != nil {
				return err
			}
			tok, err := tokenArg(cmd, ptoken)
			if err != nil {
				return err
			}
			return withStore(cmd, pdata, func(ctx context.Context, st store.Store) error {
				switch err := auth.SetTokenProfile(ctx, st, tok, prof); {
				case errors.Is(err, store.ErrNotFound):
					return noSuch("token", "")
				case errors.Is(err, auth.ErrProfileAPIOnly):
					return errors.New("response profiles apply to API tokens only")
				case err != nil:
					return err
				}
				if t, _, err := st.LookupToken(ctx, auth.Hash(tok)); err == nil {
					recordOperator(ctx, cmd, st, t.UserID, protocol.ActivityConfigChanged, "An API token's response profile set to "+string(prof)+" by the operator",
						map[string]any{"resource": "token", "id": auth.TokenID(t.Hash), "op": "update",
							"changes": []map[string]any{{"field": "profile", "after": string(prof)}}})
				}
				return printJSON(stdout, map[string]string{"profile": string(prof)})
			})
		},
	}
	setProfile.Flags().StringVar(&ptoken, "token", "", `the API token, or "-" to read it from standard input (required)`)
	setProfile.Flags().StringVar(&pprofile, "profile", "", "standard or compatible (required)")
	setProfile.Flags().StringVar(&pdata, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")
	_ = setProfile.MarkFlagRequired("token")
	_ = setProfile.MarkFlagRequired("profile")

	var ldata, luser string
	list := &cobra.Command{
		Use:   "list",
		Short: `List a user's tokens (never their text) and print {"userId","tokens":[…]} as JSON`,
		Long: "List a user's tokens, revoked ones included: a short id (the start of the token's\n" +
			"hash), its kind, an API token's response profile and scope, and when it was issued\n" +
			"and revoked.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, ldata, func(ctx context.Context, st store.Store) error {
				ts, err := auth.ListTokens(ctx, st, luser)
				if errors.Is(err, store.ErrNotFound) {
					return noSuch("user", "")
				}
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"userId": luser, "tokens": ts})
			})
		},
	}
	list.Flags().StringVar(&luser, "user", "", "user id (required)")
	list.Flags().StringVar(&ldata, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")
	_ = list.MarkFlagRequired("user")

	tokens.AddCommand(revoke, issue, setProfile, list)
	return tokens
}

// errScopeAPIOnly refuses --scope for a token other than an API token.
var errScopeAPIOnly = errors.New("--scope applies to API tokens only")

// parseProfile reads a --profile flag.
func parseProfile(s string) (profile.Profile, error) {
	p, err := profile.Parse(s)
	if err != nil || s == "" {
		return "", errors.New("--profile must be standard or compatible")
	}
	return p, nil
}

// tokenArg returns a --token flag's token, read from standard input when
// the flag is "-".
func tokenArg(cmd *cobra.Command, flag string) (string, error) {
	if flag != "-" {
		return flag, nil
	}
	b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 4096))
	if err != nil {
		return "", err
	}
	return string(bytes.TrimSpace(b)), nil
}

func parseKind(s string, allowEmpty bool) (auth.Kind, error) {
	switch auth.Kind(s) {
	case auth.KindAPI, auth.KindAgent, auth.KindSupport:
		return auth.Kind(s), nil
	case "":
		if allowEmpty {
			return "", nil
		}
	}
	return "", errors.New("--kind must be api, agent or support")
}

// redisLogger routes the Redis client's own messages (failed dials while
// Redis is away) to the relay's log.
type redisLogger struct{ s *zap.SugaredLogger }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) { l.s.Warnf(format, v...) }

// withStore opens the store the command's --store flag names (SQLite in
// dir when it is empty), runs fn on it and closes it. A lookup that found
// nothing (noSuch, or the store's ErrNotFound) names the store it was
// made in, a PostgreSQL URL without its password: a command pointed at
// the wrong --data says so.
func withStore(cmd *cobra.Command, dir string, fn func(context.Context, store.Store) error) error {
	url, _ := cmd.Flags().GetString("store")
	opts := store.DialOptions{URL: url, Dir: dir}
	st, err := store.Dial(cmd.Context(), opts)
	if err != nil {
		return fmt.Errorf("opening the store %s: %w", opts.Describe(), err)
	}
	defer st.Close()
	err = fn(cmd.Context(), st)
	var nf *notFoundError
	switch {
	case errors.As(err, &nf):
		nf.store = opts.Describe()
	case errors.Is(err, store.ErrNotFound):
		err = fmt.Errorf("%w (in store %s)", err, opts.Describe())
	}
	return err
}

// notFoundError is a store command's "no such user" (token, …): a lookup
// in the store the command opened found nothing. withStore fills in the
// store.
type notFoundError struct {
	what, hint, store string
}

func (e *notFoundError) Error() string {
	s := "no such " + e.what
	if e.store != "" {
		s += " in store " + e.store
	}
	if e.hint != "" {
		s += " (" + e.hint + ")"
	}
	return s
}

// noSuch reports that the store holds no such thing (what: "user",
// "token"); hint, when not empty, says what the flag takes.
func noSuch(what, hint string) error { return &notFoundError{what: what, hint: hint} }

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	return enc.Encode(v)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// envDuration reads a positive duration (time.ParseDuration) from the
// environment; def when unset.
func envDuration(key string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(key)
	if v == "" {
		return def, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d, nil
	}
	return def, fmt.Errorf("%s must be a positive duration such as 10s", key)
}
