// Package tradovate is the relay's bridge to the Tradovate futures broker:
// a bridge.Platform over Tradovate's REST and WebSocket API, one per
// linked login, so that the relay runs the agent's dispatcher and
// operations (trading/dispatch, trading/ops) server-side for the /v1/api/tv/
// routes.
//
// A Session holds the login: it logs in (API key) or lives on an OAuth
// token, renews the token before it expires, honours the broker's penalty
// tickets and its one-hour lock-out after HTTP 429, and paces every
// request of the login. The Platform keeps a mirror of the login's
// accounts, orders, fills and positions, taken with user/syncrequest on
// the user-data socket and kept current from its props events; reads are
// served from the mirror, writes are REST calls answered once their
// effects are in the mirror; Flatten reads the broker's own lists over
// REST, so that it works while the socket is down. Quotes come from the market-data socket.
// The broker's numeric order ids are mapped to the order ids callers
// chose, in a Persist that survives relay restarts.
//
// Tradovate has no strategies, ATM templates or bars for this API, and
// joins orders to an OCO group only when both are placed together: those
// primitives answer bridge.ErrNotSupported, and OCO pairs go through
// SubmitOCO (bridge.PairSubmitter).
package tradovate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"tradebridge/internal/backoff"
	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// Kind is the platform kind the bridge reports.
const Kind = "tradovate"

// Defaults of Options.
const (
	DefaultMinBackoff = 250 * time.Millisecond
	DefaultMaxBackoff = 5 * time.Second
	// DefaultWriteWait bounds how long a write waits for its effects to
	// reach the mirror after the broker accepted it.
	DefaultWriteWait = 5 * time.Second
	// DefaultQuoteWait bounds how long Quote waits for the first quote of
	// a contract.
	DefaultQuoteWait = 5 * time.Second
	// quoteKeep is how long a contract Quote asked for stays subscribed
	// after the last Quote of it.
	quoteKeep = 10 * time.Minute
	// orderRecordKeep is how long a record of the order-id map outlives
	// its order in the broker's lists.
	orderRecordKeep = 7 * 24 * time.Hour
)

// Why the platform cannot serve a call (bridge.UnavailableError.Code),
// besides the session's codes.
const (
	CodeNotStarted = "not_started"
	CodeStopped    = "stopped"
	CodeConnecting = "connecting"
	// CodeNoMarketData: the broker sent no quote in time (the login may
	// lack a market-data subscription).
	CodeNoMarketData = "market_data_unavailable"
)

var platformReasons = map[string]string{
	CodeNotStarted:   "the relay has not connected to Tradovate yet",
	CodeStopped:      "the relay's Tradovate link is stopped",
	CodeConnecting:   "the relay is connecting to Tradovate",
	CodeNoMarketData: "Tradovate sent no quote for the contract in time (the login may lack a market-data subscription)",
}

func platformUnavailable(code string) *bridge.UnavailableError {
	return &bridge.UnavailableError{Code: code, Reason: platformReasons[code]}
}

// Options configures a Platform.
type Options struct {
	// Session is the login; required. The Platform does not run or close
	// it.
	Session *Session
	// Persist keeps the order-id map (bucket OrdersBucket); nil keeps it
	// in memory only.
	Persist Persist
	Logger  *zap.Logger
	// Now is the clock of trading sessions (orders and fills of the
	// current session, watermarks, front months); time.Now when nil.
	Now func() time.Time

	MinBackoff time.Duration
	MaxBackoff time.Duration
	WriteWait  time.Duration
	QuoteWait  time.Duration
	// SocketDeadAfter is how long a socket may stay silent.
	SocketDeadAfter time.Duration
	// EventBuffer is how far a reader of Events may fall behind.
	EventBuffer int
	// SyncUsers sends user/syncrequest as Tradovate's public example
	// clients do, {"users": [id]} with entityTypes, instead of the partner
	// documentation's {"splitResponses": true, "entityTypes": [...]}
	// (the default). For a login on which a demo run shows the default
	// refused.
	SyncUsers bool
	// MDRetry is how long a quote subscription the broker refused waits
	// before it is asked again; 0 means a minute.
	MDRetry time.Duration
	// OnQuotesRefused, when set, is told when the broker refuses the
	// quotes of an instrument that were not refused before: its name,
	// and whether the broker offered delayed data only. It is called
	// with the platform's lock held and must not block nor call the
	// Platform.
	OnQuotesRefused func(instrument string, delayed bool)
}

// Platform is the Tradovate bridge of one login. Create it with New, run
// its connection loop with Run, and Close it.
type Platform struct {
	opts      Options
	log       *zap.Logger
	sess      *Session
	feed      *bridge.Feed
	contracts *contracts
	ids       *orderIDs
	connName  string

	run       bridge.RunGuard
	closeOnce sync.Once

	applied   atomic.Uint64 // props events
	mdApplied atomic.Uint64 // md events

	mu          sync.Mutex
	m           *mirror // nil before the first sync
	user        *socket // the synced user socket, nil while down
	unavailable error   // why there is no synced user socket
	changed     chan struct{}
	// held are events waiting for an order placement to answer (see
	// holdLocked); placing counts placements in flight.
	held    []tradovatewire.Message
	placing int
	// failed are our ids of placements the broker refused: an order that
	// carries one is not ours to show.
	failed map[string]bool
	md     mdState
}

// New returns a Platform; nothing is dialled until Run.
func New(opts Options) (*Platform, error) {
	if opts.Session == nil {
		return nil, errors.New("tradovate: Options.Session is required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Persist == nil {
		opts.Persist = &memPersist{}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.MinBackoff, DefaultMinBackoff)
	def(&opts.MaxBackoff, DefaultMaxBackoff)
	def(&opts.WriteWait, DefaultWriteWait)
	def(&opts.QuoteWait, DefaultQuoteWait)
	def(&opts.SocketDeadAfter, DefaultSocketDeadAfter)
	if opts.MaxBackoff < opts.MinBackoff {
		return nil, errors.New("tradovate: Options.MaxBackoff is below MinBackoff")
	}
	log := opts.Logger.Named("tradovate")
	ids, err := loadOrderIDs(opts.Persist, log)
	if err != nil {
		return nil, err
	}
	p := &Platform{
		opts:        opts,
		log:         log,
		sess:        opts.Session,
		feed:        bridge.NewFeed(opts.EventBuffer),
		contracts:   newContracts(opts.Session, opts.Now),
		ids:         ids,
		connName:    "Tradovate " + string(opts.Session.Env()),
		unavailable: platformUnavailable(CodeNotStarted),
		changed:     make(chan struct{}),
		failed:      make(map[string]bool),
		md:          newMDState(),
	}
	return p, nil
}

// Kind implements bridge.Platform.
func (p *Platform) Kind() string { return Kind }

// Events implements bridge.Platform.
func (p *Platform) Events(ctx context.Context) <-chan bridge.Event { return p.feed.Subscribe(ctx) }

// EventsApplied counts the props events of the user-data socket the
// platform has applied (an event waiting for a placement's answer counts
// once applied), for tests' settling and diagnostics.
func (p *Platform) EventsApplied() uint64 { return p.applied.Load() }

// Barrier waits until the market-data subscriptions the platform needs are
// in place (for QuoteWait at most) and every event the broker sent before,
// on the user-data and the market-data sockets, is applied: it sends a
// request on each open socket and waits for the replies. It is for tests
// and diagnostics; a socket that is down is skipped.
func (p *Platform) Barrier(ctx context.Context) error {
	if err := p.usable(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	p.md.kickLocked()
	p.mu.Unlock()
	p.waitFor(ctx, p.opts.QuoteWait, p.mdSettledLocked)
	p.mu.Lock()
	socks := []*socket{p.user, p.md.sock}
	p.mu.Unlock()
	for _, s := range socks {
		if s == nil {
			continue
		}
		if _, err := s.request(ctx, "order/item", "id=0", nil); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// PlatformStatus describes the platform's link to the broker.
type PlatformStatus struct {
	Session Status `json:"session"`
	// Connected reports a synced user-data socket.
	Connected bool `json:"connected"`
	// Code and Reason say why it is not connected.
	Code   string `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	// MarketData reports a connected market-data socket.
	MarketData    bool   `json:"marketData"`
	EventsApplied uint64 `json:"eventsApplied"`
	// QuotesApplied counts the md events applied.
	QuotesApplied uint64 `json:"quotesApplied"`
	// MarketDataRefused names the contracts whose quotes the broker
	// refused (no market-data entitlement, or delayed data only): the
	// positions in them have no price and their unrealized P&L is
	// unknown.
	MarketDataRefused []string `json:"marketDataRefused,omitempty"`
}

// Status returns the platform's state.
func (p *Platform) Status() PlatformStatus {
	st := PlatformStatus{Session: p.sess.Status(), EventsApplied: p.applied.Load(), QuotesApplied: p.mdApplied.Load()}
	p.mu.Lock()
	defer p.mu.Unlock()
	st.Connected = p.user != nil
	st.MarketData = p.md.sock != nil
	st.MarketDataRefused = p.mdRefusedLocked()
	var ue *bridge.UnavailableError
	if !st.Connected && errors.As(p.unavailable, &ue) {
		st.Code, st.Reason = ue.Code, ue.Reason
	}
	return st
}

// Run keeps the platform connected until ctx ends or the Platform closes:
// it dials the user-data socket, syncs, follows events, and after a
// failure tries again with exponential backoff and full jitter (resyncing
// and publishing what changed meanwhile). It keeps the market-data socket
// while anything is subscribed. It returns nil when it stops, and an
// error if it is already running (bridge.ErrRunning) or the Platform is
// closed (bridge.ErrClosed).
func (p *Platform) Run(ctx context.Context) error {
	ctx, end, err := p.run.Begin(ctx)
	if err != nil {
		return fmt.Errorf("tradovate: %w", err)
	}
	defer end()

	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(2)
	go func() { defer wg.Done(); p.runMD(ctx) }()
	go func() { defer wg.Done(); p.runContracts(ctx) }()

	bridge.Reconnect(ctx, backoff.Backoff{Min: p.opts.MinBackoff, Max: p.opts.MaxBackoff}, p.runUser)
	p.setDown(platformUnavailable(CodeStopped))
	return nil
}

// runUser serves one user-data socket: dial, authorize, sync, follow. It
// reports whether the socket synced.
func (p *Platform) runUser(ctx context.Context) bool {
	if !p.waitLockOut(ctx, p.setDown) {
		return false
	}
	p.setConnecting()
	tok, err := p.sess.Token(ctx)
	if err != nil {
		p.setDown(err)
		return false
	}
	if tok.UserID == 0 {
		var me tradovatewire.MeResponse
		if err := p.sess.Do(ctx, http.MethodGet, "/auth/me", "", nil, &me); err != nil || me.UserID == 0 {
			p.setDown(socketUnavailable(err))
			return false
		}
		tok.UserID = me.UserID
	}
	var synced atomic.Bool
	sock, err := dialSocket(ctx, socketOptions{
		URL: p.sess.Endpoints().UserSocket(p.sess.Env()), Token: tok.AccessToken,
		HTTPClient: p.sess.HTTPClient(), DeadAfter: p.opts.SocketDeadAfter, Logger: p.log,
		OnRateLimited: p.sess.rateLimited, Pace: p.sess.paceSocket, Ticket: p.sess.socketTicket,
		OnEvent: func(m tradovatewire.Message) {
			if !synced.Load() {
				p.applied.Add(1) // the sync answer that follows includes it
				return
			}
			p.onUserEvent(m)
		},
	})
	if errors.Is(err, errTokenRefused) {
		_ = p.sess.revive(ctx, tok) // renewed, or dropped when its renewal is refused too
		p.setDown(platformUnavailable(CodeConnecting))
		return false
	}
	if err != nil {
		p.setDown(socketUnavailable(err))
		return false
	}
	defer sock.Close()

	reply, release, err := sock.requestHeld(ctx, "user/syncrequest", "", p.syncBody(tok.UserID))
	if err != nil {
		p.setDown(socketUnavailable(err))
		return false
	}
	ok := func() bool {
		defer release()
		if reply.S != http.StatusOK {
			p.log.Warn("tradovate: the broker refused user/syncrequest", zap.Int("status", reply.S))
			return false
		}
		var snap tradovatewire.SyncResponse
		if err := decodeData(reply.D, &snap); err != nil {
			p.log.Warn("tradovate: the syncrequest answer does not decode", zap.Error(err))
			return false
		}
		for _, c := range snap.Contracts {
			p.contracts.add(c)
		}
		p.applySnapshot(tok.UserID, snap, sock)
		p.contracts.want(snapshotContracts(snap)...) // looked up off the read goroutine
		synced.Store(true)
		return true
	}()
	if !ok {
		p.setDown(platformUnavailable(CodeConnecting))
		return false
	}
	p.log.Info("tradovate: synced")
	p.loadFees(ctx)
	select {
	case <-ctx.Done():
	case <-sock.Done():
		p.log.Info("tradovate: the user-data socket closed; reconnecting")
	}
	if reason, ok := sock.shutdownReason(); ok && ctx.Err() == nil {
		pause, why := shutdownPause(reason)
		p.setDown(why)
		p.sess.sleep(ctx, pause)
		return true
	}
	p.setDown(platformUnavailable(CodeConnecting))
	return true
}

// loadFees reads the fees of the login's fills (GET /fillFee/list): the
// syncrequest answer does not carry them, and without them the day's
// commission would restart at zero after each sync. A failure is logged;
// the fees of fills that come later arrive as props events.
func (p *Platform) loadFees(ctx context.Context) {
	var fees []tradovatewire.FillFee
	if err := p.sess.Do(ctx, http.MethodGet, "/fillFee/list", "", nil, &fees); err != nil {
		if ctx.Err() != nil {
			return
		}
		p.log.Warn("tradovate: the fills' fees could not be read; commissions may show low", zap.Error(err))
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		return
	}
	for _, f := range fees {
		if _, ok := p.m.fees[f.ID]; !ok {
			p.m.fees[f.ID] = f
		}
	}
	var evs []bridge.Event
	for _, id := range p.m.accOrder {
		evs = append(evs, p.refreshAccountLocked(id)...)
	}
	p.publishLocked(evs)
	p.notifyLocked()
}

// setConnecting records that a connection is being made, keeping a more
// precise reason the session gave.
func (p *Platform) setConnecting() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.user == nil && p.unavailable == nil {
		p.unavailable = platformUnavailable(CodeConnecting)
	}
}

// setDown records why the user socket is not synced, and reports the
// connection disconnected when it was.
func (p *Platform) setDown(why error) {
	p.mu.Lock()
	was := p.user != nil
	p.user = nil
	p.unavailable = why
	var conns []protocol.Connection
	if was {
		conns = p.connectionsLocked()
		p.notifyLocked()
	}
	p.mu.Unlock()
	if was {
		p.feed.Publish(bridge.Event{Kind: bridge.EventConnections, Connections: conns})
	}
}

// connectionsLocked is the platform's one connection.
func (p *Platform) connectionsLocked() []protocol.Connection {
	c := protocol.Connection{Name: p.connName, Status: "Disconnected", Accounts: []string{}}
	if p.user != nil {
		c.Status = "Connected"
	}
	if p.m != nil {
		for _, id := range p.m.accOrder {
			c.Accounts = append(c.Accounts, p.m.accounts[id].rec.Name)
		}
	}
	return []protocol.Connection{c}
}

// notifyLocked wakes the callers waiting for the mirror to change.
func (p *Platform) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// waitFor waits until cond (run with p.mu held) holds, ctx ends or d
// passes; it reports whether cond held.
func (p *Platform) waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		p.mu.Lock()
		ok := cond()
		ch := p.changed
		p.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		case <-p.run.Done():
			return false
		}
	}
}

// Close stops Run, waits for it, and ends every event stream. It does not
// close the Session. It is idempotent.
func (p *Platform) Close() error {
	p.closeOnce.Do(func() {
		p.run.Close()
		p.setDown(platformUnavailable(CodeStopped))
		p.feed.Close()
	})
	return nil
}

// usable refuses a call whose ctx has ended, and every call once the
// Platform is closed.
func (p *Platform) usable(ctx context.Context) error {
	if p.run.Closed() {
		return platformUnavailable(CodeStopped)
	}
	return ctx.Err()
}

// syncedLocked returns the mirror, or why there is none.
func (p *Platform) syncedLocked() (*mirror, error) {
	if p.user == nil || p.m == nil {
		if p.unavailable != nil {
			return nil, p.unavailable
		}
		return nil, platformUnavailable(CodeConnecting)
	}
	return p.m, nil
}

// snapshotContracts lists the contract ids a sync answer refers to.
func snapshotContracts(s tradovatewire.SyncResponse) []int64 {
	var ids []int64
	for _, x := range s.Positions {
		ids = append(ids, x.ContractID)
	}
	for _, x := range s.Orders {
		ids = append(ids, x.ContractID)
	}
	for _, x := range s.Fills {
		ids = append(ids, x.ContractID)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// syncBody is the body of user/syncrequest: as the partner documentation
// writes it (splitResponses, entityTypes, no users), or with users when
// Options.SyncUsers asks for the example clients' form.
func (p *Platform) syncBody(userID int64) tradovatewire.SyncRequest {
	if p.opts.SyncUsers {
		return tradovatewire.SyncRequest{Users: []int64{userID}, EntityTypes: tradovatewire.SyncEntityTypes}
	}
	return tradovatewire.SyncRequest{SplitResponses: true, EntityTypes: tradovatewire.SyncEntityTypes}
}
