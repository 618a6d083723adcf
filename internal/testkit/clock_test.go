package testkit_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
)

func TestClockMovesOnlyWhenTold(t *testing.T) {
	t.Parallel()
	c := testkit.NewClock(time.Time{})
	require.Equal(t, testkit.Epoch, c.Now())
	require.Equal(t, testkit.Epoch.UnixNano(), c.UnixNano())
	c.Advance(90 * time.Second)
	require.Equal(t, testkit.Epoch.Add(90*time.Second), c.Now())
	at := time.Date(2027, 1, 4, 9, 0, 0, 0, time.UTC)
	c.Set(at)
	require.Equal(t, at, c.Now())
}

func TestClockAfterFiresWhenReached(t *testing.T) {
	t.Parallel()
	c := testkit.NewClock(time.Time{})
	now := <-c.After(0)
	require.Equal(t, testkit.Epoch, now, "a non-positive wait fires at once")

	ch := c.After(time.Minute)
	require.Equal(t, 1, c.Waiters())
	c.Advance(59 * time.Second)
	select {
	case <-ch:
		t.Fatal("fired early")
	default:
	}
	c.Advance(time.Second)
	require.Equal(t, testkit.Epoch.Add(time.Minute), <-ch)
	require.Zero(t, c.Waiters())

	go func() { <-c.After(time.Second) }()
	c.AwaitWaiters(t, 1)
	c.Advance(time.Second)
}

func TestClockTickerDropsWhatIsNotRead(t *testing.T) {
	t.Parallel()
	c := testkit.NewClock(time.Time{})
	tk := c.NewTicker(time.Second)
	c.Advance(3 * time.Second)
	require.Equal(t, testkit.Epoch.Add(time.Second), <-tk.C(), "one tick kept, the others dropped")
	select {
	case <-tk.C():
		t.Fatal("a dropped tick arrived")
	default:
	}
	tk.Reset(10 * time.Second)
	c.Advance(9 * time.Second)
	require.Empty(t, tk.C())
	c.Advance(time.Second)
	require.Equal(t, testkit.Epoch.Add(13*time.Second), <-tk.C())
	tk.Stop()
	c.Advance(time.Hour)
	require.Empty(t, tk.C())
}

func TestClockIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	c := testkit.NewClock(time.Time{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				c.Advance(time.Millisecond)
				_ = c.Now()
				_ = c.After(time.Millisecond)
			}
		})
	}
	wg.Wait()
	require.Equal(t, testkit.Epoch.Add(400*time.Millisecond), c.Now())
}
