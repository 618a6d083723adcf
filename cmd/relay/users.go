package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/store"
)

// plansText lists the plans, lowest first, for help and refusals.
const plansText = "free, pro or elite"

// userPlan is what relay users plan prints.
type userPlan struct {
	UserID       string `json:"userId"`
	Plan         string `json:"plan"`
	PreviousPlan string `json:"previousPlan"`
}

func newUsersPlanCmd(stdout io.Writer) *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "plan <user-id> <plan>",
		Short: `Change a user's plan (free, pro or elite) and print {"userId","plan","previousPlan"} as JSON`,
		Long: "Change a user's plan: free (the dashboard only), pro (the trading API, the stream\n" +
			"socket, the webhook) or elite (pro and the Management API). The change is recorded in\n" +
			"the user's activity log (config.changed, source operator).\n" +
			"\n" +
			"A running relay applies it within 2 s to API and Management API calls (its token\n" +
			"cache), at once to the dashboard's pages, and to a live stream socket at its next rpc or\n" +
			"subscribe frame after those 2 s (30 s when it sends none): a socket whose new plan no\n" +
			"longer includes the API is refused that frame and closed (1008). The agent's tunnel\n" +
			"does not depend on the plan.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			userID := args[0]
			p, err := auth.ParsePlan(args[1])
			if err != nil {
				return errors.New("unknown plan: the plans are " + plansText)
			}
			return withStore(cmd, data, func(ctx context.Context, st store.Store) error {
				u, err := st.User(ctx, userID)
				if errors.Is(err, store.ErrNotFound) {
					return noSuch("user", "")
				}
				if err != nil {
					return err
				}
				if u.Plan != string(p) {
					if err := st.SetUserPlan(ctx, userID, string(p)); err != nil {
						return err
					}
					recordOperator(ctx, cmd, st, userID, protocol.ActivityConfigChanged, "Plan changed to "+string(p)+" by the operator",
						map[string]any{"resource": "plan", "op": "update",
							"changes": []map[string]any{{"field": "plan", "before": u.Plan, "after": string(p)}}})
				}
				return printJSON(stdout, userPlan{UserID: userID, Plan: string(p), PreviousPlan: u.Plan})
			})
		},
	}
	cmd.Flags().StringVar(&data, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")
	return cmd
}

// listedUser is one user as relay users list prints it: never a
// password hash or a token.
type listedUser struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Email     string `json:"email"`
	Plan      string `json:"plan"`
	CreatedAt string `json:"createdAt"`
}

func newUsersListCmd(stdout io.Writer) *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "list",
		Short: `List the users and print {"users":[{"id","name","email","plan","createdAt"}]} as JSON`,
		Long: "List every user of the store, oldest first: the id the other commands take (relay\n" +
			"users access, relay users plan, relay tokens issue --user, relay tokens issue --kind\n" +
			"support --grant, relay broker link --user), the name, the dashboard's email (\"\" when\n" +
			"none), the plan and when the user was created. Never a password hash or a token.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, data, func(ctx context.Context, st store.Store) error {
				us, err := st.ListUsers(ctx)
				if err != nil {
					return err
				}
				out := make([]listedUser, 0, len(us))
				for _, u := range us {
					out = append(out, listedUser{ID: u.ID, Name: u.Name, Email: u.Email, Plan: u.Plan,
						CreatedAt: protocol.FormatTime(u.CreatedAt)})
				}
				return printJSON(stdout, map[string]any{"users": out})
			})
		},
	}
	cmd.Flags().StringVar(&data, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")
	return cmd
}
