package tradovate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/zap"

	"tradebridge/internal/lifecycle"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// The socket protocol's timing.
const (
	// HeartbeatEvery is how often the client sends its "[]" heartbeat
	// (more often when the socket's DeadAfter is below four of them).
	HeartbeatEvery = 2500 * time.Millisecond
	// DefaultSocketDeadAfter is how long a socket may stay silent (the
	// server sends "h" every 2.5 s) before it is taken for dead.
	DefaultSocketDeadAfter = 10 * time.Second
	// socketReadLimit bounds one frame (a syncrequest answer is large).
	socketReadLimit = 64 << 20
)

// errSocketClosed reports a request on a socket that ended.
var errSocketClosed = errors.New("tradovate: the socket closed")

// errTokenRefused reports a socket whose authorize the broker refused.
var errTokenRefused = errors.New("tradovate: the broker refused the socket's token")

// shutdownError is why a socket ended after the broker's shutdown event.
type shutdownError struct {
	// ReasonCode is the event's reasonCode ("ConnectionQuotaReached").
	ReasonCode string
}

func (e *shutdownError) Error() string {
	return "tradovate: the broker shut the socket down (" + e.ReasonCode + ")"
}

// shutdownEvent is the data of the shutdown event.
type shutdownEvent struct {
	ReasonCode string `json:"reasonCode"`
}

// socketOptions configures a socket.
type socketOptions struct {
	URL        string
	Token      string
	HTTPClient *http.Client
	// OnEvent receives the socket's events in order, on the socket's read
	// goroutine; it must not make requests on the same socket.
	OnEvent   func(tradovatewire.Message)
	DeadAfter time.Duration
	// OnRateLimited is called when the broker answers a request, or the
	// dial, with 429 (its lock-out); the request fails with what it
	// returns. Nil fails it with the rate-limited code.
	OnRateLimited func() error
	Logger        *zap.Logger
	// Pace, when set, waits until a request to an endpoint ("authorize",
	// "user/syncrequest", …) may be sent: the session's budget.
	Pace func(ctx context.Context, endpoint string) error
	// Ticket, when set, reads a reply's data for a penalty ticket: the
	// request was not handled, and the error it returns is the request's.
	Ticket func(endpoint string, data json.RawMessage) error
}

// socket is one authorized websocket to the broker: requests by id with
// their replies, events to OnEvent, heartbeats both ways. It ends when
// the connection breaks or Close is called; it never reconnects (its
// owner does).
type socket struct {
	conn *websocket.Conn
	opts socketOptions
	log  *zap.Logger

	nextID   atomic.Int64
	lastRecv atomic.Int64 // unix nanos

	mu      sync.Mutex
	pending map[int64]waiter
	err     error // why the socket ended; nil while it runs

	life lifecycle.Group // the read loop and the heartbeat; stopped when the socket ends
}

// dialSocket dials, waits for the open frame and authorizes.
func dialSocket(ctx context.Context, opts socketOptions) (*socket, error) {
	if opts.DeadAfter <= 0 {
		opts.DeadAfter = DefaultSocketDeadAfter
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.OnRateLimited == nil {
		opts.OnRateLimited = func() error { return unavailable(CodeRateLimited) }
	}
	conn, resp, err := websocket.Dial(ctx, opts.URL, &websocket.DialOptions{HTTPClient: opts.HTTPClient})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if resp != nil && resp.StatusCode == http.StatusTooManyRequests {
			return nil, opts.OnRateLimited()
		}
		return nil, fmt.Errorf("tradovate: dial the broker's socket: %w", unavailable(CodeBrokerUnreachable))
	}
	conn.SetReadLimit(socketReadLimit)
	s := &socket{conn: conn, opts: opts, log: opts.Logger, pending: make(map[int64]waiter)}
	s.lastRecv.Store(time.Now().UnixNano())
	if err := s.handshake(ctx); err != nil {
		conn.CloseNow()
		return nil, err
	}
	s.life.Go(s.readLoop)
	s.life.Go(s.heartbeat)
	return s, nil
}

// handshake reads the open frame, sends authorize and reads its answer.
func (s *socket) handshake(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.DeadAfter)
	defer cancel()
	fail := func() error {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return ctx.Err()
		}
		return fmt.Errorf("tradovate: the broker's socket did not open: %w", unavailable(CodeBrokerUnreachable))
	}
	authorized := false
	sentAuth := false
	for !authorized {
		_, data, err := s.conn.Read(ctx)
		if err != nil {
			return fail()
		}
		f, err := tradovatewire.ParseFrame(data)
		if err != nil {
			return fail()
		}
		switch f.Kind {
		case tradovatewire.FrameOpen:
			if !sentAuth {
				if s.opts.Pace != nil {
					if err := s.opts.Pace(ctx, "authorize"); err != nil {
						return err
					}
				}
				if err := s.conn.Write(ctx, websocket.MessageText, tradovatewire.FormatRequest(tradovatewire.Authorize(s.opts.Token))); err != nil {
					return fail()
				}
				sentAuth = true
			}
		case tradovatewire.FrameClose:
			return fail()
		case tradovatewire.FrameArray:
			for _, m := range f.Messages {
				if m.IsEvent() || m.I != 0 || !sentAuth {
					continue
				}
				if m.S == http.StatusTooManyRequests {
					return s.opts.OnRateLimited()
				}
				if m.S != http.StatusOK {
					return errTokenRefused
				}
				authorized = true
			}
		}
	}
	s.nextID.Store(0)
	return nil
}

// readLoop reads frames until the connection ends.
func (s *socket) readLoop(ctx context.Context) {
	for {
		_, data, err := s.conn.Read(context.Background())
		if err != nil {
			s.end(errSocketClosed)
			return
		}
		s.lastRecv.Store(time.Now().UnixNano())
		f, err := tradovatewire.ParseFrame(data)
		if err != nil {
			s.log.Warn("tradovate: a socket frame does not parse; the socket is closed")
			s.end(errSocketClosed)
			return
		}
		switch f.Kind {
		case tradovatewire.FrameClose:
			s.end(errSocketClosed)
			return
		case tradovatewire.FrameArray:
			for _, m := range f.Messages {
				if m.E == tradovatewire.EventShutdown {
					var ev shutdownEvent
					_ = json.Unmarshal(m.D, &ev)
					s.log.Warn("tradovate: the broker shut a socket down", zap.String("reasonCode", ev.ReasonCode))
					s.end(&shutdownError{ReasonCode: ev.ReasonCode})
					return
				}
				if m.IsEvent() {
					if s.opts.OnEvent != nil {
						s.opts.OnEvent(m)
					}
					continue
				}
				s.mu.Lock()
				w, ok := s.pending[m.I]
				delete(s.pending, m.I)
				s.mu.Unlock()
				if !ok {
					continue
				}
				w.ch <- m
				if w.ack != nil {
					// Nothing after this reply is read until its
					// requester has handled it.
					select {
					case <-w.ack:
					case <-ctx.Done():
						return
					}
				}
			}
		}
	}
}

// heartbeat sends "[]" every HeartbeatEvery (a quarter of DeadAfter
// when that is shorter, so that a peer with the same deadline never
// takes the client for gone) and ends a silent socket.
func (s *socket) heartbeat(ctx context.Context) {
	t := time.NewTicker(max(min(HeartbeatEvery, s.opts.DeadAfter/4), time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, s.lastRecv.Load())) > s.opts.DeadAfter {
			s.log.Warn("tradovate: the broker's socket went silent; it is closed")
			s.end(errSocketClosed)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.DeadAfter)
		err := s.conn.Write(ctx, websocket.MessageText, tradovatewire.ClientHeartbeat)
		cancel()
		if err != nil {
			s.end(errSocketClosed)
			return
		}
	}
}

// waiter is a request waiting for its reply; ack, when set, holds the
// read loop after the reply until it is closed.
type waiter struct {
	ch  chan tradovatewire.Message
	ack chan struct{}
}

// request sends a request and waits for its reply. body is encoded as
// JSON unless it is nil.
func (s *socket) request(ctx context.Context, endpoint, query string, body any) (tradovatewire.Message, error) {
	return s.send(ctx, endpoint, query, body, nil)
}

// requestHeld is request, except that the socket reads nothing after the
// reply until release is called (always call it): what the reply says is
// applied before any event that follows it.
func (s *socket) requestHeld(ctx context.Context, endpoint, query string, body any) (tradovatewire.Message, func(), error) {
	ack := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(ack) }) }
	m, err := s.send(ctx, endpoint, query, body, ack)
	if err != nil {
		release()
		return tradovatewire.Message{}, func() {}, err
	}
	return m, release, nil
}

func (s *socket) send(ctx context.Context, endpoint, query string, body any, ack chan struct{}) (tradovatewire.Message, error) {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return tradovatewire.Message{}, fmt.Errorf("tradovate: encode socket request: %w", err)
		}
	}
	if s.opts.Pace != nil {
		if err := s.opts.Pace(ctx, endpoint); err != nil {
			return tradovatewire.Message{}, err
		}
	}
	id := s.nextID.Add(1)
	ch := make(chan tradovatewire.Message, 1)
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return tradovatewire.Message{}, s.err
	}
	s.pending[id] = waiter{ch: ch, ack: ack}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()
	if err := s.conn.Write(ctx, websocket.MessageText,
		tradovatewire.FormatRequest(tradovatewire.Request{Endpoint: endpoint, ID: id, Query: query, Body: b})); err != nil {
		if ctx.Err() != nil {
			return tradovatewire.Message{}, ctx.Err()
		}
		s.end(errSocketClosed)
		return tradovatewire.Message{}, errSocketClosed
	}
	select {
	case m := <-ch:
		if m.S == http.StatusTooManyRequests {
			// The broker's lock-out: the caller must not try again soon.
			return m, s.opts.OnRateLimited()
		}
		if s.opts.Ticket != nil && m.S == http.StatusOK {
			if err := s.opts.Ticket(endpoint, m.D); err != nil {
				return tradovatewire.Message{}, err
			}
		}
		return m, nil
	case <-s.life.Done():
		return tradovatewire.Message{}, errSocketClosed
	case <-ctx.Done():
		return tradovatewire.Message{}, ctx.Err()
	}
}

// end records why the socket ended (the first reason given) and closes
// it, once.
func (s *socket) end(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	if s.life.Stop() {
		s.conn.CloseNow()
	}
}

// Done is closed when the socket has ended.
func (s *socket) Done() <-chan struct{} { return s.life.Done() }

// shutdownReason returns the reasonCode of the broker's shutdown event
// when that is why the socket ended.
func (s *socket) shutdownReason() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var se *shutdownError
	if errors.As(s.err, &se) {
		return se.ReasonCode, true
	}
	return "", false
}

// Close ends the socket and waits for its goroutines.
func (s *socket) Close() {
	s.end(errSocketClosed)
	s.life.Wait()
}

// socketUnavailable is the error of a call that needed a socket.
func socketUnavailable(err error) error {
	var ue *bridge.UnavailableError
	if errors.As(err, &ue) {
		return err
	}
	return fmt.Errorf("tradovate: %w", unavailable(CodeBrokerUnreachable))
}

// decodeData decodes a reply's data.
func decodeData(d json.RawMessage, out any) error {
	if len(d) == 0 {
		return errors.New("tradovate: the reply has no data")
	}
	return json.Unmarshal(d, out)
}
