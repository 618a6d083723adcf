// Package hub holds the relay's live agent tunnels and routes calls to them.
//
// An agent dials GET /v1/agent/connect (see package protocol); Hub.ServeHTTP
// authenticates it before upgrading, runs the handshake, and keeps one
// tunnel per user: a newer connection of the same user replaces the older
// one. Call sends an RPC to the user's agent over a long-lived yamux stream
// with correlation ids, or over a stream of its own for large transfers, and
// returns as soon as the reply arrives, the caller gives up, or the tunnel
// drops.
//
// An agent is not trusted: it may open no stream besides its control
// stream, a frame it starts must arrive within Options.FrameTimeout, its
// events are read no faster than Options.EventBytesPerSecond, and a call
// never waits past its deadline for an agent that stops reading. Whatever
// an agent sends, its tunnel holds at most Options.TunnelMemoryBound bytes
// of the relay's memory.
//
// A new tunnel may be prepared before any other call reaches it
// (Options.Prepare: the relay pushes the user's stored configuration), and
// each tunnel remembers the configuration version its agent acknowledged
// (agentcall.Info.ConfigApplied).
//
// # History and diagnostics
//
// Options.Events learns the tunnels' history: a session's start (once
// its Welcome is written), its diagnostics (each EventDiagnostics, which
// Info also keeps for the live tunnel), its end with the reason (the
// Reason constants), and the handshakes refused before a session began.
package hub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/auth"
	"tradebridge/relay/budget"
	"tradebridge/relay/errcode"
	"tradebridge/relay/events"
	"tradebridge/relay/httpapi"
	"tradebridge/transport"
)

// Authenticator checks an agent token.
type Authenticator interface {
	Authenticate(ctx context.Context, token string, want auth.Kind) (auth.Principal, error)
}

// Door is the admission policy of GET /v1/agent/connect (see package
// admit): the client address's budget (Options.IPBudget, filled in by New),
// then an agent token; every plan may connect an agent, and the tunnel has
// no budgets of its own.
var Door = admit.Door{
	Name:               "tunnel",
	Kind:               auth.KindAgent,
	MissingTokenDetail: "an agent token is required",
	InvalidTokenDetail: "the agent token is missing, malformed or revoked",
}

// Metrics receives tunnel counts. All methods must be safe for concurrent use.
type Metrics interface {
	AgentConnected(delta int)
	TunnelConnect(reconnect bool)
}

// Options configure a Hub.
type Options struct {
	// Auth checks agent tokens. Required unless Admit is set.
	Auth Authenticator
	// Admit admits the connects (Door) and re-verifies the tunnels'
	// tokens; the relay passes the one Admitter of every door. Default: a
	// new Admitter of Auth.
	Admit  *admit.Admitter
	Logger *zap.Logger
	// Metrics may be nil.
	Metrics Metrics
	// HandshakeTimeout bounds the time from upgrade to a valid Hello.
	// Default 10 s.
	HandshakeTimeout time.Duration
	// DefaultTimeout is the deadline of a call whose context has none.
	// Default 30 s.
	DefaultTimeout time.Duration
	// Events, when set, is where the hub publishes (see package
	// relay/events), in the tunnels' goroutines:
	//   - every event agents send (events.TypeAgent), in order per user,
	//     but EventDiagnostics, which is a history entry;
	//   - the tunnels' history (events.TypeSession): for each session
	//     its start, then its diagnostics, then its end, in that order;
	//     and every refused handshake;
	//   - when a user's agent comes and goes (events.TypeStatus):
	//     connected is true each time a tunnel of the user registers
	//     (before its Welcome is sent, so Call reaches it from then on),
	//     and false when the user's live tunnel ends and none took its
	//     place. A tunnel replaced by a newer one of the same user reports
	//     no false: the user never stopped being connected. The newer
	//     tunnel reports true again, because the agent behind it may be a
	//     new process that holds none of the state sent to the old one
	//     (market-data subscriptions): a subscriber re-sends such state on
	//     every true. Statuses are published one at a time (for all
	//     users), in the order of the changes, with Connected already
	//     agreeing; their direct subscribers may call the Hub's methods.
	Events events.Publisher
	// ReverifyInterval is how often live tunnels' tokens are checked again,
	// so that a revoked agent token ends its tunnel. Default 30 s.
	ReverifyInterval time.Duration
	// IPBudget, when set, is the per-client-address budget, checked before
	// the agent token so that guessing tokens costs no look-ups: over it,
	// the connect answers 429 rate_limited (policy "ip") as the trading
	// API does.
	IPBudget *budget.Limiter
	// FrameTimeout bounds the time a frame from the agent takes to arrive
	// once its first byte has: a reply that starts and never finishes
	// ends the tunnel (CloseProtocolError). Between frames there is no
	// bound; keepalives notice a dead agent. Default 60 s, which lets the
	// largest frame (protocol.MaxFrameSize, 4 MiB) cross an uplink of
	// 0.56 Mbit/s; raise it for slower links.
	FrameTimeout time.Duration
	// MaxStreamCalls bounds the calls that run on a stream of their own
	// (GetBars) at once per tunnel; more wait their turn, and fail with
	// agentcall.ErrTimeout when their deadline passes first. A stream counts until
	// the agent has closed its end too. Default DefaultMaxStreamCalls.
	MaxStreamCalls int
	// DiagnosticsHistoryEvery is the least time between two of a
	// tunnel's diagnostics published as history entries: Info keeps the
	// latest, and the history the first of each such interval. Default
	// 10 s.
	DiagnosticsHistoryEvery time.Duration
	// EventsPerSecond bounds how many events a second the relay reads of
	// an agent, whatever their size; beyond it the relay reads more
	// slowly, as for EventBytesPerSecond. The burst is one second's
	// worth. Default DefaultEventsPerSecond, some four times an agent
	// that streams quotes of 250 instruments at 20 a second each.
	EventsPerSecond int
	// EventBytesPerSecond bounds how fast the relay reads an agent's
	// events: the payload bytes plus EventOverhead per event. Beyond it
	// the relay reads more slowly and the agent's writes wait (yamux flow
	// control); an agent is never closed for sending too much. The burst
	// is one second's worth. Default 8 MiB/s, some ten times an agent
	// that streams quotes of 250 instruments at 20 a second each; at
	// least the largest event (64 KiB) plus EventOverhead.
	EventBytesPerSecond int
	// Prepare, when set, runs on every new tunnel once its Welcome is
	// written, before any other call reaches the agent: the tunnel is
	// registered (Connected and Info see it, its status true is
	// published), but Call waits until Prepare returns or PrepareTimeout
	// passes, whichever comes first. call runs an RPC function on this
	// tunnel alone. The relay's Management API pushes the user's stored
	// configuration with it, so that a kill switch turned on while the
	// agent was offline is applied before the agent serves anything
	// else. Prepare runs on a goroutine of the tunnel and must return
	// once ctx ends (at PrepareTimeout, or when the hub closes).
	Prepare func(ctx context.Context, userID string, info agentcall.Info, call CallFunc)
	// PrepareTimeout bounds Prepare. Default DefaultPrepareTimeout.
	PrepareTimeout time.Duration
}

// CallFunc runs the RPC function fn with args on one tunnel's agent
// (Options.Prepare).
type CallFunc func(ctx context.Context, fn string, args json.RawMessage) (json.RawMessage, error)

// DefaultPrepareTimeout is Options.PrepareTimeout's default.
const DefaultPrepareTimeout = 5 * time.Second

// Defaults of Options.
const (
	DefaultMaxStreamCalls  = 4
	DefaultEventsPerSecond = 20_000
)

// EventOverhead is what each event costs against
// Options.EventBytesPerSecond besides its payload, so that a flood of tiny
// events is bounded too.
const EventOverhead = 256

// TunnelMemoryBound returns the most memory the relay holds for one
// tunnel of a Hub with these options, whatever its agent sends: the yamux
// receive buffers of the streams the relay opens or accepts (the control
// stream, the shared rpc stream and MaxStreamCalls streams of their own;
// yamux accepts at most StreamWindow unread bytes per stream, in a
// buffer that may be twice that), the frame readers of the rpc streams
// (the largest frame, and its decoded copy) and of the control stream (64
// KiB frames: the frame, the decoded event and the quote decoded from
// it), and the WebSocket's buffers (one message of at most MaxMessage
// being written). The agent cannot open streams of its own (the
// transport refuses them before yamux sees them). Replies handed to
// callers are the callers' memory, bounded by their budgets.
func (o Options) TunnelMemoryBound() int64 {
	k := int64(o.MaxStreamCalls)
	if k <= 0 {
		k = DefaultMaxStreamCalls
	}
	const (
		yamuxBuffer = 2 * transport.StreamWindow
		rpcReader   = readerBuffer + 2*protocol.MaxFrameSize
		ctlReader   = readerBuffer + 3*controlMaxFrame
		wire        = transport.MaxMessage + 64<<10 + 3*4<<10 // a message being written, the header buffer, bufio
	)
	return (2+k)*yamuxBuffer + (1+k)*rpcReader + ctlReader + wire
}

// Hub is the set of live agent tunnels. Create it with New.
type Hub struct {
	opts   Options
	log    *zap.Logger
	door   admit.Door
	ctx    context.Context
	cancel context.CancelFunc

	// statusMu orders the statuses published with the changes of conns they
	// report; it is taken before mu.
	statusMu sync.Mutex

	mu     sync.Mutex
	conns  map[string]*agentConn // by user id
	seen   map[string]bool       // users connected before, for the reconnect metric
	closed bool
	wg     sync.WaitGroup
}

// New returns a Hub.
func New(opts Options) (*Hub, error) {
	if opts.Auth == nil && opts.Admit == nil {
		return nil, errors.New("hub: Options.Auth or Options.Admit is required")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Admit == nil {
		a, err := admit.New(admit.Options{Auth: opts.Auth, Logger: opts.Logger})
		if err != nil {
			return nil, err
		}
		opts.Admit = a
	}
	if opts.HandshakeTimeout <= 0 {
		opts.HandshakeTimeout = 10 * time.Second
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = 30 * time.Second
	}
	if opts.ReverifyInterval <= 0 {
		opts.ReverifyInterval = 30 * time.Second
	}
	if opts.FrameTimeout <= 0 {
		opts.FrameTimeout = 60 * time.Second
	}
	if opts.MaxStreamCalls <= 0 {
		opts.MaxStreamCalls = DefaultMaxStreamCalls
	}
	if opts.DiagnosticsHistoryEvery <= 0 {
		opts.DiagnosticsHistoryEvery = 10 * time.Second
	}
	if opts.PrepareTimeout <= 0 {
		opts.PrepareTimeout = DefaultPrepareTimeout
	}
	if opts.EventsPerSecond <= 0 {
		opts.EventsPerSecond = DefaultEventsPerSecond
	}
	if opts.EventBytesPerSecond <= 0 {
		opts.EventBytesPerSecond = 8 << 20
	}
	if least := controlMaxFrame + EventOverhead; opts.EventBytesPerSecond < least {
		return nil, fmt.Errorf("hub: Options.EventBytesPerSecond must be at least %d, one second for the largest event", least)
	}
	ctx, cancel := context.WithCancel(context.Background())
	door := Door
	door.IP = opts.IPBudget
	h := &Hub{
		opts:   opts,
		log:    opts.Logger.Named("hub"),
		door:   door,
		ctx:    ctx,
		cancel: cancel,
		conns:  make(map[string]*agentConn),
		seen:   make(map[string]bool),
	}
	h.wg.Add(1)
	go h.reverifyLoop()
	return h, nil
}

// Close ends every tunnel with CloseShuttingDown and waits for their
// goroutines. It is idempotent.
func (h *Hub) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.wg.Wait()
		return nil
	}
	h.closed = true
	conns := make([]*agentConn, 0, len(h.conns))
	for _, c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	// closeParallel tunnels at a time: each close waits for its agent to
	// answer the WebSocket close, and thousands one after another would
	// hold the relay's restart, and the agents closed last, for seconds.
	next := make(chan *agentConn)
	var closing sync.WaitGroup
	for range min(closeParallel, len(conns)) {
		closing.Add(1)
		go func() {
			defer closing.Done()
			for c := range next {
				c.close(protocol.CloseShuttingDown, "relay shutting down")
			}
		}()
	}
	for _, c := range conns {
		next <- c
	}
	close(next)
	closing.Wait()
	h.cancel()
	h.wg.Wait()
	return nil
}

// closeParallel is how many tunnels Close closes at a time.
const closeParallel = 64

// Connected reports whether userID has a live tunnel.
func (h *Hub) Connected(userID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.conns[userID]
	return ok
}

// Info returns the handshake of userID's live tunnel.
func (h *Hub) Info(userID string) (agentcall.Info, bool) {
	h.mu.Lock()
	c, ok := h.conns[userID]
	h.mu.Unlock()
	if !ok {
		return agentcall.Info{}, false
	}
	return c.info(), true
}

// Call runs the RPC function fn with args on userID's agent and returns its
// result. requestID, when set, makes a write run at most once on the agent.
// A call to a tunnel that Options.Prepare still prepares waits for it.
// The request id agentcall.WithTrace put in ctx travels along as Request.Trace,
// and protocol.CallOptions in ctx as Request.BypassWindows.
// Errors: agentcall.ErrNotConnected, agentcall.ErrConnectionLost, agentcall.ErrTimeout, agentcall.ErrClosed, or the
// agent's *protocol.Error.
func (h *Hub) Call(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
	h.mu.Lock()
	c := h.conns[userID]
	h.mu.Unlock()
	if c == nil {
		return nil, agentcall.ErrNotConnected
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.opts.DefaultTimeout)
		defer cancel()
	}
	select {
	case <-c.ready:
	default:
		select {
		case <-c.ready:
		case <-c.done:
			return nil, agentcall.ErrNotConnected // nothing was sent
		case <-ctx.Done():
			return nil, ctxError(ctx)
		}
	}
	req := protocol.Request{Fn: fn, RequestID: requestID, Args: args, Trace: agentcall.TraceFrom(ctx),
		BypassWindows: protocol.CallOptionsOf(ctx).BypassWindows}
	return c.call(ctx, req)
}

// Evict ends userID's tunnel of session sessionID with
// protocol.CloseReplaced, if it is still the user's live tunnel, and
// reports whether it was. A relay node calls it when a newer tunnel of the
// same user registered on another node (package relay/cluster): the
// history records the session's end as agentcall.ReasonReplaced, and a status
// false is published once the tunnel is gone, unless a newer one registered
// here in the meantime.
func (h *Hub) Evict(userID, sessionID string) bool {
	h.mu.Lock()
	c := h.conns[userID]
	h.mu.Unlock()
	if c == nil || c.sessionID != sessionID {
		return false
	}
	c.log.Info("tunnel replaced by a newer connection on another relay node")
	c.closeAs(agentcall.ReasonReplaced, protocol.CloseReplaced, "replaced by a newer connection on another relay node")
	return true
}

// dedicatedStream reports whether fn's replies may be large enough to hold
// up other calls on a shared stream.
func dedicatedStream(fn string) bool { return fn == protocol.FnGetBars }

// register makes c the user's tunnel, replacing an older one.
func (h *Hub) register(c *agentConn) error {
	h.statusMu.Lock()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.statusMu.Unlock()
		return agentcall.ErrClosed
	}
	old := h.conns[c.userID]
	h.conns[c.userID] = c
	reconnect := h.seen[c.userID]
	h.seen[c.userID] = true
	h.mu.Unlock()
	h.publish(events.Status(c.userID, true))
	h.statusMu.Unlock()
	if old != nil {
		old.log.Info("tunnel replaced by a newer connection", zap.String("newSession", c.sessionID))
		old.close(protocol.CloseReplaced, "replaced by a newer connection")
	} else if h.opts.Metrics != nil {
		h.opts.Metrics.AgentConnected(1)
	}
	if h.opts.Metrics != nil {
		h.opts.Metrics.TunnelConnect(reconnect)
	}
	return nil
}

func (h *Hub) unregister(c *agentConn) {
	h.statusMu.Lock()
	h.mu.Lock()
	removed := h.conns[c.userID] == c
	if removed {
		delete(h.conns, c.userID)
	}
	h.mu.Unlock()
	if removed {
		h.publish(events.Status(c.userID, false))
	}
	h.statusMu.Unlock()
	if removed && h.opts.Metrics != nil {
		h.opts.Metrics.AgentConnected(-1)
	}
}

// reverifyLoop ends tunnels whose agent token was revoked.
func (h *Hub) reverifyLoop() {
	defer h.wg.Done()
	t := time.NewTicker(h.opts.ReverifyInterval)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		conns := make([]*agentConn, 0, len(h.conns))
		for _, c := range h.conns {
			conns = append(conns, c)
		}
		h.mu.Unlock()
		for _, c := range conns {
			ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
			_, e := h.opts.Admit.Verify(ctx, &h.door, c.token)
			cancel()
			// A token the store could not check (503) keeps its tunnel.
			if e != nil && e.Status != http.StatusServiceUnavailable {
				c.log.Info("agent token no longer valid; closing tunnel")
				c.close(protocol.CloseRevoked, "agent token revoked")
			}
		}
	}
}

// ServeHTTP handles GET /v1/agent/connect. It admits the connect (Door:
// the client address's budget, 429; the agent token, 401 or 503), checks
// the subprotocol (400), and then upgrades.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ad, ok := h.opts.Admit.Admit(w, r, &h.door)
	if !ok {
		return
	}
	ad.Done() // the door counts no connects in flight: a user has one tunnel
	p := ad.Principal
	token, _ := auth.BearerToken(r.Header) // kept to re-verify the tunnel
	version, offered := negotiate(r)
	if version == 0 {
		detail := "the agent must offer WebSocket subprotocol " + protocol.Subprotocol(protocol.ProtocolVersion)
		if offered {
			detail = fmt.Sprintf("this relay speaks tunnel protocol versions %d to %d; upgrade the agent", protocol.MinProtocolVersion, protocol.ProtocolVersion)
		}
		httpapi.WriteError(w, http.StatusBadRequest, httpapi.Error{Code: errcode.ProtocolVersionUnsupported, Detail: detail})
		h.report(agentcall.SessionEvent{Kind: agentcall.SessionRefused, UserID: p.UserID, At: time.Now(), Reason: agentcall.ReasonVersionUnsupported,
			ProtocolVersion: highestOffered(r), RemoteAddr: httpapi.ClientAddr(r)})
		return
	}
	h.mu.Lock()
	closed := h.closed
	if !closed {
		h.wg.Add(1)
	}
	h.mu.Unlock()
	if closed {
		httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.ShuttingDown, Detail: "the relay is shutting down", RetryAfter: 1})
		return
	}
	ws, err := transport.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols:       []string{protocol.Subprotocol(version)},
		CompressionMode:    websocket.CompressionDisabled,
		InsecureSkipVerify: true, // agents are not browsers; the token is the credential
	})
	if err != nil {
		h.wg.Done()
		h.log.Debug("websocket upgrade failed", zap.Error(err))
		return
	}
	// The tunnel runs on a goroutine of its own and the handler returns:
	// the handler's stack grew through the request, the token check and
	// the upgrade, and an idle tunnel would hold it for its life.
	remote := httpapi.ClientAddr(r)
	go func() {
		defer h.wg.Done()
		h.serveTunnel(ws, p, token, version, remote)
	}()
}

// highestOffered returns the highest protocol version a connect offered,
// 0 when it offered none of ours.
func highestOffered(r *http.Request) int {
	best := 0
	for _, s := range websocketSubprotocols(r) {
		if v, ok := protocol.ParseSubprotocol(s); ok && v > best {
			best = v
		}
	}
	return best
}

// negotiate returns the highest protocol version both sides speak (0 when
// none) and whether the client offered any of ours.
func negotiate(r *http.Request) (int, bool) {
	best, offered := 0, false
	for _, s := range websocketSubprotocols(r) {
		v, ok := protocol.ParseSubprotocol(s)
		if !ok {
			continue
		}
		offered = true
		if v >= protocol.MinProtocolVersion && v <= protocol.ProtocolVersion && v > best {
			best = v
		}
	}
	return best, offered
}

func websocketSubprotocols(r *http.Request) []string {
	var out []string
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		out = append(out, splitComma(h)...)
	}
	return out
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			part := s[start:i]
			for len(part) > 0 && (part[0] == ' ' || part[0] == '\t') {
				part = part[1:]
			}
			for len(part) > 0 && (part[len(part)-1] == ' ' || part[len(part)-1] == '\t') {
				part = part[:len(part)-1]
			}
			if part != "" {
				out = append(out, part)
			}
			start = i + 1
		}
	}
	return out
}

func newSessionID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "tun_" + hex.EncodeToString(b[:])
}
