package httpapi

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"tradebridge/relay/errcode"
)

// Defaults of GuardOptions.
const (
	// DefaultUnreadBodyGrace is how long a body nobody read may keep
	// arriving after the answer before the connection is closed.
	DefaultUnreadBodyGrace = time.Second
	// DefaultWriteTimeout bounds writing a response: the longest a request
	// can take (its body, DefaultTimeout, plus the agent's 30 s and the
	// store's writes) with a margin.
	DefaultWriteTimeout = 60 * time.Second
)

// ErrShuttingDown is the cause (context.Cause) with which a server that
// stops before its requests finished ends their contexts. A handler that
// sees it must still answer: its caller is there and waits.
var ErrShuttingDown = errors.New("httpapi: the server is shutting down")

// GuardOptions bound what one request may hold. The zero value means the
// defaults.
type GuardOptions struct {
	// BodyTimeout bounds the time to receive a request's body, counted
	// from when its handler starts (once the headers are in). A handler
	// reading past it gets a timeout error (ReadJSON answers 408
	// body_timeout). Default DefaultTimeout.
	BodyTimeout time.Duration
	// UnreadBodyGrace bounds how long the server goes on receiving a body
	// that its handler did not read to the end, after the handler
	// returned (net/http reads it to reuse the connection; the Guard
	// closes the connection instead, and reads only so that the client
	// hears the answer rather than a reset). It is never later than the
	// body's own deadline. Default DefaultUnreadBodyGrace.
	UnreadBodyGrace time.Duration
	// WriteTimeout bounds the time to write the response, counted from
	// when the handler starts: a client that does not read its answer
	// loses the connection then. It must exceed the longest a handler
	// waits before answering. Default DefaultWriteTimeout.
	WriteTimeout time.Duration
}

// Guard is the middleware that bounds, on every request, what a client
// can make the server hold, whatever it sends, and that counts running
// handlers so that a server can wait for them when it stops:
//
//   - The body must arrive within BodyTimeout: every read of it, by any
//     handler, is under that deadline (http.ResponseController's
//     SetReadDeadline); the deadline is lifted once the body ends, so it
//     never fires on the connection's later reads (net/http would take
//     that for the client leaving and end the request's context).
//   - A response sent while the body is not read to its end carries
//     Connection: close. net/http would otherwise read up to 256 KiB of
//     the rest, with no deadline, before sending the answer (or when the
//     handler returns): a client that announced a body and sent nothing
//     held the connection for as long as it liked. With Connection: close
//     net/http sends the answer at once and closes the connection, after
//     at most UnreadBodyGrace of reading what is left.
//   - The response must be written within WriteTimeout.
//   - A connection taken over (a WebSocket upgrade, status 101) is
//     handed over without deadlines and never gets Connection: close.
//
// The zero Guard is not usable; call NewGuard.
type Guard struct {
	opts GuardOptions

	mu      sync.Mutex
	running int
	stopped bool
	drained chan struct{} // closed once stopped and running is 0
}

// NewGuard returns a Guard with opts; negative durations are refused.
func NewGuard(opts GuardOptions) (*Guard, error) {
	if opts.BodyTimeout < 0 || opts.UnreadBodyGrace < 0 || opts.WriteTimeout < 0 {
		return nil, errors.New("httpapi: GuardOptions durations must not be negative")
	}
	if opts.BodyTimeout == 0 {
		opts.BodyTimeout = DefaultTimeout
	}
	if opts.UnreadBodyGrace == 0 {
		opts.UnreadBodyGrace = DefaultUnreadBodyGrace
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	return &Guard{opts: opts, drained: make(chan struct{})}, nil
}

// Options returns the Guard's options, defaults filled in.
func (g *Guard) Options() GuardOptions { return g.opts }

// Wrap returns next behind the Guard.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rc := http.NewResponseController(w)
		// Errors mean the writer supports no deadlines (a test's
		// recorder): there is no connection to hold.
		_ = rc.SetWriteDeadline(start.Add(g.opts.WriteTimeout))
		var body *guardedBody
		if r.Body != nil && r.Body != http.NoBody {
			body = &guardedBody{src: r.Body, rc: rc, deadline: start.Add(g.opts.BodyTimeout)}
			r2 := *r
			r2.Body = body
			r = &r2
		}
		sw := &StatusRecorder{ResponseWriter: w}
		sw.BeforeHeader = func(int) {
			if body.unread() {
				sw.Header().Set("Connection", "close")
			}
		}
		sw.AfterHijack = func(c net.Conn) {
			// The connection is the upgraded protocol's now, with its own
			// timeouts.
			_ = c.SetReadDeadline(time.Time{})
			_ = c.SetWriteDeadline(time.Time{})
		}
		if g.enter() {
			func() {
				defer g.leave()
				next.ServeHTTP(sw, r)
			}()
		} else {
			WriteError(sw, http.StatusServiceUnavailable, Error{Code: errcode.ShuttingDown, Detail: "the relay is shutting down; retry shortly", RetryAfter: 1})
		}
		if sw.Hijacked {
			return
		}
		if sw.Status == 0 && errors.Is(context.Cause(r.Context()), ErrShuttingDown) {
			// The server stopped under a handler that then had nothing to
			// say; its caller must not read an empty 200.
			WriteError(sw, http.StatusServiceUnavailable, Error{Code: errcode.ShuttingDown, RetryAfter: 1,
				Detail: "the relay shut down before the request finished; a change it asked for may or may not have been made: " +
					"retry with the same Idempotency-Key or orderId, or read before retrying"})
		}
		if body.unread() {
			if sw.Status == 0 {
				// net/http answers 200 for a handler that wrote nothing.
				w.Header().Set("Connection", "close")
			}
			// net/http reads what is left of the body after the handler
			// returns; bound it.
			deadline := time.Now().Add(g.opts.UnreadBodyGrace)
			if body.deadline.Before(deadline) {
				deadline = body.deadline
			}
			_ = rc.SetReadDeadline(deadline)
		}
	})
}

// enter counts a request in, or reports that the Guard is stopped.
func (g *Guard) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return false
	}
	g.running++
	return true
}

func (g *Guard) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	if g.running == 0 && g.stopped {
		close(g.drained)
	}
}

// Running returns the number of requests whose handlers are running,
// connections taken over (WebSocket sockets, tunnels) included.
func (g *Guard) Running() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running
}

// Stop makes the Guard answer every later request 503 shutting_down
// without running its handler. It is idempotent.
func (g *Guard) Stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return
	}
	g.stopped = true
	if g.running == 0 {
		close(g.drained)
	}
}

// Wait stops the Guard and waits until no handler runs, or ctx ends
// (returning its error).
func (g *Guard) Wait(ctx context.Context) error {
	g.Stop()
	select {
	case <-g.drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// guardedBody is a request body read under the Guard's deadline. Its
// methods run on the handler's goroutine.
type guardedBody struct {
	src      io.ReadCloser
	rc       *http.ResponseController
	deadline time.Time
	armed    bool // the read deadline is set
	done     bool // the body was read to its end
}

// Read reads from the body under its deadline, lifting the deadline once
// the body ends.
func (b *guardedBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	if !b.armed {
		b.armed = true
		_ = b.rc.SetReadDeadline(b.deadline)
	}
	n, err := b.src.Read(p)
	if err == io.EOF {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// Close closes the body. net/http's Close reads what is left of it, so
// the deadline is set first.
func (b *guardedBody) Close() error {
	if !b.done && !b.armed {
		b.armed = true
		_ = b.rc.SetReadDeadline(b.deadline)
	}
	return b.src.Close()
}

// unread reports a body that was not read to its end; false for none.
func (b *guardedBody) unread() bool { return b != nil && !b.done }
