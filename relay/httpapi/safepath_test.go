package httpapi_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/httpapi"
)

// An error names a field the caller wrote only when it is a plain name.
func TestSafePath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"extra", "extra"},
		{"config.brackets.0.quantity", "config.brackets.0.quantity"},
		{"a-b_c", "a-b_c"},
		{strings.Repeat("x", 64), strings.Repeat("x", 64)},
		{strings.Repeat("x", 65), ""},
		{"", ""},
		{"pass word", ""},
		{"<script>", ""},
		{"tb_api_secret\n", ""},
	} {
		require.Equal(t, tc.want, httpapi.SafePath(tc.in), "%q", tc.in)
	}
}
