package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tradebridge/relay/auth"
	"tradebridge/relay/store"
	"tradebridge/relay/support"
)

// supportTokenEnv holds the support token of relay support agent.
const supportTokenEnv = "RELAY_SUPPORT_TOKEN"

// defaultRelayURL is the relay relay support agent calls by default.
const defaultRelayURL = "http://127.0.0.1:8080"

func newSupportCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "support",
		Short: "Support tokens, and a user's agent as support staff see it",
		Long: "Support staff read a trader's agent diagnostics and connection history with a support\n" +
			"token (relay tokens issue --kind support --name NAME --grant USER…), and nothing else.\n" +
			"relay support tokens lists the support tokens; relay support agent USER reads a user's\n" +
			"agent from a running relay.",
	}
	cmd.AddCommand(newSupportTokensCmd(stdout), newSupportAgentCmd(stdout))
	return cmd
}

// issueSupport issues a support token and prints it.
func issueSupport(cmd *cobra.Command, stdout io.Writer, data, name string, grants []string) error {
	return withStore(cmd, data, func(ctx context.Context, st store.Store) error {
		tok, err := auth.IssueSupportToken(ctx, st, name, grants, time.Now())
		switch {
		case errors.Is(err, store.ErrNotFound):
			return noSuch("user", "every --grant must be an existing user id")
		case errors.Is(err, auth.ErrSupportName):
			return errors.New("--name is required: the staff member's name, 1 to 100 bytes")
		case errors.Is(err, auth.ErrNoGrants):
			return errors.New("give at least one --grant USER")
		case errors.Is(err, auth.ErrTooManyGrants):
			return fmt.Errorf("give at most %d --grant", auth.MaxGrants)
		case err != nil:
			return err
		}
		p, err := st.SupportToken(ctx, auth.Hash(tok))
		if err != nil {
			return err
		}
		return printJSON(stdout, struct {
			Kind   auth.Kind `json:"kind"`
			Name   string    `json:"name"`
			Grants []string  `json:"grants"`
			Token  string    `json:"token"`
		}{auth.KindSupport, p.Name, p.Grants, tok})
	})
}

func newSupportTokensCmd(stdout io.Writer) *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "tokens",
		Short: `List the support tokens (never their text) and print {"tokens":[…]} as JSON`,
		Long: "List the support tokens, revoked ones included, oldest first: a short id (the start\n" +
			"of the token's hash, which the relay's audit lines name), the staff member's name, the\n" +
			"users it may read, and when it was issued and revoked.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, data, func(ctx context.Context, st store.Store) error {
				ts, err := auth.ListSupportTokens(ctx, st)
				if err != nil {
					return err
				}
				return printJSON(stdout, map[string]any{"tokens": ts})
			})
		},
	}
	cmd.Flags().StringVar(&data, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")
	return cmd
}

func newSupportAgentCmd(stdout io.Writer) *cobra.Command {
	var relayURL, token string
	cmd := &cobra.Command{
		Use:   "agent <user-id>",
		Short: "Print a user's agent, its diagnostics and connection history as JSON",
		Long: "Call a running relay's support route (GET /v1/support/users/{userId}/agent) with a\n" +
			"support token and print its answer's data as JSON: whether the agent is connected, its\n" +
			"session, version, platform and connections, its latest diagnostics and where they come\n" +
			"from (live, connect, stored or none), and its connection history of the last 30 days.\n" +
			"The token is read from " + supportTokenEnv + ", or from standard input with --token -\n" +
			"(never from the command line, which other users of the machine can see). A refusal\n" +
			"prints its code and detail and exits 1.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tok := os.Getenv(supportTokenEnv)
			switch token {
			case "":
			case "-":
				var err error
				if tok, err = tokenArg(cmd, token); err != nil {
					return err
				}
			default:
				return errors.New("--token takes only \"-\" (the token on standard input); or set " + supportTokenEnv)
			}
			if tok == "" {
				return errors.New("no support token: set " + supportTokenEnv + " or give --token - and the token on standard input")
			}
			return callSupport(cmd.Context(), stdout, relayURL, tok, args[0])
		},
	}
	cmd.Flags().StringVar(&relayURL, "relay", envOr("RELAY_URL", defaultRelayURL), "the relay's base URL (env RELAY_URL)")
	cmd.Flags().StringVar(&token, "token", "", `"-" to read the support token from standard input (default: env `+supportTokenEnv+`)`)
	return cmd
}

// callSupport reads userID's agent from the relay at base and prints the
// answer's data.
func callSupport(ctx context.Context, stdout io.Writer, base, token, userID string) error {
	path := strings.Replace(support.Path, "{userId}", url.PathEscape(userID), 1)
	data, err := relayCall{Method: http.MethodGet, Base: base, Path: path, Token: token,
		Timeout: 30 * time.Second, Limit: 8 << 20}.do(ctx)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, data, "", "  "); err != nil {
		return fmt.Errorf("the relay answered data the command cannot read")
	}
	b.WriteByte('\n')
	_, err = stdout.Write(b.Bytes())
	return err
}
