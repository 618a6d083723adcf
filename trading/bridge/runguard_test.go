package bridge_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge"
)

func TestRunGuardRefusesASecondRunAndRunsAgainAfterTheFirst(t *testing.T) {
	t.Parallel()
	var g bridge.RunGuard
	ctx, end, err := g.Begin(t.Context())
	require.NoError(t, err)
	_, _, err = g.Begin(t.Context())
	require.ErrorIs(t, err, bridge.ErrRunning)
	require.NoError(t, ctx.Err(), "the run's context lives until the run ends")
	end()
	end() // a second call does nothing
	require.Error(t, ctx.Err(), "end cancels the run's context")

	ctx2, end2, err := g.Begin(t.Context())
	require.NoError(t, err, "a guard runs again after its run ended")
	end2()
	require.Error(t, ctx2.Err())
	assert.False(t, g.Closed())
}

func TestRunGuardRunEndsWithItsCaller(t *testing.T) {
	t.Parallel()
	var g bridge.RunGuard
	parent, cancel := context.WithCancel(t.Context())
	ctx, end, err := g.Begin(parent)
	require.NoError(t, err)
	defer end()
	cancel()
	<-ctx.Done()
	assert.False(t, g.Closed(), "the caller's context does not close the guard")
}

func TestRunGuardCloseEndsTheRunAndWaitsForIt(t *testing.T) {
	t.Parallel()
	var g bridge.RunGuard
	ctx, end, err := g.Begin(t.Context())
	require.NoError(t, err)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		<-ctx.Done() // Close cancels the run's context
		end()
	}()
	closed := make(chan struct{})
	go func() { defer close(closed); g.Close() }()
	<-ended
	<-closed
	<-g.Done()
	assert.True(t, g.Closed())
	_, _, err = g.Begin(t.Context())
	require.ErrorIs(t, err, bridge.ErrClosed)
	g.Close() // idempotent, with nothing to wait for
}

func TestRunGuardCloseWaitsForTheRun(t *testing.T) {
	t.Parallel()
	var g bridge.RunGuard
	_, end, err := g.Begin(t.Context())
	require.NoError(t, err)
	closed := make(chan struct{})
	go func() { defer close(closed); g.Close() }()
	<-g.Done()
	select {
	case <-closed:
		t.Fatal("Close returned while the run had not ended")
	default:
	}
	end()
	<-closed
}

func TestRunGuardZeroValueCloses(t *testing.T) {
	t.Parallel()
	var g bridge.RunGuard
	assert.False(t, g.Closed())
	g.Close()
	assert.True(t, g.Closed())
	_, _, err := g.Begin(t.Context())
	require.ErrorIs(t, err, bridge.ErrClosed)
}
