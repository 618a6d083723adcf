package stream

import (
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// A text frame that is not UTF-8 fails the connection with 1007, as RFC
// 6455 §8.1 says; the relay answers nothing to it first. A socket next to
// it is unaffected.
func TestInvalidUTF8TextFrameClosesWith1007(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	honest := e.dial(tokA)
	c := e.dial(tokA)
	c.sendRaw("{\"action\":\"ping\",\"id\":\"\xff\xfe\"}")
	ce := c.closeError()
	require.Equal(t, websocket.StatusInvalidFramePayloadData, ce.Code)
	require.Contains(t, ce.Reason, "UTF-8")

	honest.send(map[string]any{"action": "ping", "id": "h1"})
	f := honest.read()
	require.Equal(t, "pong", f["type"])
	require.Equal(t, "h1", f["id"])
}
