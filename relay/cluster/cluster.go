// Package cluster connects relay nodes over NATS, so that any node reaches
// the agent a user connected to another one.
//
// Each node's hub holds the tunnels of the agents that connected to it. A
// Cluster wraps the node's hub (Local) and has the same Call, Connected
// and Info, so the trading API, the stream server, the Management API and
// the support route use it as they use a hub: a user whose agent this node
// holds is served by the local hub with no NATS at all; any other user's
// call is a NATS request on the user's subject, which the node holding the
// agent queue-subscribes to while it does. No node subscribed means the
// agent is connected nowhere: the call fails with agentcall.ErrNotConnected at
// once. The serving node sends heartbeats while the call runs, so a
// caller whose serving node died learns it within
// Options.HeartbeatTimeout (agentcall.ErrConnectionLost: the outcome is
// unknown); results larger than the server's max payload travel in parts;
// errors travel as codes and come back as the same values (the hub's
// sentinels, *protocol.Error, *httpapi.Error).
//
// When a node's hub registers a user's agent (HandleStatus), the node
// tells every other one. A node holding an older tunnel of that user ends
// it (hub.Hub.Evict): a newer agent connection anywhere replaces the older
// one. Every node publishes the statuses it hears on its event spine
// (Options.Events), as remote events, for its stream server.
//
// Market data crosses nodes only for the contracts some client asked for:
// every node's stream server sends protocol.FnSetSubscriptions with its
// own set, the holding node sends the agent the union and answers each
// node with its share, publishes the quotes of the contracts other nodes
// asked for, and those nodes subscribe to them and publish them on their
// spines (Options.Events).
//
// The activity log's entries cross every node: each entry a node's
// recorder stores (events.TypeRecorded, published on that node's spine)
// is published on SubjectActivity, and every other node publishes it on
// its own spine as a remote event, so that a stream socket on any node
// sees its user's entries (and the alerts of any node may take them).
//
// Route gives the broker family the same request machinery for its own
// services (broker.Router).
//
// The node-to-node messages are described by ProtocolVersion and the
// Subject, Header, Op and Kind constants.
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/events"
)

// Errors of the package. Calls also return the hub's errors and the
// serving node's (see Cluster.Call).
var (
	// ErrBusDown: the node is not connected to NATS, so it reaches no
	// other node; nothing was sent. It matches agentcall.ErrNotConnected
	// (errors.Is), so that the trading API answers 408.
	ErrBusDown = fmt.Errorf("cluster: the bus is unreachable: %w", agentcall.ErrNotConnected)
	// ErrProtocol: a node sent a message this node cannot read.
	ErrProtocol = errors.New("cluster: malformed message from another node")
	// ErrReplyTooLarge: a result exceeded Options.MaxReply.
	ErrReplyTooLarge = errors.New("cluster: reply too large")
)

// Local is the node's own hub; *hub.Hub implements it.
type Local interface {
	Call(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error)
	Connected(userID string) bool
	Info(userID string) (agentcall.Info, bool)
	// Evict ends the user's tunnel of that session if it is still the
	// live one, as replaced.
	Evict(userID, sessionID string) bool
}

// Options configure a Cluster.
type Options struct {
	// URL is the NATS server's ("nats://host:4222", several separated by
	// commas). Required unless Conn is set.
	URL string
	// Conn, when set, is used instead of dialing URL; the Cluster does
	// not close it. It should reconnect forever and buffer nothing while
	// reconnecting (nats.ReconnectBufSize(-1)), as the Cluster's own
	// connection does.
	Conn *nats.Conn
	// Node names this node among the relay's nodes. Required.
	Node string
	// Local is the node's hub. Required. The relay subscribes Handle to
	// the local hub's events and statuses on the event spine.
	Local Local
	// Prefix begins every subject. Default "tb".
	Prefix string
	// Logger receives the cluster's log lines, as "cluster".
	Logger *zap.Logger
	// Events, when set, is where the Cluster publishes, as remote
	// events (events.Event.Remote), what other nodes send this one: the
	// quotes their agents sent for the contracts this node subscribed to
	// (events.TypeAgent), and every status another node publishes
	// (events.TypeStatus: a user's agent connected there, or left it;
	// Connected reflects the news), and the activity entries their
	// activity logs stored (events.TypeRecorded).
	Events events.Publisher
	// DefaultTimeout is the deadline of a call whose context has none.
	// Default 30 s, the hub's.
	DefaultTimeout time.Duration
	// InfoTimeout bounds Connected and Info for a user held elsewhere.
	// Default 2 s.
	InfoTimeout time.Duration
	// HeartbeatInterval is how often a serving node tells the caller its
	// call still runs. Default 1 s.
	HeartbeatInterval time.Duration
	// HeartbeatTimeout is how long a caller waits without hearing from
	// the serving node before it gives the call up as
	// agentcall.ErrConnectionLost. Default 3 × HeartbeatInterval.
	HeartbeatTimeout time.Duration
	// MaxReply bounds a result the caller accepts. Default 64 MiB.
	MaxReply int
	// MaxPart bounds one part of a result; 0 means the server's max
	// payload less room for the headers.
	MaxPart int
	// ReconnectWait is the pause between reconnect attempts of the
	// Cluster's own connection. Default 1 s.
	ReconnectWait time.Duration
	// LogInterval: the bus being unreachable is logged at most once per
	// LogInterval. Default 30 s.
	LogInterval time.Duration
}

// Defaults of Options.
const (
	DefaultPrefix            = "tb"
	DefaultTimeout           = 30 * time.Second
	DefaultInfoTimeout       = 2 * time.Second
	DefaultHeartbeatInterval = time.Second
	DefaultMaxReply          = 64 << 20
	DefaultReconnectWait     = time.Second
	DefaultLogInterval       = 30 * time.Second
	// headerRoom is what a part leaves of the max payload for its headers.
	headerRoom = 4 << 10
	// chanSize is the depth of the channels the subscriptions deliver
	// into; a full channel drops messages (nats.go's slow consumer).
	chanSize = 1 << 16
)

// Cluster routes calls between relay nodes. Create it with New; it works
// from then until Close.
type Cluster struct {
	opts     Options
	log      *zap.Logger
	nc       *nats.Conn
	own      bool
	instance string
	subj     subjects
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	statusCh chan nats.Status
	downLog  sometimes

	// Requests to this node and quotes for it arrive on these channels
	// (one goroutine each reads them), from the subscriptions of targets.
	reqCh   chan *nats.Msg
	quoteCh chan *nats.Msg

	mu        sync.Mutex
	closed    bool
	statusSub *nats.Subscription
	activSub  *nats.Subscription
	held      map[string]*heldUser                     // users the local hub holds
	targets   map[string]*target                       // what each subject this node serves is for
	services  map[*target]bool                         // the Serves not stopped
	quoteIn   map[string]map[string]*nats.Subscription // user → contract → quotes this node receives

	outMu    sync.RWMutex
	quoteOut map[string]map[string]bool // user → contracts other nodes asked this holder for

	calls callMux
}

// heldUser is a user whose agent the local hub holds.
type heldUser struct {
	sub *nats.Subscription
	// subLock runs the user's subscription changes one at a time.
	subLock chan struct{}
	// sets and parts are the subscription sets each origin node sent and
	// the contracts of each one's share of the agent's answer (only for
	// origins other than this node); guarded by Cluster.mu.
	sets  map[string][]string
	parts map[string][]string
}

type targetKind int

const (
	targetAgent targetKind = iota
	targetService
	targetQuote
)

// target is what a subject this node subscribes to is for.
type target struct {
	kind targetKind
	user string
	sub  *nats.Subscription
	// h serves a routed service's calls.
	h Handler
}

// New connects to NATS (Options.URL) or takes Options.Conn and joins the
// cluster. A node whose bus is down when it starts still starts: it serves
// its own agents and retries the bus forever.
func New(opts Options) (*Cluster, error) {
	if opts.Node == "" {
		return nil, errors.New("cluster: Options.Node is required")
	}
	if opts.Local == nil {
		return nil, errors.New("cluster: Options.Local is required")
	}
	if opts.URL == "" && opts.Conn == nil {
		return nil, errors.New("cluster: Options.URL or Options.Conn is required")
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if !validPrefix(opts.Prefix) {
		return nil, fmt.Errorf("cluster: Options.Prefix %q is not a subject prefix (dot-separated tokens without wildcards or spaces)", opts.Prefix)
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.InfoTimeout <= 0 {
		opts.InfoTimeout = DefaultInfoTimeout
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if opts.HeartbeatTimeout <= 0 {
		opts.HeartbeatTimeout = 3 * opts.HeartbeatInterval
	}
	if opts.HeartbeatTimeout <= opts.HeartbeatInterval {
		return nil, errors.New("cluster: Options.HeartbeatTimeout must exceed HeartbeatInterval")
	}
	if opts.MaxReply <= 0 {
		opts.MaxReply = DefaultMaxReply
	}
	if opts.MaxPart < 0 {
		return nil, errors.New("cluster: Options.MaxPart must not be negative")
	}
	if opts.ReconnectWait <= 0 {
		opts.ReconnectWait = DefaultReconnectWait
	}
	if opts.LogInterval <= 0 {
		opts.LogInterval = DefaultLogInterval
	}
	log := opts.Logger.Named("cluster").With(zap.String("node", opts.Node))
	c := &Cluster{
		opts:     opts,
		log:      log,
		instance: nuid.Next(),
		subj:     subjects{prefix: opts.Prefix},
		downLog:  sometimes{every: opts.LogInterval},
		reqCh:    make(chan *nats.Msg, chanSize),
		quoteCh:  make(chan *nats.Msg, chanSize),
		held:     make(map[string]*heldUser),
		targets:  make(map[string]*target),
		services: make(map[*target]bool),
		quoteIn:  make(map[string]map[string]*nats.Subscription),
		quoteOut: make(map[string]map[string]bool),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	nc := opts.Conn
	if nc == nil {
		var err error
		nc, err = nats.Connect(opts.URL,
			nats.Name("tradebridge relay "+opts.Node),
			nats.MaxReconnects(-1),
			nats.ReconnectWait(opts.ReconnectWait),
			nats.RetryOnFailedConnect(true),
			nats.ReconnectBufSize(-1), // nothing waits for a bus that is down
			nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
				if c.downLog.ok("async") {
					c.log.Warn("bus error", zap.Error(err))
				}
			}),
		)
		if err != nil {
			c.cancel()
			return nil, fmt.Errorf("cluster: connecting to the bus: %w", err)
		}
		c.own = true
	}
	c.nc = nc
	c.statusCh = nc.StatusChanged(nats.CONNECTED, nats.RECONNECTING, nats.DISCONNECTED, nats.CLOSED)
	if err := c.calls.start(c); err != nil {
		c.abort()
		return nil, err
	}
	sub, err := nc.Subscribe(c.subj.status(), c.onStatus)
	if err != nil {
		c.abort()
		return nil, fmt.Errorf("cluster: subscribing to statuses: %w", err)
	}
	c.statusSub = sub
	if c.activSub, err = nc.Subscribe(c.subj.activity(), c.onActivity); err != nil {
		_ = sub.Unsubscribe()
		c.abort()
		return nil, fmt.Errorf("cluster: subscribing to activity: %w", err)
	}
	// Joined once the server has the subscriptions.
	c.flush()
	if nc.Status() != nats.CONNECTED {
		c.downLog.ok("down")
		c.log.Warn("the bus is unreachable; retrying", zap.String("status", nc.Status().String()))
	}
	c.wg.Add(3)
	go c.dispatchRequests()
	go c.dispatchQuotes()
	go c.watchBus()
	return c, nil
}

// abort undoes a New that failed half-way.
func (c *Cluster) abort() {
	c.cancel()
	c.calls.stop()
	c.nc.RemoveStatusListener(c.statusCh)
	if c.own {
		c.nc.Close()
	}
}

// Close leaves the cluster: it stops serving other nodes' requests, fails
// the calls this node is waiting on with agentcall.ErrConnectionLost, waits for
// its goroutines, and closes its own NATS connection. Close the local hub
// first, so that its calls end and its statuses reach the other nodes. It
// is idempotent.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.wg.Wait()
		return nil
	}
	c.closed = true
	subs := []*nats.Subscription{c.statusSub, c.activSub}
	for _, h := range c.held {
		subs = append(subs, h.sub)
	}
	for _, qs := range c.quoteIn {
		for _, s := range qs {
			subs = append(subs, s)
		}
	}
	for t := range c.services {
		subs = append(subs, t.sub)
	}
	c.targets = map[string]*target{}
	c.held = map[string]*heldUser{}
	c.quoteIn = map[string]map[string]*nats.Subscription{}
	c.services = map[*target]bool{}
	c.mu.Unlock()
	for _, s := range subs {
		_ = s.Unsubscribe()
	}
	c.outMu.Lock()
	c.quoteOut = map[string]map[string]bool{}
	c.outMu.Unlock()
	c.cancel()
	c.wg.Wait()
	c.calls.stop()
	c.nc.RemoveStatusListener(c.statusCh)
	if c.own {
		c.nc.Close()
	}
	return nil
}

// Call runs fn on userID's agent wherever it is connected: on the local
// hub when it holds the user, else on the node that does. Its errors are
// the hub's, wherever the call ran: agentcall.ErrNotConnected (connected
// nowhere, or the bus is down: ErrBusDown; nothing was sent),
// agentcall.ErrConnectionLost (the tunnel or the serving node went away during
// the call: the outcome is unknown), agentcall.ErrTimeout, agentcall.ErrClosed, and
// the agent's *protocol.Error; context.Canceled when ctx was.
//
// protocol.FnSetSubscriptions is the node's whole set of instruments for
// the user: the holding node merges it with the other nodes' sets (see
// the package documentation).
func (c *Cluster) Call(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
	if fn == protocol.FnSetSubscriptions {
		return c.setSubscriptions(ctx, userID, args)
	}
	res, err := c.opts.Local.Call(ctx, userID, fn, requestID, args)
	if !errors.Is(err, agentcall.ErrNotConnected) || userID == "" {
		return res, err
	}
	// Not held here (nothing was sent): ask the node that holds it.
	return c.request(ctx, c.subj.agent(userID), OpCall, fn, requestID, args)
}

// Connected reports whether userID's agent is connected to any node.
func (c *Cluster) Connected(userID string) bool {
	if c.opts.Local.Connected(userID) {
		return true
	}
	_, ok := c.remoteInfo(userID)
	return ok
}

// Info returns the handshake of userID's live tunnel, wherever it is.
func (c *Cluster) Info(userID string) (agentcall.Info, bool) {
	if info, ok := c.opts.Local.Info(userID); ok {
		return info, true
	}
	return c.remoteInfo(userID)
}

func (c *Cluster) remoteInfo(userID string) (agentcall.Info, bool) {
	if userID == "" {
		return agentcall.Info{}, false
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.InfoTimeout)
	defer cancel()
	res, err := c.request(ctx, c.subj.agent(userID), OpInfo, "", "", nil)
	if err != nil {
		if !errors.Is(err, agentcall.ErrNotConnected) {
			c.log.Debug("asking for an agent's tunnel failed", zap.String("user", userID), zap.Error(err))
		}
		return agentcall.Info{}, false
	}
	var m infoMsg
	if err := json.Unmarshal(res, &m); err != nil {
		c.log.Warn("malformed tunnel info from another node", zap.String("user", userID), zap.Error(err))
		return agentcall.Info{}, false
	}
	return m.info(), true
}

// HandleStatus takes a change of the local hub's tunnels
// (a status the hub published): while the hub holds userID the node serves the
// user's subject, and every change is published to the other nodes. It
// never waits for the network.
func (c *Cluster) HandleStatus(userID string, connected bool) {
	if connected {
		c.hold(userID)
	} else {
		c.release(userID)
	}
	c.publishStatus(userID, connected)
}

// hold starts serving userID's subject, once.
func (c *Cluster) hold(userID string) {
	c.mu.Lock()
	if c.closed || c.held[userID] != nil {
		c.mu.Unlock()
		return
	}
	subject := c.subj.agent(userID)
	sub, err := c.nc.ChanQueueSubscribe(subject, QueueGroup, c.reqCh)
	if err != nil {
		c.mu.Unlock()
		c.log.Error("serving a user's subject", zap.String("user", userID), zap.Error(err))
		return
	}
	c.held[userID] = &heldUser{sub: sub, subLock: make(chan struct{}, 1), sets: map[string][]string{}, parts: map[string][]string{}}
	c.targets[subject] = &target{kind: targetAgent, user: userID, sub: sub}
	// The local hub delivers the user's quotes from now on.
	drop := c.quoteIn[userID]
	delete(c.quoteIn, userID)
	for ct := range drop {
		delete(c.targets, c.subj.quote(userID, ct))
	}
	c.mu.Unlock()
	for _, s := range drop {
		_ = s.Unsubscribe()
	}
}

// release stops serving userID's subject and forgets the user's
// subscription sets: the stream servers send them again when the agent
// connects.
func (c *Cluster) release(userID string) {
	c.mu.Lock()
	h := c.held[userID]
	if h != nil {
		delete(c.held, userID)
		delete(c.targets, c.subj.agent(userID))
		c.outMu.Lock() // after mu, as everywhere
		delete(c.quoteOut, userID)
		c.outMu.Unlock()
	}
	c.mu.Unlock()
	if h != nil {
		// Requests that reach this node until the server knows are
		// answered agentcall.ErrNotConnected (dispatch), not dropped.
		_ = h.sub.Drain()
	}
}

// holds reports whether the local hub holds userID, as HandleStatus
// reported.
func (c *Cluster) holds(userID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[userID] != nil
}

// publishStatus tells the other nodes about userID's tunnel here.
func (c *Cluster) publishStatus(userID string, connected bool) {
	m := statusMsg{Version: ProtocolVersion, Node: c.opts.Node, Instance: c.instance, User: userID, Connected: connected}
	if connected {
		info, ok := c.opts.Local.Info(userID)
		if !ok {
			return // gone already; its false follows
		}
		m.Session, m.ConnectedAt = info.SessionID, info.ConnectedAt.UnixNano()
	}
	if c.isClosed() {
		return
	}
	if err := c.nc.Publish(c.subj.status(), mustJSON(m)); err != nil {
		// Sent again when the bus is back (watchBus).
		c.busDown("publishing a status", err)
	}
}

func (c *Cluster) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// onStatus takes another node's status: an older tunnel of the user here
// is replaced, and the status is published on Options.Events.
func (c *Cluster) onStatus(msg *nats.Msg) {
	var m statusMsg
	if err := json.Unmarshal(msg.Data, &m); err != nil || m.User == "" {
		c.log.Warn("malformed status from another node", zap.Error(err))
		return
	}
	if m.Instance == c.instance || m.Version != ProtocolVersion {
		return
	}
	if info, ok := c.opts.Local.Info(m.User); ok && m.Connected {
		if newer(m.ConnectedAt, m.Node, m.Session, info.ConnectedAt.UnixNano(), c.opts.Node, info.SessionID) {
			c.log.Info("a newer tunnel on another node replaces this one", zap.String("user", m.User),
				zap.String("session", info.SessionID), zap.String("otherNode", m.Node), zap.String("otherSession", m.Session))
			// Closing a tunnel may wait for the agent: not on this
			// goroutine.
			c.goTracked(func() { c.opts.Local.Evict(m.User, info.SessionID) })
		} else {
			// The sender registered an older tunnel after this one's
			// status went out: tell it again, so that it lets its go.
			c.publishStatus(m.User, true)
		}
	}
	if p := c.opts.Events; p != nil {
		p.Publish(events.Event{Type: events.TypeStatus, UserID: m.User, Connected: m.Connected, Remote: true})
	}
}

// publishActivity tells the other nodes about an entry this node's
// activity log stored.
func (c *Cluster) publishActivity(userID string, e protocol.ActivityEntry) {
	if c.isClosed() {
		return
	}
	m := activityMsg{Version: ProtocolVersion, Node: c.opts.Node, Instance: c.instance, User: userID, Entry: e}
	if err := c.nc.Publish(c.subj.activity(), mustJSON(m)); err != nil {
		// Lost for the sockets of other nodes; the log has it.
		c.busDown("publishing an activity entry", err)
	}
}

// onActivity takes another node's activity entry and publishes it on
// Options.Events as a remote TypeRecorded.
func (c *Cluster) onActivity(msg *nats.Msg) {
	var m activityMsg
	if err := json.Unmarshal(msg.Data, &m); err != nil || m.User == "" || m.Entry.ID == "" {
		if c.downLog.ok("activity") {
			c.log.Warn("malformed activity entry from another node")
		}
		return
	}
	if m.Instance == c.instance || m.Version != ProtocolVersion || c.opts.Events == nil {
		return
	}
	c.opts.Events.Publish(events.Event{Type: events.TypeRecorded, UserID: m.User, Activity: m.Entry, Remote: true})
}

// flush waits, at most InfoTimeout, until the server has what this node
// sent (its subscriptions), unless the bus is down (the subscriptions are
// sent again when it is back).
func (c *Cluster) flush() {
	if c.nc.Status() != nats.CONNECTED {
		return
	}
	if err := c.nc.FlushTimeout(c.opts.InfoTimeout); err != nil {
		c.log.Debug("the bus did not confirm in time", zap.Error(err))
	}
}

// goTracked runs f on a goroutine Close waits for, unless the Cluster is
// closed.
func (c *Cluster) goTracked(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// watchBus follows the connection: it logs losing the bus (at most once
// per LogInterval) and, when the bus is back, publishes the statuses of
// the users held here again, since other nodes may have missed them.
func (c *Cluster) watchBus() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case s, ok := <-c.statusCh:
			if !ok {
				return
			}
			switch s {
			case nats.CONNECTED:
				c.log.Info("connected to the bus")
				c.mu.Lock()
				users := make([]string, 0, len(c.held))
				for u := range c.held {
					users = append(users, u)
				}
				c.mu.Unlock()
				for _, u := range users {
					c.publishStatus(u, true)
				}
			case nats.RECONNECTING, nats.DISCONNECTED:
				c.busDown("the connection dropped", nil)
			}
		}
	}
}

// busDown logs that the bus is unreachable, at most once per
// LogInterval.
func (c *Cluster) busDown(what string, err error) {
	if c.downLog.ok("down") {
		c.log.Warn("the bus is unreachable: calls to agents on other nodes fail until it is back",
			zap.String("during", what), zap.Error(err))
	}
}

// dispatchRequests serves the requests of the subjects this node
// serves: a look-up at once, a call on a goroutine of its own.
func (c *Cluster) dispatchRequests() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case m := <-c.reqCh:
			c.dispatch(m)
		}
	}
}

// dispatchQuotes publishes the quotes other nodes publish for this node
// on Options.Events, unless the local hub now holds the user (it delivers
// them itself).
func (c *Cluster) dispatchQuotes() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			return
		case m := <-c.quoteCh:
			c.mu.Lock()
			t := c.targets[m.Subject]
			local := t != nil && c.held[t.user] != nil
			c.mu.Unlock()
			if t == nil || t.kind != targetQuote || local || c.opts.Events == nil {
				continue
			}
			seq, _ := parseUint(m.Header.Get(HeaderSeq))
			e := events.Agent(t.user, protocol.Event{Seq: seq, Kind: protocol.EventQuote, Data: m.Data})
			e.Remote = true
			c.opts.Events.Publish(e)
		}
	}
}

// sometimes allows an action at most once per interval, per key.
type sometimes struct {
	every time.Duration
	mu    sync.Mutex
	last  map[string]time.Time
}

func (s *sometimes) ok(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if t, seen := s.last[key]; seen && now.Sub(t) < s.every {
		return false
	}
	if s.last == nil {
		s.last = make(map[string]time.Time)
	}
	s.last[key] = now
	return true
}
