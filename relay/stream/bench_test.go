package stream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
)

// benchUpstream is an agent that subscribes whatever contract it is asked.
type benchUpstream struct{}

func (benchUpstream) Connected(string) bool { return true }

func (benchUpstream) Call(_ context.Context, _, fn, _ string, args json.RawMessage) (json.RawMessage, error) {
	if fn == protocol.FnSetSubscriptions {
		var a protocol.SubscriptionsArgs
		_ = json.Unmarshal(args, &a)
		return json.Marshal(protocol.SubscriptionsResult{Instruments: a.Instruments})
	}
	return json.RawMessage(`{}`), nil
}

// rawClient is a minimal WebSocket client: it upgrades, sends masked text
// frames, and reads and discards whatever the relay sends, so that the
// benchmark measures the relay, not a client library.
type rawClient struct {
	conn net.Conn
}

func rawDial(addr, token string) (*rawClient, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	req := "GET " + Path + " HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer " + token + "\r\n\r\n"
	if _, err := c.Write([]byte(req)); err != nil {
		c.Close()
		return nil, err
	}
	// Read the response head byte by byte, leaving frames unread.
	var head []byte
	one := make([]byte, 1)
	for !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		if _, err := c.Read(one); err != nil {
			c.Close()
			return nil, err
		}
		head = append(head, one[0])
	}
	if !bytes.HasPrefix(head, []byte("HTTP/1.1 101")) {
		c.Close()
		return nil, fmt.Errorf("upgrade refused: %s", head)
	}
	return &rawClient{conn: c}, nil
}

// send writes one masked text frame (mask key 0, which masks nothing).
func (r *rawClient) send(payload []byte) error {
	var hdr []byte
	switch n := len(payload); {
	case n < 126:
		hdr = []byte{0x81, 0x80 | byte(n)}
	case n < 1<<16:
		hdr = []byte{0x81, 0x80 | 126, 0, 0}
		binary.BigEndian.PutUint16(hdr[2:], uint16(n))
	default:
		return fmt.Errorf("frame too large")
	}
	hdr = append(hdr, 0, 0, 0, 0)
	_, err := r.conn.Write(append(hdr, payload...))
	return err
}

// BenchmarkFanout delivers one user's quote stream (K instruments) to N
// sockets of that user over loopback. A delivery is a quote written to a
// socket; quotes of one instrument that arrive faster than a socket's
// writer takes them are conflated (counted in dropped), and a frame
// carries the latest quote of every instrument that changed.
//
// Two producers: "paced" injects one quote of every instrument per round
// and stays at most 4 rounds ahead of the quotes written or conflated, so
// it measures what the relay sustains; "saturated" injects as fast as it
// can (one core of the two), so most quotes are conflated and the writers
// get what CPU is left. Each b.N is one quote event.
func BenchmarkFanout(b *testing.B) {
	for _, mode := range []string{"paced", "saturated"} {
		for _, n := range []int{100, 1000} {
			b.Run(fmt.Sprintf("%s/clients=%d", mode, n), func(b *testing.B) { benchFanout(b, n, 20, mode == "paced") })
		}
	}
}

func benchFanout(b *testing.B, clients, instruments int, paced bool) {
	roomy, _ := budget.New(budget.Options{Policy: budget.Policy{Name: "roomy", Rate: 1 << 30, Period: time.Minute, Burst: 1 << 30}})
	const token = "tb_api_bench"
	srv, err := New(Options{
		Auth:               staticAuth{token: token, p: auth.Principal{UserID: "usr_bench", Plan: auth.PlanPro, Kind: auth.KindAPI}},
		Upstream:           benchUpstream{},
		Budget:             roomy,
		Idempotency:        noIdempotency{},
		SubscriptionBudget: roomy,
		Logger:             zap.NewNop(),
		MaxSocketsPerUser:  clients,
		PingInterval:       -1,
		ReverifyInterval:   time.Hour,
	})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	addr := strings.TrimPrefix(hs.URL, "http://")

	names := make([]string, instruments)
	for i := range names {
		names[i] = fmt.Sprintf("R%02d 12-26", i)
	}
	sub, _ := json.Marshal(map[string]any{"action": "subscribe", "instruments": names})

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	conns := make([]*rawClient, clients)
	for i := range conns {
		c, err := rawDial(addr, token)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.send(sub); err != nil {
			b.Fatal(err)
		}
		conns[i] = c
	}
	deadline := time.Now().Add(30 * time.Second)
	for !subscribed(srv, names, clients) {
		if time.Now().After(deadline) {
			b.Fatalf("clients did not subscribe: %d sockets, routes %d, users %d", srv.Stats().Sockets, len(srv.userRoutes("usr_bench", names[0])), srv.userCount())
		}
		time.Sleep(time.Millisecond)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heapPerClient := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(clients)

	// Readers, with buffers allocated after the heap was measured.
	const readBuf = 32 << 10
	var readers sync.WaitGroup
	for _, c := range conns {
		readers.Add(1)
		go func() {
			defer readers.Done()
			r := bufio.NewReaderSize(c.conn, readBuf)
			buf := make([]byte, readBuf)
			for {
				if _, err := r.Read(buf); err != nil {
					return
				}
			}
		}()
	}

	// One pre-encoded event per instrument and price step, as the hub
	// hands them over.
	events := make([]protocol.Event, instruments*8)
	for i := range events {
		events[i] = quoteEvent(names[i%instruments], 5000+0.25*float64(i/instruments))
		q := protocol.Quote{}
		_ = json.Unmarshal(events[i].Data, &q)
		q.Volume, q.BidSize, q.AskSize, q.Epoch = int64(100000+i), 12, 9, 1793631600000+int64(i)
		q.Open, q.High, q.Low, q.Close, q.TickSize, q.PointValue, q.TickValue = 4990, 5010.5, 4985.25, 4995, 0.25, 50, 12.5
		events[i].Data, _ = json.Marshal(q)
	}

	st0 := srv.Stats()
	b.ResetTimer()
	start := time.Now()
	const lag = 4 // rounds in flight
	perRound := int64(clients * instruments)
	for i := 0; i < b.N; i++ {
		if paced && i%instruments == 0 {
			round := int64(i / instruments)
			for {
				st := srv.Stats()
				if st.Delivered+st.Conflated-st0.Delivered-st0.Conflated >= (round-lag)*perRound {
					break
				}
				time.Sleep(20 * time.Microsecond)
			}
		}
		srv.HandleEvent("usr_bench", events[i%len(events)])
	}
	injected := time.Since(start)
	waitIdle(srv, names)
	elapsed := time.Since(start)
	b.StopTimer()
	st := srv.Stats()
	delivered := st.Delivered - st0.Delivered
	frames := st.Frames - st0.Frames
	b.ReportMetric(float64(delivered)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(frames)/elapsed.Seconds(), "frames/s")
	if frames > 0 {
		b.ReportMetric(float64(delivered)/float64(frames), "quotes/frame")
	}
	b.ReportMetric(float64(b.N)/injected.Seconds(), "events/s")
	b.ReportMetric(float64(st.Conflated-st0.Conflated)/float64(b.N*clients)*100, "conflated-%")
	b.ReportMetric(heapPerClient, "heap-B/client")

	var loaded runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&loaded)
	clientBufs := int64(clients) * 2 * readBuf
	b.ReportMetric(float64(int64(loaded.HeapAlloc)-int64(before.HeapAlloc)-clientBufs)/float64(clients), "heap-B/client-after-load")

	for _, c := range conns {
		c.conn.Close()
	}
	readers.Wait()
	srv.Close()
	hs.Close()
}

// subscribed reports whether every instrument has n sockets.
func subscribed(srv *Server, names []string, n int) bool {
	for _, name := range names {
		if len(srv.userRoutes("usr_bench", name)) != n {
			return false
		}
	}
	return true
}

// waitIdle waits until no socket holds a quote and the delivered count has
// stopped moving.
func waitIdle(srv *Server, names []string) {
	socks := srv.userRoutes("usr_bench", names[0])
	last := int64(-1)
	for {
		pending := false
		for _, sk := range socks {
			sk.mu.Lock()
			pending = pending || len(sk.mdQueue) > 0
			sk.mu.Unlock()
			if pending {
				break
			}
		}
		d := srv.Stats().Delivered
		if !pending && d == last {
			return
		}
		last = d
		time.Sleep(200 * time.Microsecond)
	}
}

type staticAuth struct {
	token string
	p     auth.Principal
}

func (s staticAuth) Authenticate(_ context.Context, token string, _ auth.Kind) (auth.Principal, error) {
	if token != s.token {
		return auth.Principal{}, auth.ErrUnauthorized
	}
	return s.p, nil
}
