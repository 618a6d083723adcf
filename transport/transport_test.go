package transport_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/coder/websocket"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// BenchmarkWebSocketFloor is one WebSocket message there and back over
// loopback, with no yamux and no RPC: the least a call through any
// WebSocket tunnel can cost. BenchmarkCall in relay/hub and
// BenchmarkRoundTrip in relay are read against it (docs/decisions.md).
func BenchmarkWebSocketFloor(b *testing.B) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := context.Background()
		for {
			t, p, err := c.Read(ctx)
			if err != nil {
				return
			}
			if err := c.Write(ctx, t, p); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws"+srv.URL[len("http"):], nil)
	if err != nil {
		b.Fatal(err)
	}
	msg := make([]byte, 200)
	for b.Loop() {
		if err := c.Write(ctx, websocket.MessageBinary, msg); err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
	c.CloseNow()
	<-done
}
