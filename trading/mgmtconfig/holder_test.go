package mgmtconfig_test

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/mgmtconfig"
)

func cfg(version int64, copiers ...string) *protocol.Config {
	c := &protocol.Config{Version: version}
	for _, id := range copiers {
		c.Copiers = append(c.Copiers, protocol.Copier{Meta: protocol.Meta{ID: id}})
	}
	return c
}

func TestApplyKeepsTheNewest(t *testing.T) {
	t.Parallel()
	var h mgmtconfig.Holder
	require.Nil(t, h.Current(), "nothing before the first push")
	require.Zero(t, h.Version())

	for _, step := range []struct {
		name    string
		push    *protocol.Config
		want    int64
		copiers int
	}{
		{"version 0 applies nothing", cfg(0, "c0"), 0, -1},
		{"a negative version applies nothing", cfg(-3, "c0"), 0, -1},
		{"the first push", cfg(2, "c1"), 2, 1},
		{"a repeat changes nothing", cfg(2, "c1", "c2", "c3"), 2, 1},
		{"a late push changes nothing", cfg(1, "c1", "c2"), 2, 1},
		{"a newer push replaces the whole configuration", cfg(5, "c4", "c5"), 5, 2},
		{"a newer empty one empties it", cfg(6), 6, 0},
	} {
		require.Equal(t, step.want, h.Apply(step.push), step.name)
		require.Equal(t, step.want, h.Version(), step.name)
		if step.copiers < 0 {
			require.Nil(t, h.Current(), step.name)
			continue
		}
		require.Len(t, h.Current().Copiers, step.copiers, step.name)
	}
}

// Pushes racing each other end with the newest, and a reader never sees a
// configuration older than one it saw before.
func TestApplyConcurrent(t *testing.T) {
	t.Parallel()
	var h mgmtconfig.Holder
	const n = 64
	versions := rand.Perm(n)
	var wg sync.WaitGroup
	results := make([]int64, n)
	for i, v := range versions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = h.Apply(cfg(int64(v+1), "c"))
		}()
	}
	stop := make(chan struct{})
	backwards := make(chan bool, 1)
	go func() {
		var last int64
		went := false
		for {
			select {
			case <-stop:
				backwards <- went
				return
			default:
			}
			if c := h.Current(); c != nil {
				went = went || c.Version < last
				last = c.Version
			}
		}
	}()
	wg.Wait()
	close(stop)
	require.False(t, <-backwards, "a reader saw the version go back")
	require.Equal(t, int64(n), h.Version())
	for i, v := range versions {
		require.GreaterOrEqual(t, results[i], int64(v+1), "Apply answers the pushed version or a newer one")
	}
}
