package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"tradebridge/protocol"
	"tradebridge/relay/activity"
	"tradebridge/relay/auth"
	"tradebridge/relay/store"
)

// recordOperator writes an entry of the operator's command line (source
// operator) to the user's activity log, straight to the store: a running
// relay's sockets do not stream it, the route reads it. A failure is
// reported on standard error; the change the command made stands.
func recordOperator(ctx context.Context, cmd *cobra.Command, st store.Store, userID, kind, summary string, detail map[string]any) {
	raw, err := json.Marshal(detail)
	if err == nil {
		_, _, err = st.AppendActivity(ctx, userID, store.ActivityRecord{At: time.Now(), Kind: kind, Class: activity.Class(kind),
			SourceKind: protocol.SourceOperator, Summary: summary, Detail: raw})
	}
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: the change is made, but recording it in the user's activity log failed: %v\n", err)
	}
}

// recordAccess records a change of the user's access to the Management
// API (relay users access) as config.changed, resource "access".
func recordAccess(ctx context.Context, cmd *cobra.Command, st store.Store, was, now store.User) {
	var changes []map[string]any
	if was.ManagementClosed != now.ManagementClosed {
		changes = append(changes, map[string]any{"field": "management", "before": accessOf(was), "after": accessOf(now)})
	}
	if !slices.Equal(was.Withheld, now.Withheld) {
		changes = append(changes, map[string]any{"field": "withheld", "before": nonNil(was.Withheld), "after": nonNil(now.Withheld)})
	}
	if len(changes) == 0 {
		return
	}
	recordOperator(ctx, cmd, st, now.ID, protocol.ActivityConfigChanged, "Access to the Management API changed by the operator",
		map[string]any{"resource": "access", "op": "update", "changes": changes})
}

// recordTokenRevoked records the revocation of one token, by its hash, in
// its user's log.
func recordTokenRevoked(ctx context.Context, cmd *cobra.Command, st store.Store, hash string) {
	t, _, err := st.LookupToken(ctx, hash)
	if err != nil || t.UserID == "" {
		return // a support token belongs to no user
	}
	recordOperator(ctx, cmd, st, t.UserID, protocol.ActivityConfigChanged, "A "+t.Kind+" token revoked by the operator",
		map[string]any{"resource": "token", "id": auth.TokenID(hash), "op": "revoke", "kind": t.Kind})
}

func accessOf(u store.User) string {
	if u.ManagementClosed {
		return "closed"
	}
	return "open"
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
