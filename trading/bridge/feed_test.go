package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/trading/bridge"
)

func TestFeedNumbersAndFansOut(t *testing.T) {
	t.Parallel()
	f := bridge.NewFeed(8)
	a, b := f.Subscribe(t.Context()), f.Subscribe(t.Context())
	require.Equal(t, 2, f.Readers())
	built := false
	bridge.NewFeed(1).PublishFunc(func() bridge.Event { built = true; return bridge.Event{} })
	require.False(t, built, "an event nobody reads is not built")
	f.PublishFunc(func() bridge.Event { return bridge.Event{Kind: bridge.EventQuote} })
	f.Publish(bridge.Event{Kind: bridge.EventOrder})
	f.Publish(bridge.Event{Kind: bridge.EventPosition})
	for _, ch := range []<-chan bridge.Event{a, b} {
		require.Equal(t, bridge.Event{Seq: 1, Kind: bridge.EventQuote}, <-ch)
		require.Equal(t, bridge.Event{Seq: 2, Kind: bridge.EventOrder}, <-ch)
		require.Equal(t, bridge.Event{Seq: 3, Kind: bridge.EventPosition}, <-ch)
	}
}

func TestFeedTellsASlowReaderItLostEvents(t *testing.T) {
	t.Parallel()
	f := bridge.NewFeed(2)
	ch := f.Subscribe(t.Context())
	for range 5 {
		f.Publish(bridge.Event{Kind: bridge.EventQuote}) // 3, 4 and 5 do not fit
	}
	require.Equal(t, uint64(1), (<-ch).Seq)
	require.Equal(t, uint64(2), (<-ch).Seq)
	f.Publish(bridge.Event{Kind: bridge.EventQuote})
	require.Equal(t, bridge.Event{Seq: 6, Lost: true}, <-ch, "the marker comes first, as soon as there is room")
	require.Equal(t, bridge.Event{Seq: 6, Kind: bridge.EventQuote}, <-ch)
}

func TestFeedEnds(t *testing.T) {
	t.Parallel()
	f := bridge.NewFeed(0)
	ctx, cancel := context.WithCancel(context.Background())
	ch := f.Subscribe(ctx)
	cancel()
	_, open := <-ch
	require.False(t, open, "a reader's stream ends with its ctx")
	require.Eventually(t, func() bool { return f.Readers() == 0 }, testkit.Medium, time.Millisecond)
	kept := f.Subscribe(t.Context())
	f.Close()
	f.Close()
	_, open = <-kept
	require.False(t, open, "Close ends every stream")
	_, open = <-f.Subscribe(t.Context())
	require.False(t, open, "a stream asked for after Close is closed")
	f.Publish(bridge.Event{Kind: bridge.EventOrder}) // does nothing
}
