package bridge

import (
	"context"
	"errors"
	"sync"
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
// under way and waits for it. The zero value is ready to use; a RunGuard
// must not be copied after first use. Its methods are safe for concurrent
// use.
type RunGuard struct {
	mu      sync.Mutex
	closed  context.Context // done once Close is called; nil until first use
	close   context.CancelFunc
	running chan struct{} // set while a Run runs; closed when it ends
}

// initLocked makes the closed context on first use.
func (g *RunGuard) initLocked() {
	if g.closed == nil {
		g.closed, g.close = context.WithCancel(context.Background())
	}
}

// Begin starts a Run. It returns ErrClosed after Close and ErrRunning
// while another Run runs. Otherwise it returns ctx's child, which also
// ends when Close is called, and end, which the Run must call when it
// returns (calls after the first do nothing), after its goroutines have ended: end cancels the child and
// releases the guard for the next Run (and for Close, which waits for
// it).
func (g *RunGuard) Begin(ctx context.Context) (context.Context, func(), error) {
	g.mu.Lock()
	g.initLocked()
	switch {
	case g.closed.Err() != nil:
		g.mu.Unlock()
		return nil, nil, ErrClosed
	case g.running != nil:
		g.mu.Unlock()
		return nil, nil, ErrRunning
	}
	done := make(chan struct{})
	g.running = done
	closed := g.closed
	g.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(closed, cancel)
	var once sync.Once
	end := func() {
		once.Do(func() {
			stop()
			cancel()
			g.mu.Lock()
			g.running = nil
			g.mu.Unlock()
			close(done)
		})
	}
	return ctx, end, nil
}

// Close ends the Run under way, if any, waits for it to end, and makes
// every later Begin fail with ErrClosed. It is idempotent: every call
// waits for the Run under way.
func (g *RunGuard) Close() {
	g.mu.Lock()
	g.initLocked()
	g.close()
	done := g.running
	g.mu.Unlock()
	if done != nil {
		<-done
	}
}

// Closed reports whether Close has been called.
func (g *RunGuard) Closed() bool {
	return g.closedCtx().Err() != nil
}

// Done returns a channel that is closed once Close is called.
func (g *RunGuard) Done() <-chan struct{} { return g.closedCtx().Done() }

func (g *RunGuard) closedCtx() context.Context {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.initLocked()
	return g.closed
}
