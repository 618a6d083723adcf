package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"tradebridge/protocol"
	"tradebridge/relay/activity"
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
