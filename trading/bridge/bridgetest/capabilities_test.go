package bridgetest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Every capability has its replacement check, and is needed by checks of
// the suite (else declaring it would assert nothing); a check that needs
// none runs on every platform.
func TestCapabilitiesDeclared(t *testing.T) {
	t.Parallel()
	needed := map[Capability]int{}
	names := map[string]bool{}
	for _, group := range suite() {
		for _, c := range group {
			require.False(t, names[c.name], "check names are unique: %s", c.name)
			names[c.name] = true
			if c.needs != "" {
				require.Contains(t, Capabilities, c.needs, c.name)
				needed[c.needs]++
			}
		}
	}
	require.Len(t, lackingChecks, len(Capabilities))
	for _, c := range Capabilities {
		require.NotNil(t, lackingChecks[c], "%s has a replacement check", c)
		require.NotZero(t, needed[c], "some check needs %s", c)
	}
	require.Equal(t, map[Capability]int{CapStrategies: 8, CapATM: 4, CapBars: 3, CapOCOGroups: 3, CapTriggerState: 1,
		CapTrailingStops: 4}, needed)
}
