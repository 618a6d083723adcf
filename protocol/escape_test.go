package protocol

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// The tunnel's frames carry "&" as written: an agent's error detail or
// result reaches the relay's callers without \u0026.
func TestFramesAreNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	resp := Response{ID: 1, Result: json.RawMessage(`{"name":"S&P"}`), Error: NewError(CodeInvalidArgument, "use S&P <ES>")}
	require.NoError(t, NewWriter(&buf).WriteFrame(TypeResponse, resp))
	raw := buf.String()
	require.Contains(t, raw, `"use S&P <ES>"`)
	require.Contains(t, raw, `"S&P"`)
	require.NotContains(t, raw, `\u0026`)

	b, err := Marshal(map[string]string{"detail": "a & b"})
	require.NoError(t, err)
	require.Equal(t, `{"detail":"a & b"}`, string(b))
}
