package backoff

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNextDoublesUpToMaxWithFullJitter(t *testing.T) {
	t.Parallel()
	b := Backoff{Min: 500 * time.Millisecond, Max: 30 * time.Second}
	b.Rand = func() float64 { return 0.999999 } // the ceiling, nearly
	var got []time.Duration
	for range 9 {
		got = append(got, b.Next().Round(time.Millisecond))
	}
	require.Equal(t, []time.Duration{
		500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second,
	}, got)
	b.Reset()
	require.Equal(t, 500*time.Millisecond, b.Next().Round(time.Millisecond))

	b.Rand = func() float64 { return 0 }
	require.Equal(t, time.Duration(0), b.Next(), "full jitter reaches zero")
	require.Equal(t, 15*time.Second, b.Patient(), "patient waits at least half of Max")

	b.Rand = func() float64 { return 0.5 }
	for range 100 { // far past any overflow of a doubling
		d := b.Next()
		require.GreaterOrEqual(t, d, time.Duration(0))
		require.LessOrEqual(t, d, 30*time.Second)
	}
}

func TestFloorIsAddedToEveryDelay(t *testing.T) {
	t.Parallel()
	b := Backoff{Min: time.Second, Max: time.Minute, Floor: time.Second, Rand: func() float64 { return 0 }}
	require.Equal(t, time.Second, b.Next())
	b.Rand = func() float64 { return 0.5 }
	require.Equal(t, 2*time.Second, b.Next(), "the second ceiling is 2 s")
	require.Equal(t, time.Second+45*time.Second, b.Patient())
}

func TestMaxBelowMinCountsAsMin(t *testing.T) {
	t.Parallel()
	b := Backoff{Min: 4 * time.Second, Max: time.Second, Rand: func() float64 { return 0.5 }}
	for range 3 {
		require.Equal(t, 2*time.Second, b.Next())
	}
	var zero Backoff
	require.Equal(t, time.Duration(0), zero.Next(), "a zero Backoff never waits")
}

func TestWaitEndsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	b := Backoff{Min: time.Hour, Max: time.Hour}
	require.False(t, b.Wait(ctx), "a wait whose context has ended reports false at once")
	b = Backoff{Min: time.Microsecond, Max: time.Microsecond}
	require.True(t, b.Wait(t.Context()))
}
