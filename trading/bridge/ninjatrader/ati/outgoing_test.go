package ati

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
)

func TestParseOrderFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		content string
		want    orderFile
		ok      bool
	}{
		{"FILLED;2;5950.25", orderFile{protocol.OrderStateFilled, 2, 5950.25}, true},
		{"WORKING;0;0\r\n", orderFile{protocol.OrderStateWorking, 0, 0}, true},
		{"Working;0;0", orderFile{protocol.OrderStateWorking, 0, 0}, true},
		{"PARTFILLED;1;5950.5", orderFile{protocol.OrderStatePartFilled, 1, 5950.5}, true},
		{"Partially filled;1;22450.25", orderFile{protocol.OrderStatePartFilled, 1, 22450.25}, true},
		{"Cancel pending; 0; 0", orderFile{protocol.OrderStateCancelPending, 0, 0}, true},
		{"CANCELLED;0;0", orderFile{protocol.OrderStateCancelled, 0, 0}, true},
		{"TRIGGERPENDING;0;0", orderFile{protocol.OrderStateTriggerPending, 0, 0}, true},
		{"CHANGESUBMITTED;0;0", orderFile{protocol.OrderStateChangeSubmitted, 0, 0}, true},
		{"REJECTED;0;0", orderFile{protocol.OrderStateRejected, 0, 0}, true},
		{"\uFEFFFILLED;1;5950,25", orderFile{protocol.OrderStateFilled, 1, 5950.25}, true},
		{"SOMETHINGNEW;0;0", orderFile{protocol.OrderStateUnknown, 0, 0}, true},
		{"", orderFile{}, false},
		{"FILLED;1", orderFile{}, false},
		{"FILLED;1;5950.25;x", orderFile{}, false},
		{"FILLED;x;5950.25", orderFile{}, false},
		{"FILLED;-1;5950.25", orderFile{}, false},
		{"FILLED;1;", orderFile{}, false},
		{"FILLED;1;1e3", orderFile{}, false},
		{"FILLED;1;NaN", orderFile{}, false},
		{"FILLED;1;5,950.25", orderFile{}, false},
		{"FILLED;1;5950.25\nWORKING;0;0", orderFile{}, false},
	}
	for _, tt := range tests {
		got, ok := parseOrderFile(tt.content)
		require.Equal(t, tt.ok, ok, "%q", tt.content)
		require.Equal(t, tt.want, got, "%q", tt.content)
	}
}

func TestParsePositionName(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		account    string
		instrument string
		ok         bool
	}{
		{"ES 12-26 Globex_Sim101_position.txt", "Sim101", "ES 12-26", true},
		{"ES 12-26 Globex_Sim101_Position.txt", "Sim101", "ES 12-26", true},
		{"ES 12-26_Sim101_position.txt", "Sim101", "ES 12-26", true},
		{"MNQ 09-26 Globex_Sim_VWAP_Pullback_v2_position.txt", "Sim_VWAP_Pullback_v2", "MNQ 09-26", true},
		{"MNQ 09-26 Globex_SimBias Momentum_position.txt", "SimBias Momentum", "MNQ 09-26", true},
		{"ES 0926 Globex_Sim101_Position.txt", "Sim101", "ES 09-26", true},
		{"MNQM6 Globex_Sim101_position.txt", "Sim101", "MNQ 06-26", true},
		{"ESH7 Globex_Sim101_position.txt", "Sim101", "ES 03-27", true},
		{"ESZ26 Globex_Sim101_position.txt", "Sim101", "ES 12-26", true},
		{"MNQ SEP26 Globex_Sim101_position.txt", "Sim101", "MNQ 09-26", true},
		{"ES Globex_Sim101_position.txt", "", "", false},
		{"ES 13-26 Globex_Sim101_position.txt", "", "", false},
		{"ES 12-26 Globex_position.txt", "", "", false},
		{"ES 12-26 Globex_Sim101.txt", "", "", false},
		{"_Sim101_position.txt", "", "", false},
	}
	for _, tt := range tests {
		account, instrument, ok := parsePositionName(tt.name, now)
		require.Equal(t, tt.ok, ok, tt.name)
		if ok {
			require.Equal(t, tt.account, account, tt.name)
			require.Equal(t, tt.instrument, instrument, tt.name)
		}
	}
}

func TestParsePositionContent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		content string
		mp      string
		qty     int
		avg     float64
		ok      bool
	}{
		{"LONG;2;5950.25", protocol.MarketPositionLong, 2, 5950.25, true},
		{"SHORT; 1; 22450.5", protocol.MarketPositionShort, 1, 22450.5, true},
		{"FLAT;0;0", protocol.MarketPositionFlat, 0, 0, true},
		{"Flat;0;5950.25", protocol.MarketPositionFlat, 0, 0, true},
		{"LONG;0;5950.25", "", 0, 0, false},
		{"SIDEWAYS;1;1", "", 0, 0, false},
		{"LONG;1", "", 0, 0, false},
		{"", "", 0, 0, false},
	}
	for _, tt := range tests {
		mp, qty, avg, ok := parsePositionContent(tt.content)
		require.Equal(t, tt.ok, ok, tt.content)
		require.Equal(t, tt.mp, mp, tt.content)
		require.Equal(t, tt.qty, qty, tt.content)
		require.Equal(t, tt.avg, avg, tt.content)
	}
}

func TestParseConnection(t *testing.T) {
	t.Parallel()
	for content, want := range map[string]string{
		"CONNECTED": "Connected", "DISCONNECTED": "Disconnected", "connected\r\n": "Connected",
	} {
		got, ok := parseConnection(content)
		require.True(t, ok, content)
		require.Equal(t, want, got)
	}
	for _, content := range []string{"", "WORKING;0;0", "CONNECTING"} {
		_, ok := parseConnection(content)
		require.False(t, ok, content)
	}
}
