package bridge_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/trading/bridge"
)

// A NotSupportedError matches ErrNotSupported however deeply it is
// wrapped, and nothing else; its message names the primitive and the
// reason, and matches no other sentinel.
func TestNotSupportedError(t *testing.T) {
	t.Parallel()
	ns := &bridge.NotSupportedError{What: "bars", Reason: "the broker serves no historical bars"}
	for _, tc := range []struct {
		name string
		err  error
		is   bool
	}{
		{"bare", ns, true},
		{"wrapped", fmt.Errorf("tradovate: %w", ns), true},
		{"wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", ns)), true},
		{"the sentinel", bridge.ErrNotSupported, true},
		{"another error", errors.New("bars"), false},
		{"a reject", &bridge.RejectError{Reason: "no"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.is, errors.Is(tc.err, bridge.ErrNotSupported))
		})
	}
	require.Equal(t, "bridge: not supported by the platform: bars: the broker serves no historical bars", ns.Error())
	require.Equal(t, "bridge: not supported by the platform: bars", (&bridge.NotSupportedError{What: "bars"}).Error())
	require.NotErrorIs(t, ns, bridge.ErrNotConnected)
	require.NotErrorIs(t, ns, bridge.ErrOrderNotFound)
	var got *bridge.NotSupportedError
	require.ErrorAs(t, fmt.Errorf("x: %w", ns), &got)
	require.Equal(t, "bars", got.What)
}
