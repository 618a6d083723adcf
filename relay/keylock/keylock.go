// Package keylock holds locks by key (a user's id) that a waiter can give
// up on when its context ends. The Management API takes a user's lock for
// a change, from loading the state to the end of the push; the broker
// family takes it to start or stop the user's linked login. A key's lock
// is forgotten once nobody holds or waits for it, so the set grows with
// the users at work, not with every user ever seen.
package keylock

import (
	"context"
	"sync"
)

// Locks is a set of locks by key. The zero value is ready to use; a Locks
// must not be copied after first use.
type Locks struct {
	mu sync.Mutex
	m  map[string]*lock
}

type lock struct {
	ch   chan struct{}
	refs int // holders and waiters
}

// Lock takes key's lock, waiting until ctx ends (then it returns
// ctx.Err()). It returns the function that releases the lock.
func (l *Locks) Lock(ctx context.Context, key string) (func(), error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*lock{}
	}
	k := l.m[key]
	if k == nil {
		k = &lock{ch: make(chan struct{}, 1)}
		l.m[key] = k
	}
	k.refs++
	l.mu.Unlock()
	select {
	case k.ch <- struct{}{}:
		return func() {
			<-k.ch
			l.release(key, k)
		}, nil
	case <-ctx.Done():
		l.release(key, k)
		return nil, ctx.Err()
	}
}

// release drops one holder or waiter of key's lock.
func (l *Locks) release(key string, k *lock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k.refs--; k.refs == 0 {
		delete(l.m, key)
	}
}

// held reports how many keys have a holder or a waiter (for tests).
func (l *Locks) held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
