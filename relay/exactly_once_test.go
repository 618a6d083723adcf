package relay_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/agent"
	"tradebridge/internal/testkit"
)

// killableDialer records the agent's TCP connections so a test can cut them
// the way a dead network or a killed relay would.
type killableDialer struct {
	// target, when set, chooses the address each connection goes to, in
	// place of the one dialed (a load balancer in front of relay nodes).
	target func() (string, error)

	mu    sync.Mutex
	conns []net.Conn
}

func (k *killableDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if k.target != nil {
		var err error
		if addr, err = k.target(); err != nil {
			return nil, err
		}
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		k.mu.Lock()
		k.conns = append(k.conns, c)
		k.mu.Unlock()
	}
	return c, err
}

func (k *killableDialer) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.conns {
		_ = c.(*net.TCPConn).SetLinger(0)
		_ = c.Close()
	}
	k.conns = nil
}

// The tunnel is cut at a random moment of 200 writes. Each write is retried
// with its key until it has a definite answer; the simulator must then hold
// exactly one order per key: never a duplicate, never a lost one.
func TestExactlyOnceAcrossTunnelDrops(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	kd := &killableDialer{}
	ra := s.StartAgentWith("alice", func(o *agent.Options) {
		o.Tunnel.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: kd.DialContext}}
		o.Tunnel.BackoffBase = 2 * time.Millisecond
		o.Tunnel.BackoffCap = 20 * time.Millisecond
	})
	tok := s.Users["alice"].APIToken
	const body = `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`
	rng := rand.New(rand.NewPCG(7, 7))
	const drops = 200
	uncertain := 0
	for i := range drops {
		key := fmt.Sprintf("drop-%d", i)
		require.Eventually(t, ra.Agent.Connected, testkit.Long, time.Millisecond)
		done := make(chan response, 1)
		go func() {
			done <- s.DoAsync("POST", "/v1/api/accounts/Sim101/orders/place", tok, body, "Idempotency-Key", key)
		}()
		// Cut somewhere between before the request leaves and after the
		// answer is back.
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
		kd.kill()
		r := <-done
		for r.Status == http.StatusServiceUnavailable || r.Status == http.StatusRequestTimeout {
			uncertain++
			require.Contains(t, []string{"outcome_unknown", "addon_disconnected"}, r.Error)
			require.Eventually(t, ra.Agent.Connected, testkit.Long, time.Millisecond)
			r = s.Do("POST", "/v1/api/accounts/Sim101/orders/place", tok, body, "Idempotency-Key", key)
		}
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", key, r.Raw)
	}
	orders, err := ra.Sim.Orders(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Len(t, orders, drops, "one order per key")
	ps, err := ra.Sim.Positions(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, drops, ps[0].Quantity)
	t.Logf("%d writes, %d answered outcome_unknown or addon_disconnected and were retried", drops, uncertain)
}

// placeFrame is a keyed PlaceOrder rpc frame for Sim101.
func placeFrame(id, keyField, key string) string {
	return `{"action":"rpc","id":"` + id + `","api":"PlaceOrder","args":{"account":"Sim101","action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day","` +
		keyField + `":"` + key + `"}}`
}

// A keyed write over the socket is answered from the relay's durable
// store, not from the agent's memory: after the agent process is replaced
// (its memory of request ids is gone; the platform is the same), the same
// frame gets the first answer and the platform holds one order.
func TestExactlyOnceOverTheSocketAcrossAgentRestart(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	first := s.StartAgent("alice")
	w := s.openStream(t, "alice")
	require.Equal(t, true, w.next("status")["agentConnected"])

	w.send(placeFrame("p1", "idempotencyKey", "sock-1"))
	r1 := w.reply()
	require.Equal(t, "p1", r1["id"])
	require.Equal(t, true, r1["success"], r1)
	require.NotEmpty(t, r1["orderId"])
	require.NotContains(t, r1, "replayed")

	// The agent process goes away; a new one starts next to the same
	// platform, remembering nothing.
	first.Close()
	again := s.StartAgentWith("alice", func(o *agent.Options) { o.Platform = first.Platform })
	require.True(t, again.Agent.Connected())

	w.send(placeFrame("p2", "idempotencyKey", "sock-1"))
	r2 := w.reply()
	require.Equal(t, "p2", r2["id"])
	require.Equal(t, true, r2["success"], r2)
	require.Equal(t, true, r2["replayed"], r2)
	require.Equal(t, r1["orderId"], r2["orderId"])
	require.Equal(t, r1["data"], r2["data"])
	require.NotContains(t, r2, "type")

	orders, err := first.Sim.Orders(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Len(t, orders, 1, "the retry placed nothing")
	ps, err := first.Sim.Positions(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, 1, ps[0].Quantity)
}

// One store, one rule, whichever door: a key used over the socket replays
// over HTTP (and the other way round), with the same orderId, and a
// different request under it is refused on either.
func TestExactlyOnceAcrossSocketAndHTTP(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ra := s.StartAgent("alice")
	tok := s.Users["alice"].APIToken
	w := s.openStream(t, "alice")
	w.next("status")
	const place = "/v1/api/accounts/Sim101/orders/place"
	const body = `{"action":"BUY","instrument":"ES","orderType":"market","quantity":1,"timeInForce":"day"}`

	// Socket, then HTTP.
	w.send(placeFrame("s1", "idempotencyKey", "both-1"))
	sr := w.reply()
	require.Equal(t, true, sr["success"], sr)
	hr := s.Do("POST", place, tok, body, "Idempotency-Key", "both-1")
	require.Equal(t, http.StatusOK, hr.Status, string(hr.Raw))
	require.Equal(t, "true", hr.Header.Get("Idempotent-Replayed"))
	require.Equal(t, sr["orderId"], hr.OrderID)
	hr = s.Do("POST", place, tok, `{"action":"Sell","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`, "Idempotency-Key", "both-1")
	require.Equal(t, http.StatusUnprocessableEntity, hr.Status)
	require.Equal(t, "idempotency_key_reused", hr.Error)

	// HTTP, then the socket, keyed by orderId.
	hr = s.Do("POST", place, tok, `{"orderId":"cl-7","action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`)
	require.Equal(t, http.StatusOK, hr.Status, string(hr.Raw))
	require.Empty(t, hr.Header.Get("Idempotent-Replayed"))
	w.send(placeFrame("s2", "orderId", "cl-7"))
	sr = w.reply()
	require.Equal(t, true, sr["replayed"], sr)
	require.Equal(t, hr.OrderID, sr["orderId"])
	w.send(`{"action":"rpc","id":"s3","api":"PlaceOrder","args":{"account":"Sim101","action":"Buy","instrument":"ES","orderType":"Market","quantity":2,"timeInForce":"Day","orderId":"cl-7"}}`)
	sr = w.reply()
	require.Equal(t, false, sr["success"])
	require.Equal(t, "idempotency_key_reused", sr["error"])
	require.NotContains(t, sr, "type")

	orders, err := ra.Sim.Orders(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Len(t, orders, 2, "one order per key")
}
