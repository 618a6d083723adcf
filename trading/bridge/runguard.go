package bridge

import (
	"context"
	"errors"
	"sync"

	"tradebridge/internal/lifecycle"
)

// Errors of RunGuard.Begin.
var (
	// ErrRunning reports a Run called while another Run of the same value
	// runs.
	ErrRunning = errors.New("bridge: Run is already running")
	// ErrClosed reports a Run called after Close.
	ErrClosed = errors.New("bridge: closed")
)

// RunGuard keeps the books of a long-lived value whose Run may be called
// again after it returns (a platform the next agent runs over again), but
// never twice at once nor after Close: the bridges to NinjaTrader and
// Tradovate, and Tradovate's login session, use one. Run starts with
// Begin and ends with the function Begin returns; Close ends the Run
// under way and waits for it (a lifecycle.Group's Enter and Close). The
// zero value is ready to use; a RunGuard must not be copied after first
// use. Its methods are safe for concurrent use.
type RunGuard struct {
	life    lifecycle.Group
	mu      sync.Mutex
	running bool // a Run runs
}

// Begin starts a Run. It returns ErrClosed after Close and ErrRunning
// while another Run runs. Otherwise it returns ctx's child, which also
// ends when Close is called, and end, which the Run must call when it
// returns, after its goroutines have ended (calls after the first do
// nothing): end releases the guard for the next Run, cancels the child
// and lets Close return.
func (g *RunGuard) Begin(ctx context.Context) (context.Context, func(), error) {
	ctx, leave, ok := g.life.Enter(ctx)
	if !ok {
		return nil, nil, ErrClosed
	}
	g.mu.Lock()
	if g.running {
		g.mu.Unlock()
		leave()
		return nil, nil, ErrRunning
	}
	g.running = true
	g.mu.Unlock()
	var once sync.Once
	end := func() {
		once.Do(func() {
			g.mu.Lock()
			g.running = false
			g.mu.Unlock()
			leave()
		})
	}
	return ctx, end, nil
}

// Close ends the Run under way, if any, waits for it to end, and makes
// every later Begin fail with ErrClosed. It is idempotent: every call
// waits for the Run under way.
func (g *RunGuard) Close() { g.life.Close() }

// Closed reports whether Close has been called.
func (g *RunGuard) Closed() bool { return g.life.Stopped() }

// Done returns a channel that is closed once Close is called.
func (g *RunGuard) Done() <-chan struct{} { return g.life.Done() }
