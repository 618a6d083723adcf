package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/spf13/cobra"

	"tradebridge/protocol"
	"tradebridge/relay/pairing"
	"tradebridge/relay/store"
)

// newAgentsCmd is `relay agents`: the operator's side of pairing a PC.
func newAgentsCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "agents", Short: "Pair traders' PCs with their users"}
	var data, user string
	code := &cobra.Command{
		Use:   "pair-code",
		Short: `Mint a one-time pairing code for a user and print {"code","expiresAt"} as JSON`,
		Long: "Mint a one-time code that pairs a PC's agent with the user: on the PC,\n" +
			"`agent pair CODE --relay URL` exchanges it for a new agent token. A code is 8 capital\n" +
			"letters and digits, shown XXXX-XXXX; it is accepted once, within 10 minutes. A user\n" +
			"has at most 5 codes waiting (minting one more forgets the oldest). Only the code's\n" +
			"SHA-256 is stored. Prints {\"code\":\"XXXX-XXXX\",\"expiresAt\":\"RFC 3339\"}.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, data, func(ctx context.Context, st store.Store) error {
				c, err := pairing.Mint(ctx, st, user, time.Now())
				if errors.Is(err, store.ErrNotFound) {
					return noSuch("user", "--user takes a user id, usr_…")
				}
				if err != nil {
					return err
				}
				recordOperator(ctx, cmd, st, user, protocol.ActivityConfigChanged, "A pairing code minted by the operator",
					map[string]any{"resource": "pairing-code", "op": "create", "expiresAt": protocol.FormatTime(c.ExpiresAt)})
				return printJSON(stdout, struct {
					Code      string `json:"code"`
					ExpiresAt string `json:"expiresAt"`
				}{c.Code, c.ExpiresAt.UTC().Format(time.RFC3339)})
			})
		},
	}
	code.Flags().StringVar(&user, "user", "", "the user id the code pairs with (required)")
	code.Flags().StringVar(&data, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")
	_ = code.MarkFlagRequired("user")
	cmd.AddCommand(code)
	return cmd
}
