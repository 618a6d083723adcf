package bridge_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/futures"
	"tradebridge/trading/bridge"
)

func TestInstrumentErrorFrom(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, time.October, 5, 14, 30, 0, 0, time.UTC)
	other := errors.New("other")
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"nil", nil, nil},
		{"other error", other, other},
		{"refusal", &futures.ResolveError{Cause: futures.CauseExpired, Root: "ES", Months: "HMUZ", Front: "ES 12-26"},
			&bridge.InstrumentError{Cause: bridge.InstrumentExpired, Root: "ES", Months: "HMUZ", Front: "ES 12-26"}},
		{"wrapped refusal", fmt.Errorf("x: %w", &futures.ResolveError{Cause: futures.CauseUnknownRoot}),
			&bridge.InstrumentError{Cause: bridge.InstrumentUnknownRoot}},
		{"from Resolve", func() error { _, err := futures.Resolve("ESF27", now); return err }(),
			&bridge.InstrumentError{Cause: bridge.InstrumentNotContractMonth, Root: "ES", Months: "HMUZ", Front: "ES 12-26"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := bridge.InstrumentErrorFrom(tc.err)
			require.Equal(t, tc.want, got)
			if _, ok := tc.want.(*bridge.InstrumentError); ok {
				require.ErrorIs(t, got, bridge.ErrInstrumentUnknown)
			}
		})
	}
}

func TestInstrumentCausesAreFutures(t *testing.T) {
	t.Parallel()
	for bc, fc := range map[string]string{
		bridge.InstrumentMalformed:        "malformed",
		bridge.InstrumentUnknownRoot:      "unknown_root",
		bridge.InstrumentNotContractMonth: "not_contract_month",
		bridge.InstrumentExpired:          "expired",
		bridge.InstrumentNotListed:        "not_listed",
	} {
		require.Equal(t, fc, bc, "the wire spelling of a cause does not change")
	}
}
