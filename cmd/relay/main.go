// Command relay is the cloud relay: it serves the trading API and the agent
// tunnels (relay serve) and administers users and tokens (relay users,
// relay tokens) in its data directory.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"tradebridge/cmd/internal/logflags"
	"tradebridge/relay"
	"tradebridge/relay/auth"
	"tradebridge/relay/store"
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
	root.AddCommand(newServeCmd(), newUsersCmd(stdout), newTokensCmd(stdout))
	return root
}

func newServeCmd() *cobra.Command {
	var (
		listen, data string
		logs         logflags.Flags
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the trading API and agent tunnels",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logs.Logger()
			if err != nil {
				return err
			}
			defer log.Sync() //nolint:errcheck
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			st, err := store.Open(ctx, store.Options{Dir: data, Logger: log})
			if err != nil {
				return fmt.Errorf("opening the data directory: %w", err)
			}
			defer st.Close()
			r, err := relay.New(relay.Options{Store: st, Logger: log})
			if err != nil {
				return err
			}
			defer r.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("cannot listen on %s: %w", listen, err)
			}
			return r.Serve(ctx, ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", envOr("RELAY_LISTEN", "127.0.0.1:8080"), "address to listen on (env RELAY_LISTEN)")
	cmd.Flags().StringVar(&data, "data", envOr("RELAY_DATA", "./relay-data"), "data directory holding the SQLite store (env RELAY_DATA)")
	logs.Register(cmd.Flags())
	return cmd
}

func newUsersCmd(stdout io.Writer) *cobra.Command {
	users := &cobra.Command{Use: "users", Short: "Administer users"}
	var name, plan, data string
	add := &cobra.Command{
		Use:   "add",
		Short: `Create a user and print {"userId","apiToken","agentToken"} as JSON`,
		Long: "Create a user with one API token (for bot authors) and one agent token (for the\n" +
			"trader's agent), and print them once as a JSON object on standard output.\n" +
			"Only their SHA-256 hashes are stored.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := auth.ParsePlan(plan)
			if err != nil {
				return fmt.Errorf("--plan must be free, pro or elite")
			}
			return withStore(cmd.Context(), data, func(ctx context.Context, st *store.SQLite) error {
				creds, err := auth.CreateUser(ctx, st, name, p, time.Now())
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
	_ = add.MarkFlagRequired("name")
	users.AddCommand(add)
	return users
}

func newTokensCmd(stdout io.Writer) *cobra.Command {
	tokens := &cobra.Command{Use: "tokens", Short: "Issue and revoke tokens"}

	var data, token, user, kind string
	revoke := &cobra.Command{
		Use:   "revoke",
		Short: `Revoke one token (--token, or "-" to read it from stdin) or a user's tokens (--user [--kind])`,
		Long: "Revoke a token. A running relay stops accepting it within seconds and closes an\n" +
			"agent tunnel that used it. Prints {\"revoked\": N} as JSON.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (token == "") == (user == "") {
				return errors.New("give exactly one of --token and --user")
			}
			if token == "-" {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 4096))
				if err != nil {
					return err
				}
				token = string(bytes.TrimSpace(b))
			}
			k, err := parseKind(kind, true)
			if err != nil {
				return err
			}
			return withStore(cmd.Context(), data, func(ctx context.Context, st *store.SQLite) error {
				n := 1
				if token != "" {
					if err := auth.RevokeToken(ctx, st, token, time.Now()); err != nil {
						if errors.Is(err, store.ErrNotFound) {
							return errors.New("no such token")
						}
						return err
					}
				} else if n, err = auth.RevokeUserTokens(ctx, st, user, k, time.Now()); err != nil {
					return err
				}
				return printJSON(stdout, map[string]int{"revoked": n})
			})
		},
	}
	revoke.Flags().StringVar(&token, "token", "", `the token to revoke, or "-" to read it from standard input`)
	revoke.Flags().StringVar(&user, "user", "", "revoke the tokens of this user id")
	revoke.Flags().StringVar(&kind, "kind", "", "with --user: only tokens of this kind (api or agent)")
	revoke.Flags().StringVar(&data, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")

	var idata, iuser, ikind string
	issue := &cobra.Command{
		Use:   "issue",
		Short: `Issue a new token for a user and print {"userId","kind","token"} as JSON`,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := parseKind(ikind, false)
			if err != nil {
				return err
			}
			return withStore(cmd.Context(), idata, func(ctx context.Context, st *store.SQLite) error {
				tok, err := auth.IssueToken(ctx, st, iuser, k, time.Now())
				if err != nil {
					if errors.Is(err, store.ErrNotFound) {
						return errors.New("no such user")
					}
					return err
				}
				return printJSON(stdout, map[string]string{"userId": iuser, "kind": string(k), "token": tok})
			})
		},
	}
	issue.Flags().StringVar(&iuser, "user", "", "user id (required)")
	issue.Flags().StringVar(&ikind, "kind", "", "api or agent (required)")
	issue.Flags().StringVar(&idata, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")
	_ = issue.MarkFlagRequired("user")
	_ = issue.MarkFlagRequired("kind")

	tokens.AddCommand(revoke, issue)
	return tokens
}

func parseKind(s string, allowEmpty bool) (auth.Kind, error) {
	switch auth.Kind(s) {
	case auth.KindAPI, auth.KindAgent:
		return auth.Kind(s), nil
	case "":
		if allowEmpty {
			return "", nil
		}
	}
	return "", errors.New("--kind must be api or agent")
}

func withStore(ctx context.Context, dir string, fn func(context.Context, *store.SQLite) error) error {
	st, err := store.Open(ctx, store.Options{Dir: dir})
	if err != nil {
		return fmt.Errorf("opening the data directory: %w", err)
	}
	defer st.Close()
	return fn(ctx, st)
}

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
