package stream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/events"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/tradecall"
)

// Path is where the relay serves the stream API.
const Path = "/ws/stream"

// Door is the upgrade's admission policy (see package admit), the trading
// API's: the client address's budget, an API token (from the
// Authorization header or the token query parameter), the pro plan (403
// plan_required), and the user's trading budget. A request that is no
// WebSocket upgrade (426 upgrade_required) or sends another query
// parameter (400 unknown_parameter) is refused in place of the token,
// before any token is looked at. New fills in the budgets.
var Door = func() admit.Door {
	d := tradecall.Door
	d.Name, d.Token, d.Source = "stream", upgradeToken, protocol.SourceStream
	return d
}()

// SessionDoor is the upgrade's admission policy for the dashboard's pages
// (the stream's session door): the client address's budget, no API token
// (no Authorization header, no token parameter) but the dashboard's
// session (Options.SessionToken) from a page of the relay's own origin
// (else 403 origin_not_allowed, before the session is looked at), every
// plan, and the user's trading budget, as for a token. Its sockets read
// only: an rpc frame is answered read_only_socket and runs nothing. New
// fills in the budgets.
var SessionDoor = admit.Door{
	Name:               "stream-session",
	Kind:               auth.KindSession,
	Token:              sessionUpgradeToken,
	Source:             protocol.SourceStream,
	MissingTokenDetail: "an API token or a dashboard session is required",
	InvalidTokenDetail: "the dashboard session is missing, expired or signed out",
}

// Server serves GET /ws/stream. Create it with New; it is an http.Handler.
type Server struct {
	opts Options
	log  *zap.Logger
	door admit.Door
	// sessionDoor admits the dashboard's sockets (SessionDoor); unused
	// without Options.SessionToken.
	sessionDoor admit.Door
	calls       *tradecall.Calls // runs the rpc calls and records the writes
	ctx         context.Context  // ends when the Server closes
	cancel      context.CancelFunc

	mu     sync.RWMutex
	users  map[string]*user
	closed bool
	wg     sync.WaitGroup // sockets, user loops, their calls

	stats struct {
		sockets         atomic.Int64
		delivered       atomic.Int64
		conflated       atomic.Int64
		frames          atomic.Int64
		badQuotes       atomic.Int64
		activity        atomic.Int64
		activityDropped atomic.Int64
	}
}

// New returns a Server.
func New(opts Options) (*Server, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	keyed, err := tradecall.NewKeyedWrites(tradecall.KeyedOptions{Store: opts.Idempotency, Caller: opts.Upstream,
		CallTimeout: opts.CallTimeout, Logger: opts.Logger.Named("stream")})
	if err != nil {
		return nil, err
	}
	calls, err := tradecall.NewCalls(tradecall.CallsOptions{Caller: opts.Upstream, Keyed: keyed, Events: opts.Events, Now: opts.Clock.Now,
		Source: protocol.SourceStream, CallTimeout: opts.CallTimeout, Logger: opts.Logger.Named("stream")})
	if err != nil {
		return nil, err
	}
	door := Door
	door.IP = opts.IPBudget
	door.Budgets = []*budget.Limiter{opts.Budget}
	sdoor := SessionDoor
	sdoor.IP = opts.IPBudget
	sdoor.Budgets = []*budget.Limiter{opts.Budget}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		opts:        opts,
		log:         opts.Logger.Named("stream"),
		door:        door,
		sessionDoor: sdoor,
		calls:       calls,
		ctx:         ctx,
		cancel:      cancel,
		users:       make(map[string]*user),
	}, nil
}

// Close closes every socket with 1001 and waits for the Server's
// goroutines. It is idempotent; sockets opened afterwards are refused.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}

// Stats are the Server's running totals.
type Stats struct {
	// Sockets is the number of open sockets.
	Sockets int64
	// Delivered counts quotes written to sockets; Conflated, quotes
	// replaced by a newer quote of the same instrument before a socket
	// could take them.
	Delivered, Conflated int64
	// Frames counts frames written, of every type.
	Frames int64
	// BadQuotes counts quote events that could not be decoded.
	BadQuotes int64
	// Activity counts activity frames written; ActivityDropped, entries
	// a socket's full activity queue could not take.
	Activity, ActivityDropped int64
}

// Stats returns the Server's running totals.
func (s *Server) Stats() Stats {
	return Stats{
		Sockets:   s.stats.sockets.Load(),
		Delivered: s.stats.delivered.Load(),
		Conflated: s.stats.conflated.Load(),
		Frames:    s.stats.frames.Load(),
		BadQuotes: s.stats.badQuotes.Load(),

		Activity:        s.stats.activity.Load(),
		ActivityDropped: s.stats.activityDropped.Load(),
	}
}

// Handle takes the event spine's events (the relay subscribes it
// directly, with other nodes' events too): statuses go to HandleStatus,
// the agents' events to HandleEvent, the activity log's entries
// (TypeRecorded) to HandleRecorded.
func (s *Server) Handle(e events.Event) {
	switch e.Type {
	case events.TypeRecorded:
		s.HandleRecorded(e.UserID, e.Activity)
	case events.TypeAgent:
		s.HandleEvent(e.UserID, e.Agent)
	case events.TypeStatus:
		s.HandleStatus(e.UserID, e.Connected)
	}
}

// HandleEvent takes an event a user's agent sent. A change of the
// platform's connections has the user's subscriptions sent again if the
// agent may not hold them (the platform was not ready when they were
// sent). Quotes go to that user's sockets subscribed to the quote's instrument,
// and to nobody else. It never blocks: each socket keeps only the latest
// quote of each instrument until its writer takes it. A quote the relay
// cannot use is dropped and counted (Stats.BadQuotes): one that does not
// decode, whose instrument is not a contract name (1 to 64 printable
// characters), or that is larger than a quote can be (4 KiB as sent, 1
// KiB as encoded for sockets), so that what an agent sends cannot grow
// what the relay keeps.
func (s *Server) HandleEvent(userID string, ev protocol.Event) {
	if ev.Kind == protocol.EventConnections {
		// The platform's connections changed behind the agent (it came
		// up, say): subscriptions that could not be set are sent again.
		s.mu.RLock()
		u := s.users[userID]
		s.mu.RUnlock()
		if u != nil {
			u.signalResync()
		}
		return
	}
	if ev.Kind != protocol.EventQuote {
		return
	}
	s.mu.RLock()
	u := s.users[userID]
	s.mu.RUnlock()
	if u == nil {
		return
	}
	if len(ev.Data) > maxQuoteEvent {
		s.stats.badQuotes.Add(1)
		return
	}
	var q protocol.Quote
	if err := json.Unmarshal(ev.Data, &q); err != nil || !validInstrument(q.Instrument) {
		s.stats.badQuotes.Add(1)
		return
	}
	// Encoded once for every socket.
	data, err := httpapi.Marshal(&q)
	if err != nil || len(data) > maxQuoteBytes {
		s.stats.badQuotes.Add(1)
		return
	}
	key := normalizeContract(q.Instrument)
	// Kept for sockets that subscribe later (the subscribed reply carries
	// it) before the routes are read: a quote that arrives while a
	// subscription is being set up reaches the new socket one way or the
	// other.
	seq := u.cacheQuote(key, data)
	for _, r := range u.routes.Load().by[key] {
		r.sk.offerQuote(r.slot, seq, data)
	}
}

// HandleRecorded takes an entry the user's activity log stored: it goes
// to that user's sockets subscribed to the activity (subscribeActivity),
// and to nobody else, encoded once. It never blocks: each socket queues
// at most MaxActivityQueue entries and drops (and counts) what is beyond.
func (s *Server) HandleRecorded(userID string, e protocol.ActivityEntry) {
	s.mu.RLock()
	u := s.users[userID]
	s.mu.RUnlock()
	if u == nil {
		return
	}
	subs := u.actSubs.Load()
	if subs == nil || len(*subs) == 0 {
		return
	}
	if len(e.Detail) == 0 {
		e.Detail = json.RawMessage(`{}`)
	}
	data, err := httpapi.Marshal(&e)
	if err != nil {
		s.log.Warn("an activity entry does not encode", zap.String("user", userID), zap.Error(err))
		return
	}
	for _, sk := range *subs {
		sk.offerActivity(data)
	}
}

// HandleStatus takes a change of a user's agent connection
// (a status on the event spine). It never blocks: the user's sockets get a status
// frame, and on connect the user's subscriptions are sent to the agent.
func (s *Server) HandleStatus(userID string, connected bool) {
	s.mu.RLock()
	u := s.users[userID]
	s.mu.RUnlock()
	if u != nil {
		u.signalStatus()
	}
}

// ServeHTTP handles GET /ws/stream: it admits the request (Door: the
// per-address budget, the upgrade itself, the token, the plan, the user's
// trading budget), counts the socket against the user's limit, upgrades,
// and then serves the socket until it closes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The token may travel in the query string; no later step, log or
	// metric may see it there. Door.Token finds it in r's context.
	token, qerr := takeToken(r)
	door := &s.door
	if token == "" && qerr == nil && s.opts.SessionToken != nil && len(r.Header.Values("Authorization")) == 0 {
		if session := s.opts.SessionToken(r); session != "" {
			// The dashboard's page: its session, from its own origin.
			door, token = &s.sessionDoor, session
		}
	}
	r = r.WithContext(context.WithValue(r.Context(), takenKey{}, taken{token: token, err: qerr}))
	if !isUpgrade(r) {
		// The answer, 426 or an earlier refusal, names the protocol this
		// path serves.
		w.Header().Set("Upgrade", "websocket")
	}
	ad, ok := s.opts.Admit.Admit(w, r, door)
	if !ok {
		return
	}
	ad.Done() // the door counts no requests in flight: sockets count below
	p := ad.Principal
	u, over, ok := s.reserve(p.UserID)
	if !ok {
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.ShuttingDown, Detail: "the relay is shutting down", RetryAfter: 1})
		return
	}
	defer s.wg.Done()
	acceptOpts := &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled}
	if len(s.opts.OriginPatterns) > 0 {
		acceptOpts.OriginPatterns = s.opts.OriginPatterns
	} else {
		// The credential is the token sent with the upgrade, never a
		// cookie: a page of another origin has nothing to ride on.
		acceptOpts.InsecureSkipVerify = true
	}
	ws, err := websocket.Accept(w, r, acceptOpts)
	if err != nil {
		s.log.Debug("stream upgrade failed", zap.String("user", p.UserID), zap.Error(err))
		if u != nil {
			u.release(nil)
		}
		return
	}
	if over {
		s.log.Info("stream socket refused: too many sockets", zap.String("user", p.UserID), zap.Int("limit", s.opts.MaxSocketsPerUser))
		reason := "too many sockets for this user (limit " + strconv.Itoa(s.opts.MaxSocketsPerUser) + ")"
		closeQuickly(ws, websocket.StatusPolicyViolation, reason, s.opts.CloseGrace)
		if s.opts.Metrics != nil {
			s.opts.Metrics.StreamClosed(int(websocket.StatusPolicyViolation))
		}
		return
	}
	newSocket(s, u, ws, p, token, door).serve()
}

// reserve counts a socket against its user's limit. over reports a socket
// beyond the limit (u is nil then); ok is false when the Server is closed.
// A reserved socket holds s.wg until ServeHTTP returns.
func (s *Server) reserve(userID string) (u *user, over, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false, false
	}
	s.wg.Add(1)
	u = s.users[userID]
	if u != nil && u.count >= s.opts.MaxSocketsPerUser {
		return nil, true, true
	}
	if u == nil {
		u = newUser(s, userID)
		s.users[userID] = u
		s.wg.Add(1)
		go u.run()
	}
	u.count++
	return u, false, true
}

// takenKey keys the token ServeHTTP took from the request (a taken) in
// the request's context.
type takenKey struct{}

type taken struct {
	token string
	err   *httpapi.Error
}

// upgradeToken is Door.Token: it refuses a request that is no WebSocket
// upgrade (426 upgrade_required) or whose query string is not one token
// parameter (400 unknown_parameter), and returns the token ServeHTTP took
// (takeToken).
func upgradeToken(r *http.Request) (string, *httpapi.Error) {
	if !isUpgrade(r) {
		return "", &httpapi.Error{Status: http.StatusUpgradeRequired, Code: errcode.UpgradeRequired, Detail: "this path serves WebSocket upgrades only"}
	}
	t, _ := r.Context().Value(takenKey{}).(taken)
	if t.err != nil {
		return "", t.err
	}
	return t.token, nil
}

// sessionUpgradeToken is SessionDoor.Token: upgradeToken's refusals, then
// 403 origin_not_allowed unless the page that opens the socket is of the
// relay's own origin (SameOrigin), so that no other site's page rides on
// the cookie.
func sessionUpgradeToken(r *http.Request) (string, *httpapi.Error) {
	token, e := upgradeToken(r)
	if e != nil {
		return "", e
	}
	if !httpapi.SameOrigin(r) {
		return "", &httpapi.Error{Status: http.StatusForbidden, Code: errcode.OriginNotAllowed,
			Detail: "a dashboard session opens the stream only from the dashboard's own pages"}
	}
	return token, nil
}

// takeToken returns the request's API token, from the Authorization header
// or else the token query parameter, and removes the query string from r
// so that nothing downstream (logs, metrics, panics) can see a token in
// it. The only query parameter accepted is token, once.
func takeToken(r *http.Request) (string, *httpapi.Error) {
	raw := r.URL.RawQuery
	if raw != "" || r.URL.ForceQuery {
		u := *r.URL
		u.RawQuery, u.ForceQuery = "", false
		r.URL = &u
		r.RequestURI = u.RequestURI()
		r.Form, r.PostForm = nil, nil
	}
	var qtoken string
	var qerr *httpapi.Error
	if raw != "" {
		q, err := url.ParseQuery(raw)
		switch {
		case err != nil:
			qerr = &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.UnknownParameter, Detail: "the query string is malformed"}
		case len(q) != 1 || len(q["token"]) != 1:
			qerr = &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.UnknownParameter, Detail: "the only query parameter is token, sent once"}
		default:
			qtoken = strings.TrimSpace(q["token"][0])
		}
	}
	if _, sent := r.Header["Authorization"]; sent {
		// A request that sends the header is judged by it alone: a
		// malformed one is no token, whatever the query string says.
		t, _ := auth.BearerToken(r.Header)
		return t, qerr
	}
	return qtoken, qerr
}

// isUpgrade reports whether r asks for a WebSocket upgrade.
func isUpgrade(r *http.Request) bool {
	return headerHasToken(r.Header, "Connection", "upgrade") && headerHasToken(r.Header, "Upgrade", "websocket")
}

func headerHasToken(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
