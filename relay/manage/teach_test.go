package manage

import (
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
)

// A sizing ratio off the grid is refused with the steps it may take in
// the detail, wherever the ratio is (the copier's or a follower's), and
// only then.
func TestRatioNotAStepListsTheSteps(t *testing.T) {
	t.Parallel()
	const steps = "a sizing ratio is one of 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 3, 4, 5, 6, 7, 8, 9, 10"
	for _, tc := range []struct {
		name   string
		change func(*protocol.Copier)
		steps  bool
	}{
		{"copier ratio", func(v *protocol.Copier) { v.Sizing.Ratio = 1.1 }, true},
		{"follower ratio", func(v *protocol.Copier) { v.Followers[0].Sizing = &protocol.Sizing{Ratio: 11} }, true},
		{"another fault only", func(v *protocol.Copier) { v.Leader = "" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := cpWith(cpCopier("", "A", "B"), tc.change)
			err := validateCopier(cpCreate(v, cpSnap(nil)))
			require.NotNil(t, err)
			require.Equal(t, errcode.ValidationFailed, err.Code)
			if tc.steps {
				require.Contains(t, err.Detail, steps)
			} else {
				require.NotContains(t, err.Detail, "sizing ratio")
			}
		})
	}
}
