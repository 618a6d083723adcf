package tradovatefake

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/sim"
	"tradebridge/trading/bridge/tradovate"
)

// Defaults of Options: the credentials the fake accepts and its timings.
const (
	DefaultName              = "fake-trader"
	DefaultPassword          = "fake-password"
	DefaultAppID             = "tradebridge"
	DefaultCID               = 1234
	DefaultSec               = "fake-api-secret"
	DefaultOAuthClientID     = "fake-oauth-client"
	DefaultOAuthClientSecret = "fake-oauth-secret"
	// DefaultTokenLifetime is how long an access token lasts, as at the
	// broker.
	DefaultTokenLifetime = 80 * time.Minute
	// DefaultHeartbeat is how often the fake sends "h" on a socket.
	DefaultHeartbeat = 2500 * time.Millisecond
)

// UserID is the id of the one user the fake knows (the login's).
const UserID int64 = 4_200_001

// writeTimeout bounds a write to a socket; a client that does not read
// loses its socket.
const writeTimeout = 5 * time.Second

// Options configure a Server. Market is required; the rest has defaults.
type Options struct {
	// Market is the simulator behind the fake. The fake never moves its
	// clock; tests do.
	Market *sim.Platform
	// Name, Password, AppID, CID and Sec are the credentials
	// /auth/accesstokenrequest accepts (the Default* constants when empty
	// or zero). AppVersion and DeviceID are not checked.
	Name, Password, AppID, Sec string
	CID                        int
	// OAuthClientID and OAuthClientSecret are the OAuth client the fake
	// knows (DefaultOAuthClientID and DefaultOAuthClientSecret when empty).
	OAuthClientID, OAuthClientSecret string
	// Now is the clock of tokens, penalty tickets and entity timestamps
	// before the simulator reported any time: the broker's clock, not the
	// simulator's. Nil means time.Now.
	Now func() time.Time
	// TokenLifetime is how long a token lasts; 0 means
	// DefaultTokenLifetime.
	TokenLifetime time.Duration
	// Heartbeat is how often the fake sends a heartbeat frame on a
	// socket; 0 means DefaultHeartbeat.
	Heartbeat time.Duration
	// ClientSilence is how long a socket may go without a frame from its
	// client before the fake drops it; 0 means DefaultClientSilence.
	ClientSilence time.Duration
	// AddressLimit, when positive, is the fake's per-address budget: a
	// REST request from a client address (its /24) that already sent
	// AddressLimit counted requests in the last AddressWindow, whatever
	// the login, is answered a penalty ticket of AddressPenalty (1 s when
	// zero) instead of being handled (see penalty.go). Zero turns it off.
	AddressLimit   int
	AddressWindow  time.Duration
	AddressPenalty time.Duration
	// Logger receives the fake's logs (never a token or a password); nil
	// discards them.
	Logger *zap.Logger
}

// withDefaults validates o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Market == nil:
		return o, errors.New("tradovatefake: Options.Market is required")
	case o.AddressLimit > 0 && o.AddressWindow <= 0:
		return o, errors.New("tradovatefake: Options.AddressWindow must be positive with an AddressLimit")
	case o.TokenLifetime < 0 || o.Heartbeat < 0 || o.ClientSilence < 0 || o.AddressPenalty < 0:
		return o, errors.New("tradovatefake: timings must not be negative")
	case o.CID < 0:
		return o, errors.New("tradovatefake: Options.CID must not be negative")
	}
	def := func(s *string, d string) {
		if *s == "" {
			*s = d
		}
	}
	def(&o.Name, DefaultName)
	def(&o.Password, DefaultPassword)
	def(&o.AppID, DefaultAppID)
	def(&o.Sec, DefaultSec)
	def(&o.OAuthClientID, DefaultOAuthClientID)
	def(&o.OAuthClientSecret, DefaultOAuthClientSecret)
	if o.CID == 0 {
		o.CID = DefaultCID
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TokenLifetime == 0 {
		o.TokenLifetime = DefaultTokenLifetime
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.ClientSilence == 0 {
		o.ClientSilence = DefaultClientSilence
	}
	if o.AddressPenalty == 0 {
		o.AddressPenalty = defaultAddressPenalty
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return o, nil
}

// Server is a fake Tradovate server over a simulator. Its methods are safe
// for concurrent use.
//
// One goroutine, the loop, owns the fake's view of the simulator (state):
// it reads the simulator's events, turns them into the broker's entities
// and writes them to the sockets, and it runs every REST call and socket
// request that reads or changes the simulator (through do), so that the
// events of a call reach the sockets before the call's answer. Each socket
// has a reading goroutine and a heartbeat goroutine. Close waits for all
// of them.
type Server struct {
	opts   Options
	log    *zap.Logger
	market *sim.Platform
	srv    *http.Server
	url    string // "http://127.0.0.1:port"
	mux    *http.ServeMux
	// busy is the time spent answering requests, in nanoseconds (Busy).
	busy atomic.Int64

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	cmds   chan func() // run by the loop
	events <-chan bridge.Event
	wg     sync.WaitGroup
	once   sync.Once

	st *state // owned by the loop

	auth authState // guarded by mu
	mu   sync.Mutex

	pen penalties // generic penalty tickets

	sockMu  sync.Mutex
	sockets map[*socket]struct{}
	closed  bool

	strict strictKnobs

	unreachable atomic.Bool
	rateLimited atomic.Bool
	breakNext   atomic.Bool
	sk          sockKnobs
	// quoteRefusal, when set, is the errorText md/subscribequote answers.
	quoteRefusal atomic.Pointer[string]

	countMu  sync.Mutex
	requests map[string]int

	logins, renewals atomic.Int64
	eventsSent       atomic.Uint64
	ordersPlaced     atomic.Int64

	writes writesSeen // what write requests carried (oso.go)
}

// Start starts a fake Tradovate server on 127.0.0.1, over opts.Market.
func Start(opts Options) (*Server, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		opts:     opts,
		log:      opts.Logger.Named("tradovatefake"),
		market:   opts.Market,
		ctx:      ctx,
		cancel:   cancel,
		cmds:     make(chan func()),
		st:       newState(opts.Now()),
		sockets:  make(map[*socket]struct{}),
		requests: make(map[string]int),
	}
	s.auth.init()
	s.pen.init()
	// Subscribe first, so that nothing the simulator does from now on is
	// missed; then read the state as it stands.
	s.events = s.market.Events(ctx)
	if err := s.load(ctx); err != nil {
		cancel()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		return nil, err
	}
	s.url = "http://" + ln.Addr().String()
	s.mux = s.routes()
	// Its own server, not httptest's: closing an httptest.Server closes
	// the idle connections of http.DefaultTransport, other tests' too.
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ErrorLog: log.New(io.Discard, "", 0),
		ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		_ = s.srv.Serve(ln)
	}()
	go s.loop()
	s.log.Info("fake Tradovate server started", zap.String("url", s.url), zap.Int("accounts", len(s.st.accounts)))
	return s, nil
}

// load reads the simulator's accounts, cash and positions into the state.
func (s *Server) load(ctx context.Context) error {
	accts, err := s.market.Accounts(ctx)
	if err != nil {
		return err
	}
	for _, rec := range accts {
		a := s.st.addAccount(rec.Name)
		a.setCash(rec, s.st.now())
		ps, err := s.market.Positions(ctx, rec.Name)
		if err != nil {
			return err
		}
		for _, p := range ps {
			c, _, ok := s.st.contract(p.Instrument)
			if !ok {
				continue
			}
			row := s.st.position(a, c)
			row.setNet(p)
			// A position held before the fake started is reported as
			// bought or sold that day at its average price.
			value := roundPrice(p.AveragePrice * float64(p.Quantity))
			if row.netPos > 0 {
				row.bought, row.boughtValue = p.Quantity, value
			} else {
				row.sold, row.soldValue = p.Quantity, value
			}
			row.at = s.st.now()
			row.markSent() // the broker has the row already
		}
	}
	return nil
}

// Close stops the fake: sockets are closed, the listener too, and Close
// waits for every goroutine of the fake. The simulator is the caller's.
// Close is idempotent.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.sockMu.Lock()
		s.closed = true
		s.sockMu.Unlock()
		s.cancel()
		s.closeSockets()
		// Handlers end at once once ctx is done; Shutdown waits for them.
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		if err := s.srv.Shutdown(ctx); err != nil {
			_ = s.srv.Close()
		}
		cancel()
		s.wg.Wait()
		s.log.Info("fake Tradovate server closed")
	})
	return nil
}

// RESTURL is the REST base, "http://127.0.0.1:port/v1".
func (s *Server) RESTURL() string { return s.url + "/v1" }

// UserSocketURL is the user-data socket, "ws://127.0.0.1:port/v1/websocket".
func (s *Server) UserSocketURL() string {
	return "ws" + strings.TrimPrefix(s.url, "http") + "/v1/websocket"
}

// MDURL is the market-data socket, "ws://127.0.0.1:port/md/v1/websocket".
func (s *Server) MDURL() string {
	return "ws" + strings.TrimPrefix(s.url, "http") + "/md/v1/websocket"
}

// OAuthAuthorizeURL is the OAuth authorize page: it redirects at once to
// the redirect_uri it is given, with a code (see the package
// documentation).
func (s *Server) OAuthAuthorizeURL() string { return s.url + "/oauth" }

// Endpoints returns the broker's addresses for both environments, demo
// and live alike pointed at the fake.
func (s *Server) Endpoints() tradovate.Endpoints {
	return tradovate.Endpoints{
		DemoREST:       s.RESTURL(),
		LiveREST:       s.RESTURL(),
		DemoMD:         s.MDURL(),
		LiveMD:         s.MDURL(),
		OAuthAuthorize: s.OAuthAuthorizeURL(),
	}
}

// AccountID returns the broker's id of one of the simulator's accounts.
func (s *Server) AccountID(name string) (int64, bool) {
	var id int64
	s.do(func() {
		if a := s.st.acctByName[name]; a != nil {
			id = a.id
		}
	})
	return id, id != 0
}

// Flush sends every event the simulator has published so far to the
// sockets, before it returns.
func (s *Server) Flush() { s.do(s.drain) }

// Logins counts the logins answered with a token.
func (s *Server) Logins() int { return int(s.logins.Load()) }

// Renewals counts the renewals answered with a token.
func (s *Server) Renewals() int { return int(s.renewals.Load()) }

// EventsSent counts the props events written to user-data sockets (one
// per entity created, updated or deleted; several may share a frame),
// over the fake's life and every socket. A client that applies every
// props event it reads has caught up when its count reaches this one
// (after Flush).
func (s *Server) EventsSent() uint64 { return s.eventsSent.Load() }

// OrdersPlaced counts the orders the fake placed in the simulator
// (placeorder one, placeoco two, liquidateposition one when there is a
// position to close).
func (s *Server) OrdersPlaced() int { return int(s.ordersPlaced.Load()) }

// Requests counts the requests to a path, whatever their answer: a REST
// path relative to the REST base ("auth/accesstokenrequest",
// "/order/placeorder"; case does not matter), a socket request's endpoint
// ("user/syncrequest", "md/subscribequote", "authorize" counts both
// sockets), "websocket" for user-socket connections and "md/websocket"
// for market-data ones.
func (s *Server) Requests(path string) int {
	s.countMu.Lock()
	defer s.countMu.Unlock()
	return s.requests[countKey(path)]
}

// countKey is the key of a path in the request counts.
func countKey(path string) string {
	p := strings.ToLower(strings.TrimPrefix(path, "/"))
	switch {
	case p == "md/v1/websocket":
		return "md/websocket"
	case strings.HasPrefix(p, "v1/"):
		return p[len("v1/"):]
	}
	return p
}

func (s *Server) count(path string) {
	s.countMu.Lock()
	s.requests[countKey(path)]++
	s.countMu.Unlock()
}

// FailLogins makes the next n logins fail as refused credentials do: HTTP
// 200 with errorText and no token.
func (s *Server) FailLogins(n int) {
	s.mu.Lock()
	s.auth.failLogins = max(n, 0)
	s.mu.Unlock()
}

// PenaltyTicket makes the next n logins answer a penalty ticket asking to
// wait wait (p-time, whole seconds, rounded up) before resending. A resend
// with the ticket once the wait passed (by Options.Now) is accepted like a
// login; an earlier one gets the same ticket with the time that remains.
func (s *Server) PenaltyTicket(n int, wait time.Duration) {
	s.mu.Lock()
	s.auth.penalties, s.auth.penaltyWait = max(n, 0), max(wait, 0)
	s.mu.Unlock()
}

// AuthPerMinute sets how many access token requests the fake takes in a
// minute (its one address's, across every login) before it answers a
// penalty ticket of the documented 15 s back-off; 0 takes any number.
// It starts at DefaultAuthPerMinute.
func (s *Server) AuthPerMinute(n int) {
	s.mu.Lock()
	s.auth.authPerMinute = max(n, 0)
	s.mu.Unlock()
}

// AuthTickets counts the penalty tickets the fake answered to logins
// (PenaltyTicket, Captcha, AuthPerMinute); Tickets counts the other
// endpoints'.
func (s *Server) AuthTickets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth.issued
}

// RenewWithoutMD makes renewals answer without mdAccessToken while on.
func (s *Server) RenewWithoutMD(on bool) {
	s.mu.Lock()
	s.auth.renewNoMD = on
	s.mu.Unlock()
}

// Unauthorize makes the next n REST requests that need a token, and
// authorizations of the user-data socket, answer 401 whatever their
// token, as the broker does for a session it ended.
func (s *Server) Unauthorize(n int) {
	s.mu.Lock()
	s.auth.unauthorize = max(n, 0)
	s.mu.Unlock()
}

// ExpiredTokenUses counts the requests, renewals and socket
// authorizations made with a token the fake issued after it expired.
func (s *Server) ExpiredTokenUses() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth.expiredUses
}

// Live reports whether token is a token the fake issued that has not
// expired (an access, market-data or OAuth token).
func (s *Server) Live(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.auth.tokens[token]
	return ok && s.opts.Now().Before(t.expires)
}

// Captcha makes every login answer a penalty ticket with p-captcha true
// while on: a human must log in on the broker's site.
func (s *Server) Captcha(on bool) {
	s.mu.Lock()
	s.auth.captcha = on
	s.mu.Unlock()
}

// RateLimit makes every HTTP request, sockets included, answer 429 with an
// empty body while on. Open sockets stay open.
func (s *Server) RateLimit(on bool) { s.rateLimited.Store(on) }

// RejectNext makes the next order placement (placeorder, placeoco,
// liquidateposition) fail with failureReason reason, placing nothing. An
// empty reason clears it.
func (s *Server) RejectNext(reason string) {
	s.mu.Lock()
	s.auth.rejectNext = reason
	s.mu.Unlock()
}

// RefuseQuotes makes md/subscribequote fail, as the broker answers a
// login without the market-data entitlement for the contract: status 200
// with an errorText (text) and no subscription. An empty text accepts
// subscriptions again; the ones refused stay unsubscribed until asked
// again.
func (s *Server) RefuseQuotes(text string) {
	if text == "" {
		s.quoteRefusal.Store(nil)
		return
	}
	s.quoteRefusal.Store(&text)
}

// Unreachable makes the broker unreachable while on: open sockets are cut
// and every HTTP request, socket dials included, gets its connection
// closed without an answer.
func (s *Server) Unreachable(on bool) {
	s.unreachable.Store(on)
	if on {
		s.closeSockets()
	}
}

// DropSockets cuts every open socket once, as a network failure would.
func (s *Server) DropSockets() { s.closeSockets() }

// DropMDSockets cuts the open market-data sockets once, as a failure of
// the market-data service alone would; the user-data sockets stay.
func (s *Server) DropMDSockets() {
	for _, sock := range s.openSockets(true) {
		s.closeSocket(sock)
	}
}

// BreakNextOrderReply makes the next order write (a REST POST under
// /order/: placeorder, placeoco, cancelorder, modifyorder,
// liquidateposition) run as usual, its events sent, and then cuts its
// connection instead of answering: the client cannot know whether the
// broker acted. Reads (order/list, order/item) are not affected.
func (s *Server) BreakNextOrderReply() { s.breakNext.Store(true) }

// takeReject returns and clears the pending RejectNext reason.
func (s *Server) takeReject() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.auth.rejectNext
	s.auth.rejectNext = ""
	return r
}

// serveHTTP is the fake's HTTP entry: it counts the request, then plays
// the knobs (unreachable, rate limited, a broken order reply) before
// routing it.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.count(r.URL.Path)
	r.URL.Path = strings.ToLower(r.URL.Path)
	switch {
	case s.unreachable.Load():
		cut(w)
		return
	case s.rateLimited.Load():
		w.WriteHeader(http.StatusTooManyRequests)
		return
	case s.penalize(w, r):
		return
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/order/") &&
		s.breakNext.CompareAndSwap(true, false):
		s.mux.ServeHTTP(httptest.NewRecorder(), r)
		s.log.Info("order reply broken on purpose", zap.String("path", r.URL.Path))
		cut(w)
		return
	}
	start := time.Now()
	s.mux.ServeHTTP(w, r)
	s.busy.Add(int64(time.Since(start)))
}

// Busy returns the time the fake spent answering requests, over REST and
// over the sockets: benchmarks subtract it to measure a caller's own
// time.
func (s *Server) Busy() time.Duration { return time.Duration(s.busy.Load()) }

// cut closes the request's connection without an answer.
func cut(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// loop owns the state: it forwards the simulator's events and runs the
// functions handed to do, until Close.
func (s *Server) loop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case f := <-s.cmds:
			f()
		case ev, ok := <-s.events:
			if !ok {
				s.events = nil
				continue
			}
			s.forward(ev)
		}
	}
}

// do runs f in the loop and waits for it; it reports false, without
// running f, once the fake is closed.
func (s *Server) do(f func()) bool {
	done := make(chan struct{})
	select {
	case s.cmds <- func() { defer close(done); f() }:
	case <-s.ctx.Done():
		return false
	}
	<-done
	return true
}

// drain forwards every event the simulator has published so far, without
// waiting for more. It runs in the loop.
func (s *Server) drain() {
	for s.events != nil {
		select {
		case ev, ok := <-s.events:
			if !ok {
				s.events = nil
				return
			}
			s.forward(ev)
		default:
			return
		}
	}
}
