package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/events"
	"tradebridge/relay/keylock"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate"
	"tradebridge/trading/dispatch"
	"tradebridge/trading/ops"
)

// Platform is the platform of one linked login: a bridge.Platform with a
// loop of its own (its sockets), as tradovate.Platform is.
type Platform interface {
	bridge.Platform
	// Run keeps the platform connected until ctx ends.
	Run(ctx context.Context) error
}

// PlatformConfig is what a platform of a link is built from.
type PlatformConfig struct {
	Link Link
	// State keeps what the platform must remember (the broker's order
	// ids) in the relay's store: Put, Delete and Load of named buckets.
	State ops.Persist
	// SaveSession keeps the login's session after every login and
	// renewal, sealed with the link, so that a relay restart reuses a
	// valid token instead of logging in again.
	SaveSession func(ctx context.Context, s Session) error
	// OnSessionState, when set, is told of each new state of the login's
	// session (tradovate.SessionOptions.OnState), so that the activity
	// log records the login's failures. It must not block.
	OnSessionState func(state string, err error)
	Logger         *zap.Logger
	// OnQuotesRefused, when set, is told when the broker refuses an
	// instrument's quotes (tradovate.Options.OnQuotesRefused), so that
	// the activity log records it. It must not block.
	OnQuotesRefused func(instrument string, delayed bool)
}

// Session is a broker login's current session, as SaveSession keeps it.
type Session struct {
	AccessToken, MDAccessToken string
	Expires                    time.Time
	BrokerUserID               int64
}

// Options configure a Manager.
type Options struct {
	// Store keeps the links and what each link's operations remember.
	// Required.
	Store Store
	// Keys seal the links' secrets. Required.
	Keys *sealed.Keyring
	// Endpoints are the broker's addresses; the zero value means
	// tradovate.DefaultEndpoints.
	Endpoints tradovate.Endpoints
	// OAuth is the relay's registration with the broker's OAuth service;
	// an empty ID turns the OAuth link off.
	OAuth tradovate.OAuthClient
	// BrowserSession returns the id of the dashboard session the
	// request's cookie carries, as the activity log names sessions (the
	// first 12 hex digits of its hash), or "" for none: the OAuth
	// callback ends a link started in the dashboard only in the browser
	// session that started it. The relay sets it (dashboard.SessionID);
	// nil ends no link started in the dashboard.
	BrowserSession func(r *http.Request) string
	// HTTPClient calls the broker; nil means a client with a 30 s
	// timeout.
	HTTPClient *http.Client
	// NewPlatform builds a link's platform; nil means the Tradovate
	// platform over Endpoints.
	NewPlatform func(ctx context.Context, c PlatformConfig) (Platform, error)
	// Login checks API-key credentials with the broker when a user links
	// them over HTTP, and returns the session it opened (kept, so the
	// platform does not log in again). Nil means the Tradovate login.
	Login func(ctx context.Context, env string, s Secrets) (Session, error)
	// Config returns the configuration the user's engines run (the tv
	// copiers and monitors, the controls and the news lockout:
	// manage.BrokerConfigs). Nil runs the engines with nothing
	// configured.
	Config func(ctx context.Context, userID string) (protocol.Config, error)
	// Events is where the engines' reports about tv resources are
	// published (events.TypeBroker, the Management API stores them), and
	// the links' activity log entries (events.TypeActivity: broker.linked,
	// broker.unlinked, broker.loginFailed, broker.tokenExpired; see
	// linkactivity.go). Nil drops them.
	Events events.Publisher
	Logger *zap.Logger
	// Now is the market's clock: the engines', the operations' and the
	// platform's trading sessions; nil means time.Now. Links, sessions and
	// tokens always use the real time.
	Now func() time.Time
	// EngineTick is how often the engines look at the clock; default 1 s.
	EngineTick time.Duration
	// Ops tunes the operations (their waits); Platform, Persist, Logger
	// and Now in it are filled in.
	Ops ops.Options
	// Dispatch tunes the dispatcher; Explain, Journal and Logger in it
	// are filled in.
	Dispatch dispatch.Options
	// ReadyTimeout bounds how long a call waits for a link's platform
	// that is still connecting. Default 10 s.
	ReadyTimeout time.Duration
	// Rate (requests a second), Burst and PerHour are each login's
	// request pacer, shared by every request of the login; zero means
	// tradovate.DefaultRate, DefaultBurst and DefaultPerHour.
	Rate    float64
	Burst   int
	PerHour int
	// AddressBudget is the request budget of this node's outbound
	// address, shared by every link's session and by the logins of new
	// links: Tradovate counts its endpoint limits and gives its penalty
	// tickets per client address, whatever the login. Nil means one with
	// tradovate's defaults (tradovate.BudgetOptions{}). Each node of a
	// cluster has its own (docs/cluster.md).
	AddressBudget *tradovate.AddressBudget
	// SyncInterval is how often Run compares the running links with the
	// store's, to follow links made or deleted by the relay broker
	// command or another relay node. Default 30 s.
	SyncInterval time.Duration
	// Node names this relay node among the nodes sharing the store: the
	// holder of the leases it takes. Required with a Router.
	Node string
	// Router reaches the node that runs a user's instance when the relay
	// runs as several nodes over one store. With a Router, a user's
	// instance runs only on the node holding the user's lease in the
	// store (Store.AcquireBrokerLease), which serves the user's calls on
	// the Router; the other nodes forward them there. Nil means one
	// node: every instance runs here and no lease is taken.
	Router Router
	// LeaseTTL is how long a user's lease lasts without a renewal, with
	// a Router: the node running the instance renews it every LeaseTTL/3
	// and stops the instance at once when a renewal fails, and a node
	// that died holding leases leaves its users to the others within
	// about LeaseTTL. Default DefaultLeaseTTL.
	LeaseTTL time.Duration
}

// DefaultLeaseTTL is Options.LeaseTTL's default.
const DefaultLeaseTTL = 15 * time.Second

// DefaultReadyTimeout is Options.ReadyTimeout's default.
const DefaultReadyTimeout = 10 * time.Second

// Manager runs an instance per linked login. Create it with New, start
// the links stored with Run, stop everything with Close. Its methods are
// safe for concurrent use.
type Manager struct {
	opts  Options
	log   *zap.Logger
	links *Links

	ctx    context.Context // ends on Close
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	insts  map[string]*instance
	// starting serializes the starts and stops of one user's instance.
	starting keylock.Locks
	wg       sync.WaitGroup // Run
	// bg are the goroutines a call leaves behind: the stop of an
	// instance whose lease was lost, a ConfigChanged forwarded.
	bg sync.WaitGroup
	// configPending are the users whose ConfigChanged waits to be
	// forwarded to the node running their instance.
	configPending map[string]bool
}

// New validates opts and returns a Manager.
func New(opts Options) (*Manager, error) {
	if opts.Store == nil || opts.Keys == nil {
		return nil, errors.New("broker: Options.Store and Options.Keys are required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Endpoints == (tradovate.Endpoints{}) {
		opts.Endpoints = tradovate.DefaultEndpoints()
	}
	if err := opts.Endpoints.Validate(); err != nil {
		return nil, err
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.EngineTick <= 0 {
		opts.EngineTick = time.Second
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if opts.SyncInterval <= 0 {
		opts.SyncInterval = 30 * time.Second
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	if opts.AddressBudget == nil {
		opts.AddressBudget = tradovate.NewAddressBudget(tradovate.BudgetOptions{})
	}
	if opts.Router != nil && opts.Node == "" {
		return nil, errors.New("broker: Options.Node is required with a Router")
	}
	links, err := NewLinks(LinkOptions{Store: opts.Store, Keys: opts.Keys})
	if err != nil {
		return nil, err
	}
	m := &Manager{opts: opts, log: opts.Logger.Named("broker"), links: links, insts: make(map[string]*instance),
		configPending: make(map[string]bool)}
	if m.opts.NewPlatform == nil {
		m.opts.NewPlatform = m.tradovatePlatform
	}
	if m.opts.Login == nil {
		m.opts.Login = m.tradovateLogin
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

// Links returns the link records.
func (m *Manager) Links() *Links { return m.links }

// Run starts an instance for every link stored, so that their engines
// enforce the users' monitors and controls whether or not anyone calls,
// then waits until ctx ends or Close is called, and stops them all.
//
// With a Router, Run starts only the links that run on no node (whose
// lease this node takes), and looks for them every LeaseTTL/2 (or
// SyncInterval, when shorter), so that the users of a node that went
// away move to the nodes left.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.wg.Add(1)
	m.mu.Unlock()
	defer m.wg.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(m.ctx, cancel)
	defer stop()
	every := m.opts.SyncInterval
	if m.opts.Router != nil {
		every = min(every, m.opts.LeaseTTL/2)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		m.syncLinks(ctx)
		select {
		case <-ctx.Done():
			m.stopAll()
			return nil
		case <-t.C:
		}
	}
}

// syncLinks brings the running instances in line with the links stored:
// it starts the links that do not run, and stops (or restarts) those
// whose link was deleted or replaced meanwhile — by the relay broker
// command, or by another relay node.
func (m *Manager) syncLinks(ctx context.Context) {
	links, err := m.opts.Store.ListBrokerLinks(ctx)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Error("listing the broker links", zap.Error(err))
		}
		return
	}
	stored := make(map[string]store.BrokerLink, len(links))
	for _, l := range links {
		stored[l.UserID] = l
	}
	m.mu.Lock()
	var stale []string
	for id, in := range m.insts {
		if l, ok := stored[id]; !ok || !in.sameLink(l) {
			stale = append(stale, id)
		}
	}
	m.mu.Unlock()
	for _, id := range stale {
		m.restartIfStale(ctx, id)
	}
	var leaseErr error
	for _, l := range links {
		if m.opts.Router != nil && m.running(l.UserID) == nil {
			// Most links run on other nodes: one refused lease is all
			// they cost.
			ok, err := m.acquireLease(ctx, l.UserID)
			if err != nil {
				leaseErr = err
			}
			if !ok {
				continue
			}
		}
		_, err := m.instance(ctx, l.UserID)
		if err != nil && m.opts.Router != nil {
			m.releaseIdle(ctx, l.UserID) // the lease taken above: unlinked meanwhile, or failing
		}
		if err != nil && ctx.Err() == nil && !errors.Is(err, ErrNotLinked) && !errors.Is(err, errLeased) {
			m.log.Warn("starting a broker link", zap.String("user", l.UserID), zap.Error(err))
		}
	}
	if leaseErr != nil && ctx.Err() == nil {
		m.log.Warn("taking the leases of the broker links that run nowhere", zap.Error(leaseErr))
	}
}

// restartIfStale stops the user's instance when its link is no longer
// the one stored; the next call (or syncLinks) starts the new one. It
// takes the user's lock only when the link changed, so that a call pays
// one store read, not a turn behind the user's other calls.
func (m *Manager) restartIfStale(ctx context.Context, userID string) {
	if !m.stale(ctx, userID) {
		return
	}
	unlock, err := m.starting.Lock(ctx, userID)
	if err != nil {
		return
	}
	defer unlock()
	if m.stale(ctx, userID) { // not replaced meanwhile
		m.stopInstance(userID)
	}
}

// stale reports whether the user's running instance runs a link that was
// deleted or replaced since; false when none runs, or when the store does
// not answer (what runs is kept).
func (m *Manager) stale(ctx context.Context, userID string) bool {
	m.mu.Lock()
	in := m.insts[userID]
	m.mu.Unlock()
	if in == nil {
		return false
	}
	l, err := m.opts.Store.BrokerLink(ctx, userID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return true
	case err != nil:
		return false
	}
	return !in.sameLink(l)
}

// Close stops every instance, gives up their leases, and waits for them
// and for Run. It is idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	insts := make([]*instance, 0, len(m.insts))
	for _, in := range m.insts {
		insts = append(insts, in)
	}
	m.mu.Unlock()
	for _, in := range insts {
		in.stopServing() // first: no forwarded call starts on an instance stopping
	}
	m.cancel()
	m.wg.Wait()
	m.stopAll()
	m.bg.Wait()
	return nil
}

// stopAll stops every running instance and gives up their leases.
func (m *Manager) stopAll() {
	m.mu.Lock()
	insts := make([]*instance, 0, len(m.insts))
	for id, in := range m.insts {
		insts = append(insts, in)
		delete(m.insts, id)
	}
	m.mu.Unlock()
	for _, in := range insts {
		in.stop()
		m.releaseLease(in.userID)
	}
}

// errClosed reports a call after Close.
var errClosed = errors.New("broker: the manager is closed")

// running returns the user's instance running on this node, or nil.
func (m *Manager) running(userID string) *instance {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.insts[userID]
}

// instance returns the user's running instance, starting it when the user
// has a link: ErrNotLinked when the user has none. With a Router it
// starts the instance only when this node takes the user's lease:
// errLeased when another node holds it.
func (m *Manager) instance(ctx context.Context, userID string) (*instance, error) {
	m.mu.Lock()
	in := m.insts[userID]
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	if in != nil {
		return in, nil
	}
	unlock, err := m.starting.Lock(ctx, userID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	m.mu.Lock()
	in = m.insts[userID]
	m.mu.Unlock()
	if in != nil {
		return in, nil
	}
	link, err := m.links.Get(ctx, userID)
	if err != nil {
		return nil, err
	}
	if m.opts.Router != nil {
		ok, err := m.acquireLease(ctx, userID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errLeased
		}
	}
	in, err = m.newInstance(link)
	if err != nil {
		m.releaseLease(userID)
		return nil, err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		in.platform.Close()
		m.releaseLease(userID)
		return nil, errClosed
	}
	m.insts[userID] = in
	m.mu.Unlock()
	in.start(m.ctx)
	m.log.Info("broker link started", zap.String("user", userID), zap.String("env", link.Env))
	return in, nil
}

// stopInstance stops the user's instance, if one runs, and gives up its
// lease. The caller holds the user's starting lock.
func (m *Manager) stopInstance(userID string) {
	m.mu.Lock()
	in := m.insts[userID]
	delete(m.insts, userID)
	m.mu.Unlock()
	if in != nil {
		in.stop()
		m.releaseLease(userID)
		m.log.Info("broker link stopped", zap.String("user", userID))
	}
}

// Link stores a link for the user (replacing any other) and starts its
// instance. The session, when set, is the one the credentials were
// checked with. With a Router the instance starts on this node, unless
// another node runs the link replaced: that one restarts with the new
// link.
func (m *Manager) Link(ctx context.Context, userID, env, method string, s Secrets) (Link, error) {
	unlock, err := m.starting.Lock(ctx, userID)
	if err != nil {
		return Link{}, err
	}
	m.stopInstance(userID)
	leased := false
	if m.opts.Router != nil {
		// The lease first, so that no other node's sweep starts the new
		// link before this node does. A store that fails here fails Put.
		leased, _ = m.acquireLease(ctx, userID)
	}
	link, err := m.links.Put(ctx, userID, env, method, s)
	unlock()
	if err != nil {
		if leased {
			m.releaseLease(userID)
		}
		return Link{}, err
	}
	switch _, err := m.instance(ctx, userID); {
	case errors.Is(err, errLeased):
		// Another node runs the link replaced: it restarts with this one.
		m.refreshElsewhere(ctx, userID)
	case err != nil:
		m.log.Warn("starting a new broker link", zap.String("user", userID), zap.Error(err))
	}
	return link, nil
}

// Unlink stops the user's instance (on whichever node runs it) and
// deletes the link with everything its operations remembered; the broker
// resources of the Management API are kept. It reports whether there was
// a link, and records broker.unlinked in src's name when there was. An
// error matches ErrStorage: the link may be left as it was.
func (m *Manager) Unlink(ctx context.Context, userID string, src protocol.ActivitySource) (bool, error) {
	unlock, err := m.starting.Lock(ctx, userID)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	m.stopInstance(userID)
	had, err := m.links.Delete(ctx, userID)
	unlock()
	if err != nil {
		m.log.Warn("deleting a broker link", zap.String("user", userID), zap.Error(err))
		return false, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	if had {
		m.refreshElsewhere(ctx, userID)
		m.log.Info("broker login unlinked", zap.String("user", userID))
		m.record(userID, "", unlinkedEntry(src))
	}
	return had, nil
}

// Linked implements manage.BrokerLinks: whether the user linked a login,
// and its accounts: as the running login reports them, else as last seen
// (kept in the store, so they are known while the broker is away).
func (m *Manager) Linked(ctx context.Context, userID string) (bool, []string, error) {
	if _, err := m.opts.Store.BrokerLink(ctx, userID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return false, nil, nil
		}
		return false, nil, err
	}
	m.mu.Lock()
	in := m.insts[userID]
	m.mu.Unlock()
	if in != nil {
		if accounts, ok := in.liveAccounts(ctx); ok {
			return true, accounts, nil
		}
	}
	accounts, err := userState{db: m.opts.Store, userID: userID}.loadAccounts(ctx)
	if err != nil {
		return false, nil, err
	}
	return true, accounts, nil
}

// ConfigChanged implements manage.BrokerEngines: the user's engines read
// their configuration again, on whichever node runs them. It does not
// block: with a Router, the news travels to the node running the user's
// instance in the background.
func (m *Manager) ConfigChanged(userID string) {
	if in := m.running(userID); in != nil {
		in.configChanged()
		return
	}
	if m.opts.Router != nil {
		m.forwardConfigChanged(userID)
	}
}

// CheckMonitorRestart implements manage.BrokerMonitors: the user's
// monitor engine judges whether mon, restarted, would stop again at once.
func (m *Manager) CheckMonitorRestart(ctx context.Context, userID string, mon protocol.Monitor) (protocol.RestartVerdict, error) {
	args, err := json.Marshal(protocol.RestartCheck{Monitor: mon})
	if err != nil {
		return protocol.RestartVerdict{}, fmt.Errorf("broker: %w", err)
	}
	raw, err := m.routed(ctx, userID, fnCheckMonitorRestart, "", args)
	if errors.Is(err, agentcall.ErrTimeout) {
		err = fmt.Errorf("%w: %w", err, context.DeadlineExceeded)
	}
	if err != nil {
		return protocol.RestartVerdict{}, fmt.Errorf("broker: %w", err)
	}
	var v protocol.RestartVerdict
	if err := json.Unmarshal(raw, &v); err != nil {
		return protocol.RestartVerdict{}, fmt.Errorf("broker: reading a monitor's restart verdict: %w", err)
	}
	return v, nil
}
