package engine_test

import (
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/trading/engine"
)

func TestNewReportID(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	prev := ""
	for range 1000 {
		id := engine.NewReportID()
		require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{32}$`), id)
		require.False(t, seen[id], "unique")
		seen[id] = true
		require.GreaterOrEqual(t, id[:12], prev, "time-ordered to the millisecond")
		prev = id[:12]
	}
}

func TestNewActivity(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 4, 10, 0, 0, 123456789, time.FixedZone("EST", -5*3600))
	src := protocol.ActivitySource{Kind: protocol.SourceKillSwitch}
	a := engine.NewActivity(at, protocol.ActivityKillSwitchChanged, "", src, "Kill switch turned on",
		map[string]any{"enabled": true, "flatten": engine.NewFlattenDetail(protocol.FlattenResult{}, errors.New("platform unavailable"))})
	require.Len(t, a.ID, 32)
	require.Equal(t, time.Date(2026, 3, 4, 15, 0, 0, 123000000, time.UTC), a.At, "UTC, to the millisecond")
	require.Equal(t, src, a.Source)
	require.JSONEq(t, `{"enabled":true,"flatten":{"orderIds":[],"cancelledOrderIds":[],"error":"platform unavailable"}}`, string(a.Detail))
	require.JSONEq(t, `{}`, string(engine.NewActivity(at, protocol.ActivityCopierHalted, "", src, "", nil).Detail))
}
