package seqid_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/seqid"
)

func TestFormatParse(t *testing.T) {
	t.Parallel()
	require.Equal(t, "act_42", seqid.Format("act_", 42))
	for _, tc := range []struct {
		id   string
		want int64
		ok   bool
	}{
		{"act_42", 42, true},
		{"act_1", 1, true},
		{"act_9223372036854775807", 9223372036854775807, true},
		{"act_9223372036854775808", 0, false},
		{"act_0", 0, false},
		{"act_042", 0, false},
		{"act_", 0, false},
		{"act_-1", 0, false},
		{"act_1a", 0, false},
		{"tva_1", 0, false},
		{"42", 0, false},
		{"", 0, false},
	} {
		got, ok := seqid.Parse("act_", tc.id)
		require.Equal(t, tc.ok, ok, tc.id)
		require.Equal(t, tc.want, got, tc.id)
	}
}
