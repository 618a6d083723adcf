package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// The Manager's entry points other than the trading calls, as they travel
// over the Router to the node running a user's instance. Their prefix is
// no protocol function's, and Call refuses them: they come over the
// Router only.
const (
	// fnPrefix begins every name below.
	fnPrefix = "broker."
	// fnConfigChanged: the engines read their configuration again.
	fnConfigChanged = "broker.configChanged"
	// fnCheckMonitorRestart: args a protocol.RestartCheck, result a
	// protocol.RestartVerdict.
	fnCheckMonitorRestart = "broker.checkMonitorRestart"
	// fnLinkState: result a liveState.
	fnLinkState = "broker.linkState"
	// fnRefresh: the node follows the stored link at once (a link
	// replaced or deleted on another node). It runs on a node that
	// serves the user, whatever its instance's state.
	fnRefresh = "broker.refresh"
)

// errLeased reports a user whose instance runs on another relay node: it
// holds the user's lease.
var errLeased = errors.New("broker: another relay node runs the user's broker link")

// acquireLease takes, or renews, this node's lease on the user's
// instance, and reports whether the node holds it.
func (m *Manager) acquireLease(ctx context.Context, userID string) (bool, error) {
	ok, err := m.opts.Store.AcquireBrokerLease(ctx, userID, m.opts.Node, m.opts.LeaseTTL)
	if err != nil {
		return false, fmt.Errorf("broker: taking the lease of a broker link: %w", err)
	}
	return ok, nil
}

// releaseLease gives up this node's lease on the user's instance, with a
// Router; a lease that cannot be given up expires within LeaseTTL.
func (m *Manager) releaseLease(userID string) {
	if m.opts.Router == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	if err := m.opts.Store.ReleaseBrokerLease(ctx, userID, m.opts.Node); err != nil {
		m.log.Warn("giving up the lease of a broker link; it expires on its own", zap.String("user", userID), zap.Error(err))
	}
}

// releaseIdle gives up this node's lease on the user's instance unless
// the instance runs here.
func (m *Manager) releaseIdle(ctx context.Context, userID string) {
	unlock, err := m.starting.Lock(ctx, userID)
	if err != nil {
		return // the lease expires on its own
	}
	defer unlock()
	if m.running(userID) == nil {
		m.releaseLease(userID)
	}
}

// routed runs fn (a protocol function or one of the pseudo-functions
// above) with the user's instance where it runs: here when it runs here
// or, without a Router, starting it here; otherwise on the node running
// it, over the Router. When no node runs it, this node takes the user's
// lease and runs it, once; when another node takes the lease meanwhile,
// fn is forwarded there, once. Errors are the instance's, ErrNotLinked,
// errLeased turned into a 503 (movingError), and the Router's.
func (m *Manager) routed(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
	if m.opts.Router == nil {
		in, err := m.instance(ctx, userID)
		if err != nil {
			return nil, err
		}
		return in.run(ctx, fn, requestID, args)
	}
	tookOver := false
	for {
		if in := m.running(userID); in != nil {
			return in.run(ctx, fn, requestID, args)
		}
		raw, err := m.opts.Router.Forward(ctx, userID, fn, requestID, args)
		if !errors.Is(err, agentcall.ErrNotConnected) {
			return raw, err
		}
		if tookOver {
			return nil, m.movingError()
		}
		tookOver = true
		in, err := m.instance(ctx, userID)
		switch {
		case errors.Is(err, errLeased):
			continue // another node took it meanwhile, or is yet to serve
		case err != nil:
			return nil, err
		}
		return in.run(ctx, fn, requestID, args)
	}
}

// movingError answers a call for a user whose instance runs nowhere
// while another node's lease lasts: the node that held it went away and
// its lease has yet to expire, or the instance is starting there.
func (m *Manager) movingError() error {
	return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.BrokerUnavailable,
		Detail:     "the broker is unavailable: the link is moving to another relay node; try again in a few seconds",
		RetryAfter: int(math.Ceil(m.opts.LeaseTTL.Seconds() / 3))}
}

// handler answers the calls other nodes forward for the user: they run
// in the user's instance on this node. A node that does not run it (any
// more) answers agentcall.ErrNotConnected, so that the caller's node takes the
// lease over.
func (m *Manager) handler(userID string) func(ctx context.Context, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
		if fn == fnRefresh {
			return nil, forwardedError(m.refresh(ctx, userID))
		}
		if !strings.HasPrefix(fn, fnPrefix) {
			m.restartIfStale(ctx, userID) // as Call does here
		}
		in := m.running(userID)
		if in == nil {
			return nil, agentcall.ErrNotConnected
		}
		raw, err := in.run(ctx, fn, requestID, args)
		return raw, forwardedError(err)
	}
}

// forwardedError is err as it travels back over the Router: the errors
// of the instance (a *protocol.Error, an *httpapi.Error) as they are, a
// context that ended as agentcall.ErrTimeout, a node closing as
// agentcall.ErrNotConnected, anything else as protocol's internal error.
func forwardedError(err error) error {
	var pe *protocol.Error
	var he *httpapi.Error
	switch {
	case err == nil, errors.As(err, &pe), errors.As(err, &he),
		errors.Is(err, agentcall.ErrNotConnected), errors.Is(err, agentcall.ErrTimeout), errors.Is(err, agentcall.ErrConnectionLost):
		return err
	case errors.Is(err, errClosed), errors.Is(err, errLeased):
		return agentcall.ErrNotConnected
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return agentcall.ErrTimeout
	}
	return protocol.NewError(protocol.CodeInternal, "the relay node running the broker link failed to answer")
}

// refresh brings the user's instance on this node in line with the link
// stored: it stops an instance whose link was replaced or deleted, and
// starts the link stored, if any, when this node may.
func (m *Manager) refresh(ctx context.Context, userID string) error {
	m.restartIfStale(ctx, userID)
	_, err := m.instance(ctx, userID)
	if errors.Is(err, ErrNotLinked) || errors.Is(err, errLeased) {
		return nil
	}
	return err
}

// refreshElsewhere tells the node running the user's instance, if another
// one does, that the link was replaced or deleted, so that it does not
// trade on the old one until its next look at the store.
func (m *Manager) refreshElsewhere(ctx context.Context, userID string) {
	if m.opts.Router == nil || m.running(userID) != nil {
		return
	}
	if _, err := m.opts.Router.Forward(ctx, userID, fnRefresh, "", nil); err != nil && !errors.Is(err, agentcall.ErrNotConnected) {
		m.log.Warn("telling the relay node running a broker link that it changed; it sees the change on its next look",
			zap.String("user", userID), zap.Error(err))
	}
}

// forwardConfigChanged tells the node running the user's instance that
// the user's configuration changed, in the background; news already on
// its way covers this one.
func (m *Manager) forwardConfigChanged(userID string) {
	m.mu.Lock()
	if m.closed || m.configPending[userID] {
		m.mu.Unlock()
		return
	}
	m.configPending[userID] = true
	m.bg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.bg.Done()
		m.mu.Lock()
		delete(m.configPending, userID) // a change from now on sends news of its own
		m.mu.Unlock()
		ctx, cancel := context.WithTimeout(m.ctx, m.opts.ReadyTimeout)
		defer cancel()
		_, err := m.routed(ctx, userID, fnConfigChanged, "", nil)
		if err != nil && ctx.Err() == nil && !errors.Is(err, ErrNotLinked) {
			m.log.Warn("telling a broker link's engines that their configuration changed", zap.String("user", userID), zap.Error(err))
		}
	}()
}

// liveState is what the node running a user's instance tells of it, for
// Status.
type liveState struct {
	// Known is false when the platform tells nothing of its login.
	Known        bool      `json:"known"`
	Session      string    `json:"session,omitempty"`
	TokenExpires time.Time `json:"tokenExpires,omitzero"`
	RetryAt      time.Time `json:"retryAt,omitzero"`
	Connected    bool      `json:"connected"`
	// Accounts are the login's accounts as its platform reports them
	// now; none while it reports none.
	Accounts []string `json:"accounts,omitempty"`
	// MarketData and MarketDataRefused are Status's.
	MarketData        bool     `json:"marketData,omitempty"`
	MarketDataRefused []string `json:"marketDataRefused,omitempty"`
}
