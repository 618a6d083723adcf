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
)

// killableDialer records the agent's TCP connections so a test can cut them
// the way a dead network or a killed relay would.
type killableDialer struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (k *killableDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
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
	s := newSystem(t)
	kd := &killableDialer{}
	ra := s.startAgentWith("alice", func(o *agent.Options) {
		o.Tunnel.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: kd.DialContext}}
		o.Tunnel.BackoffBase = 2 * time.Millisecond
		o.Tunnel.BackoffCap = 20 * time.Millisecond
	})
	tok := s.users["alice"].APIToken
	const body = `{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}`
	rng := rand.New(rand.NewPCG(7, 7))
	const drops = 200
	uncertain := 0
	for i := range drops {
		key := fmt.Sprintf("drop-%d", i)
		require.Eventually(t, ra.a.Connected, 10*time.Second, time.Millisecond)
		done := make(chan response, 1)
		go func() {
			done <- s.doAsync("POST", "/v1/api/accounts/Sim101/orders/place", tok, body, "Idempotency-Key", key)
		}()
		// Cut somewhere between before the request leaves and after the
		// answer is back.
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
		kd.kill()
		r := <-done
		for r.Status == http.StatusServiceUnavailable || r.Status == http.StatusRequestTimeout {
			uncertain++
			require.Contains(t, []string{"outcome_unknown", "addon_disconnected"}, r.Error)
			require.Eventually(t, ra.a.Connected, 10*time.Second, time.Millisecond)
			r = s.do("POST", "/v1/api/accounts/Sim101/orders/place", tok, body, "Idempotency-Key", key)
		}
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", key, r.raw)
	}
	orders, err := ra.sim.Orders(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Len(t, orders, drops, "one order per key")
	ps, err := ra.sim.Positions(context.Background(), "Sim101")
	require.NoError(t, err)
	require.Len(t, ps, 1)
	require.Equal(t, drops, ps[0].Quantity)
	t.Logf("%d writes, %d answered outcome_unknown or addon_disconnected and were retried", drops, uncertain)
}
