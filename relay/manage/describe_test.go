package manage

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// Kinds describes every kind the routes serve, from the kinds' own
// values: its type, the fields callers may not set, and defaults that
// decode into the type.
func TestKinds(t *testing.T) {
	t.Parallel()
	ks := Kinds()
	require.Len(t, ks, len(kinds()))
	byPath := map[string]KindInfo{}
	for _, k := range ks {
		byPath[k.Path] = k
		v := reflect.New(k.Type).Interface()
		require.NoError(t, json.Unmarshal(k.Default(), v), k.Name)
		require.Subset(t, k.ReadOnly, metaFields, k.Name)
	}
	require.Equal(t, reflect.TypeFor[BrokerCopier](), byPath["tv/copiers"].Type)
	require.Equal(t, []string{"copyMode"}, byPath["tv/copiers"].NotApplicable)
	require.Equal(t, []string{"restart"}, byPath["desktop/monitors"].Actions)
	require.Equal(t, []string{"account"}, byPath["desktop/monitors"].Immutable)
	require.Contains(t, byPath["desktop/copiers"].ReadOnly, "state")
	require.True(t, byPath["controls"].Singleton)
	require.ElementsMatch(t, []string{"rotate-secret", "test"}, byPath["alerts"].Actions)

	// The callers' copies are their own.
	byPath["desktop/copiers"].ReadOnly[0] = "x"
	require.Equal(t, "id", Kinds()[0].ReadOnly[0])
}

// RatioSteps and ReplacementRoots are the rules' own values.
func TestRatioStepsAndRoots(t *testing.T) {
	t.Parallel()
	steps := RatioSteps()
	require.Len(t, steps, 16)
	for _, r := range steps {
		require.True(t, validRatio(r), "%v", r)
	}
	require.False(t, validRatio(2.25))
	roots, partner := ReplacementRoots()
	require.Equal(t, replacementRoots, roots)
	for _, r := range roots {
		require.Equal(t, r, partner[partner[r]])
	}
}
