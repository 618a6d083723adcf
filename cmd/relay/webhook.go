package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tradebridge/protocol"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
	"tradebridge/relay/webhook"
)

// TradingViewAddresses are the addresses TradingView sends its webhook
// alerts from, as its documentation lists them: the value to give
// --webhook-allow to take alerts from TradingView only.
const TradingViewAddresses = "52.89.214.238/32,34.212.75.30/32,54.218.53.128/32,52.32.178.7/32"

func newWebhookCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "webhook",
		Short: "Show or rotate a user's TradingView webhook",
		Long: "A user's TradingView webhook is a URL on the relay (/v1/send/<id>) and a secret key every\n" +
			"alert's message carries (key=<key>;). The key is sealed with the key file (--secret-keys,\n" +
			"default DATA/" + secretKeysFile + ") so that it can be shown again.",
	}
	cmd.AddCommand(newWebhookShowCmd(stdout), newWebhookRotateCmd(stdout))
	return cmd
}

func newWebhookShowCmd(stdout io.Writer) *cobra.Command {
	var data, keys, user string
	cmd := &cobra.Command{
		Use:   "show",
		Short: `Print a user's TradingView webhook as {"url":"/v1/send/…","key":"…"} (made on first use)`,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withWebhook(cmd, data, keys, user, webhook.Show, stdout, nil)
		},
	}
	webhookFlags(cmd, &data, &keys, &user)
	return cmd
}

func newWebhookRotateCmd(stdout io.Writer) *cobra.Command {
	var data, keys, user string
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: `Issue a new key for a user's TradingView webhook and print {"url":"/v1/send/…","key":"…"}`,
		Long: "Issue a new key for the user's webhook: alerts with the old key are refused (401) from\n" +
			"the next one on, on every relay node. The URL stays. The rotation is recorded in the\n" +
			"user's activity log (config.changed, source operator).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withWebhook(cmd, data, keys, user, webhook.Rotate, stdout, func(ctx context.Context, st store.Store, in webhook.Info) {
				recordOperator(ctx, cmd, st, user, protocol.ActivityConfigChanged, "TradingView webhook key rotated by the operator",
					map[string]any{"resource": "webhook", "id": strings.TrimPrefix(in.URL, "/v1/send/"), "op": "rotate",
						"changes": []map[string]any{{"field": "key", "changed": true}}})
			})
		},
	}
	webhookFlags(cmd, &data, &keys, &user)
	return cmd
}

func webhookFlags(cmd *cobra.Command, data, keys, user *string) {
	cmd.Flags().StringVar(data, "data", envOr("RELAY_DATA", "./relay-data"), "data directory (env RELAY_DATA)")
	secretKeysFlag(cmd.Flags(), keys)
	cmd.Flags().StringVar(user, "user", "", "the relay user's id (required)")
	_ = cmd.MarkFlagRequired("user")
}

// withWebhook runs op (webhook.Show or webhook.Rotate) for the user,
// then done, and prints the webhook.
func withWebhook(cmd *cobra.Command, data, keysPath, user string,
	op func(context.Context, webhook.KeyStore, *sealed.Keyring, string, time.Time) (webhook.Info, error),
	stdout io.Writer, done func(context.Context, store.Store, webhook.Info)) error {
	return withStore(cmd, data, func(ctx context.Context, st store.Store) error {
		keys, err := loadSecretKeys(keysPath, data)
		if err != nil {
			return err
		}
		in, err := op(ctx, st, keys, user, time.Now())
		if errors.Is(err, store.ErrNotFound) {
			return noSuch("user", "")
		}
		if err != nil {
			return err
		}
		if done != nil {
			done(ctx, st, in)
		}
		return printJSON(stdout, in)
	})
}

// parseAllow reads --webhook-allow: addresses or CIDR prefixes,
// comma-separated; empty allows every address.
func parseAllow(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !strings.Contains(part, "/") {
			a, err := netip.ParseAddr(part)
			if err != nil {
				return nil, fmt.Errorf("--webhook-allow: not an address or a CIDR prefix: %q", part)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("--webhook-allow: not an address or a CIDR prefix: %q", part)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
