package futures_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/futures"
	"tradebridge/protocol"
)

// requireCause checks that err is a refusal of Resolve with cause.
func requireCause(t *testing.T, err error, cause string) *futures.ResolveError {
	t.Helper()
	var re *futures.ResolveError
	require.ErrorAs(t, err, &re)
	require.ErrorIs(t, err, futures.ErrUnknown)
	require.Equal(t, cause, re.Cause)
	return re
}

// Names are read with protocol's instrument grammar; Resolve says why it
// refuses one, and names the root when it is a known one. The "settled"
// cases are where the simulator's old parser and the relay stream's used
// to disagree: the grammar decided (docs: one instrument grammar).
func TestResolve(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want, cause, root string
		now                   time.Time // monday when zero
	}{
		{in: "ES 12-26", want: "ES 12-26"},
		{in: "es 12-26", want: "ES 12-26"},
		{in: " ES 12-26\t", want: "ES 12-26"},
		{in: "ES", want: "ES 12-26"},
		{in: " es ", want: "ES 12-26"},
		{in: "ESZ26", want: "ES 12-26"},
		{in: " esz6 ", want: "ES 12-26"},
		{in: "ESH7", want: "ES 03-27"},
		{in: "EsH27", want: "ES 03-27"},
		{in: "GC", want: "GC 12-26"},
		{in: "CL", want: "CL 11-26"},
		{in: "M2K", want: "M2K 12-26"},
		{in: "M2KZ6", want: "M2K 12-26"},
		{in: "MGCG7", want: "MGC 02-27"},
		// One-digit years: the first year from the current one that ends
		// in the digit, expired or not.
		{in: "ESZ5", want: "ES 12-35"},
		{in: "ESU6", cause: futures.CauseExpired, root: "ES"},
		{in: "CLF7", want: "CL 01-37", now: time.Date(2034, time.December, 22, 14, 30, 0, 0, time.UTC)},
		{in: "ESH0", want: "ES 03-30", now: time.Date(2029, time.December, 31, 14, 30, 0, 0, time.UTC)},
		{in: "ESZ9", want: "ES 12-29", now: time.Date(2029, time.December, 3, 14, 30, 0, 0, time.UTC)},
		// The listing horizon: ten years from the current year.
		{in: "ES 12-36", want: "ES 12-36"},
		{in: "ES 03-37", cause: futures.CauseNotListed, root: "ES"},
		{in: "ES 12-99", cause: futures.CauseNotListed, root: "ES"},
		// Refusals.
		{in: "ES 06-26", cause: futures.CauseExpired, root: "ES"},
		{in: "ES 12-00", cause: futures.CauseExpired, root: "ES"},
		{in: "ESF27", cause: futures.CauseNotContractMonth, root: "ES"},
		{in: "ES 11-26", cause: futures.CauseNotContractMonth, root: "ES"},
		{in: "GC 03-27", cause: futures.CauseNotContractMonth, root: "GC"},
		{in: "", cause: futures.CauseMalformed},
		{in: "ES 13-26", cause: futures.CauseMalformed, root: "ES"},
		{in: "ES 00-26", cause: futures.CauseMalformed, root: "ES"},
		{in: "ESA26", cause: futures.CauseMalformed, root: "ES"},
		{in: "ES123", cause: futures.CauseMalformed, root: "ES"},
		{in: "MESA6", cause: futures.CauseMalformed, root: "MES"},
		{in: "Z6", cause: futures.CauseMalformed},
		{in: "123", cause: futures.CauseMalformed},
		{in: "ES-Z6", cause: futures.CauseMalformed},
		{in: "ÉS", cause: futures.CauseMalformed},
		{in: "ES 12-26 X", cause: futures.CauseMalformed, root: "ES"},
		{in: "ES 12-2", cause: futures.CauseMalformed, root: "ES"},
		{in: "ZZ", cause: futures.CauseUnknownRoot},
		{in: "ZZTOP", cause: futures.CauseUnknownRoot},
		{in: "XXZ6", cause: futures.CauseUnknownRoot},
		{in: "QQQ 12-26", cause: futures.CauseUnknownRoot},
		// Settled: one space between root and month, as the stream reads
		// contract names.
		{in: "ES  12-26", cause: futures.CauseMalformed, root: "ES"},
		{in: "ES \t12-26", cause: futures.CauseMalformed, root: "ES"},
		// Settled: a month code's root may have six characters, as the
		// stream reads them.
		{in: "ABCDEFZ6", cause: futures.CauseUnknownRoot},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			now := tc.now
			if now.IsZero() {
				now = monday
			}
			c, err := futures.Resolve(tc.in, now)
			if tc.cause == "" {
				require.NoError(t, err)
				require.Equal(t, tc.want, c.Name)
				require.True(t, now.Before(c.ExpiresAt))
				return
			}
			require.Zero(t, c)
			re := requireCause(t, err, tc.cause)
			require.Equal(t, tc.root, re.Root)
			if tc.root == "" {
				require.Empty(t, re.Months)
				require.Empty(t, re.Front)
				return
			}
			r, ok := futures.Lookup(tc.root)
			require.True(t, ok)
			require.Equal(t, r.MonthCodes(), re.Months)
			require.Equal(t, r.Front(now).Name, re.Front)
		})
	}
}

func TestResolveErrorText(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"QQQZ6", "ESA26", "ES 13-26", "<script>", "ES 06-26", "ESF27", "ES 12-99"} {
		_, err := futures.Resolve(in, monday)
		require.Error(t, err)
		require.True(t, strings.HasPrefix(err.Error(), "futures: unknown contract: "), err.Error())
		require.NotContains(t, err.Error(), strings.TrimSpace(in), "the error never quotes the name")
	}
	require.Equal(t, "futures: unknown contract: expired", (&futures.ResolveError{Cause: futures.CauseExpired}).Error())
	require.False(t, errors.Is(&futures.ResolveError{}, errors.New("futures: unknown contract")))
}

func TestContractYear(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		now  time.Time
		want int
	}{
		{"ESZ26", monday, 2026},
		{"ES 12-99", monday, 2099},
		{"ES 12-00", monday, 2000},
		{"ESZ6", monday, 2026},
		{"ESZ7", monday, 2027},
		{"ESZ5", monday, 2035},
		{"ESH0", time.Date(2029, time.December, 31, 23, 0, 0, 0, time.UTC), 2030},
		{"ESH9", time.Date(2029, time.December, 31, 23, 0, 0, 0, time.UTC), 2029},
	} {
		in, err := protocol.ParseInstrument(tc.in)
		require.NoError(t, err)
		require.Equal(t, tc.want, futures.ContractYear(in, tc.now), tc.in)
	}
}
