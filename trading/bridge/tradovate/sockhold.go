package tradovate

import (
	"context"
	"math/rand/v2"
	"time"

	"tradebridge/trading/bridge"
)

// How long the platform waits before it dials a socket again after the
// broker's shutdown event, by reason (the broker documents its socket
// limits, not how long to stay away; these are ours). A random part of up
// to half as much again is added, so that the links of a relay do not
// come back together.
const (
	// ShutdownConnectionQuotaPause: the user holds more sockets than the
	// broker allows and it closed our oldest (revoking its token).
	// Dialling at once would close another of the user's sockets, perhaps
	// another application's, and so on in turn.
	ShutdownConnectionQuotaPause = time.Minute
	// ShutdownIPQuotaPause: too many addresses hold sockets of the user.
	ShutdownIPQuotaPause = 5 * time.Minute
	// ShutdownOtherPause: any other reason (a maintenance restart).
	ShutdownOtherPause = 15 * time.Second
)

// Reason codes of the broker's shutdown event.
const (
	shutdownConnectionQuota = "ConnectionQuotaReached"
	shutdownIPQuota         = "IPQuotaReached"
)

// shutdownPause is the pause after a shutdown event of reasonCode, and
// the sentence that tells the user why the link waits.
func shutdownPause(reasonCode string) (time.Duration, *bridge.UnavailableError) {
	d, why := ShutdownOtherPause, "Tradovate closed the connection (maintenance); the relay reconnects in a few seconds"
	switch reasonCode {
	case shutdownConnectionQuota:
		d, why = ShutdownConnectionQuotaPause, "Tradovate closed the connection: this login holds too many connections "+
			"(other applications count too); the relay reconnects in a minute or two"
	case shutdownIPQuota:
		d, why = ShutdownIPQuotaPause, "Tradovate closed the connection: this login is connected from too many "+
			"addresses; the relay reconnects in five to eight minutes"
	}
	return d + rand.N(d/2), &bridge.UnavailableError{Code: CodeConnecting, Reason: why}
}

// lockedOutUntil returns the end of the broker's 429 lock-out when one
// holds now.
func (s *Session) lockedOutUntil() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == StateRateLimited && s.opts.Now().Before(s.until) {
		return s.until, true
	}
	return time.Time{}, false
}

// sleep waits d on the session's clock; false when ctx ends first.
func (s *Session) sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-s.opts.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}

// waitLockOut waits while the broker's 429 lock-out holds: a socket
// request or dial in it would start the hour again. onHold, when set, is
// told why the wait. It reports false when ctx ends first.
func (p *Platform) waitLockOut(ctx context.Context, onHold func(error)) bool {
	for {
		until, locked := p.sess.lockedOutUntil()
		if !locked {
			return ctx.Err() == nil
		}
		if onHold != nil {
			onHold(unavailable(CodeRateLimited))
		}
		if !p.sess.sleep(ctx, until.Sub(p.sess.opts.Now())) {
			return false
		}
	}
}
