// Package lifecycle gives the long-lived values of the agent and the
// trading core one way to own their goroutines and to stop: a Group,
// whose Close ends the context its goroutines run under and waits for
// them, once, however often and from wherever it is called. It sits under
// internal/ beside backoff and dbfile, for the agent and the relay alike.
package lifecycle

import (
	"context"
	"sync"
)

// Group owns goroutines: those it starts (Go) and runs that the caller
// makes on its own goroutine (Enter, for a Run method). Stop ends the
// group's context and refuses new ones; Wait waits for those under way;
// Close is both. The zero value is ready to use; a Group must not be
// copied after first use. Its methods are safe for concurrent use.
type Group struct {
	mu      sync.Mutex
	ctx     context.Context // ends at Stop; nil until first use
	cancel  context.CancelFunc
	stopped bool
	wg      sync.WaitGroup
}

// initLocked makes the group's context on first use.
func (g *Group) initLocked() {
	if g.ctx == nil {
		g.ctx, g.cancel = context.WithCancel(context.Background())
	}
}

// add counts one more goroutine and returns the group's context; false
// once the group is stopped.
func (g *Group) add() (context.Context, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.initLocked()
	if g.stopped {
		return nil, false
	}
	g.wg.Add(1)
	return g.ctx, true
}

// Context returns the group's context, which ends at Stop.
func (g *Group) Context() context.Context {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.initLocked()
	return g.ctx
}

// Done returns a channel that is closed at Stop.
func (g *Group) Done() <-chan struct{} { return g.Context().Done() }

// Go runs f on a goroutine of the group, with the group's context. Once
// the group is stopped it reports false and does not run f.
func (g *Group) Go(f func(ctx context.Context)) bool {
	ctx, ok := g.add()
	if !ok {
		return false
	}
	go func() {
		defer g.wg.Done()
		f(ctx)
	}()
	return true
}

// Enter counts a run on the caller's goroutine (a Run method) as one of
// the group's: it returns ctx's child, which also ends at Stop, and
// leave, which the run calls when it returns (calls after the first do
// nothing): leave ends the child and lets Wait return. Once the group is
// stopped Enter reports false, with ctx and a leave that does nothing.
func (g *Group) Enter(ctx context.Context) (context.Context, func(), bool) {
	gctx, ok := g.add()
	if !ok {
		return ctx, func() {}, false
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(gctx, cancel)
	var once sync.Once
	leave := func() {
		once.Do(func() {
			stop()
			cancel()
			g.wg.Done()
		})
	}
	return ctx, leave, true
}

// Stop ends the group's context and makes Go and Enter refuse from now
// on. It does not wait. It reports whether this call stopped the group
// (false when it was stopped already), for what the caller does once.
func (g *Group) Stop() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.initLocked()
	if g.stopped {
		return false
	}
	g.stopped = true
	g.cancel()
	return true
}

// Stopped reports whether Stop has been called.
func (g *Group) Stopped() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stopped
}

// Wait waits for the goroutines of Go and the runs of Enter under way.
func (g *Group) Wait() { g.wg.Wait() }

// Close stops the group and waits for it. It is idempotent: every call
// waits.
func (g *Group) Close() {
	g.Stop()
	g.Wait()
}
