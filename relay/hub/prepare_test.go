package hub_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/hub"
)

// Options.Prepare runs on a new tunnel before any other call reaches the
// agent: the tunnel is registered, the other calls wait for Prepare, the
// configuration it pushed is the tunnel's ConfigApplied.
func TestPrepareRunsFirst(t *testing.T) {
	release := make(chan struct{})
	prepared := make(chan agentcall.Info, 1)
	e := newEnvWith(t, func(o *hub.Options) {
		o.Prepare = func(ctx context.Context, userID string, info agentcall.Info, call hub.CallFunc) {
			_, err := call(ctx, protocol.FnApplyConfig, json.RawMessage(`{"version":7}`))
			if err != nil {
				t.Errorf("push on connect: %v", err)
			}
			prepared <- info
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	})
	a := e.startAgent("agent-a", "A")
	e.waitConnected("usr_a")
	info := <-prepared
	require.Equal(t, "fake", info.Hello.Platform)

	got := make(chan error, 1)
	go func() {
		_, err := call(t, e.hub, "usr_a", "Echo", testkit.Medium)
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a call was served during Prepare: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	require.Equal(t, int64(1), a.handler.calls.Load(), "only the push reached the agent")
	now, ok := e.hub.Info("usr_a")
	require.True(t, ok)
	require.Equal(t, int64(7), now.ConfigApplied)

	close(release)
	require.NoError(t, <-got)
	require.Equal(t, int64(2), a.handler.calls.Load())
}

// A Prepare that does not return in PrepareTimeout lets the calls through
// at the timeout; a call whose deadline passes first ends with it, nothing
// sent.
func TestPrepareBounded(t *testing.T) {
	e := newEnvWith(t, func(o *hub.Options) {
		o.PrepareTimeout = 300 * time.Millisecond
		o.Prepare = func(ctx context.Context, _ string, _ agentcall.Info, _ hub.CallFunc) { <-ctx.Done() }
	})
	a := e.startAgent("agent-a", "A")
	e.waitConnected("usr_a")
	_, err := call(t, e.hub, "usr_a", "Echo", 20*time.Millisecond)
	require.ErrorIs(t, err, agentcall.ErrTimeout)
	require.Zero(t, a.handler.calls.Load())
	_, err = call(t, e.hub, "usr_a", "Echo", testkit.Medium)
	require.NoError(t, err)
	info, _ := e.hub.Info("usr_a")
	require.Zero(t, info.ConfigApplied)
}
