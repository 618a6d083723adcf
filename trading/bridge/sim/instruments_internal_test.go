package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/futures"
)

// The simulator trades every root of package futures, and no other.
func TestWalksCoverFutures(t *testing.T) {
	t.Parallel()
	symbols := map[string]bool{}
	for _, r := range futures.Roots() {
		symbols[r.Symbol] = true
		w := walks[r.Symbol]
		require.NotNil(t, w, "%s has no walk", r.Symbol)
		require.Positive(t, w.base)
		require.Positive(t, w.dailyVol)
		require.Positive(t, w.margin)
		require.Positive(t, w.activity)
		_, onGrid := r.Ticks(w.base)
		require.True(t, onGrid, "%s starts on its tick grid", r.Symbol)
		c, err := resolve(r.Symbol, monday)
		require.NoError(t, err)
		require.Same(t, w, walkOf(c))
	}
	require.Len(t, walks, len(symbols))
	require.Equal(t, time.Duration(sessionMinutes)*time.Minute, futures.SessionLength)
}
