package ntfake

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/ninjatrader/ntwire"
	"tradebridge/trading/bridge/sim"
)

// Defaults of Options.
const (
	DefaultAddonVersion    = "1.0.0"
	DefaultPlatformVersion = "8.1.4.1"
	// DefaultRequestTimeout bounds a request whose timeoutMs is absent.
	DefaultRequestTimeout = 30 * time.Second
)

// refuseWriteTimeout bounds the write of a refusal to a connection that is
// about to be closed.
const refuseWriteTimeout = time.Second

// ErrClosed is returned by the methods of a closed Server that cannot do
// their work.
var ErrClosed = errors.New("ntfake: server closed")

// ErrUnknownConnection is returned by SetConnectionStatus for a connection
// the simulator does not have.
var ErrUnknownConnection = errors.New("ntfake: no such connection")

// Options configure a Server. Market and Dir are required; the rest has
// defaults.
type Options struct {
	// Market is the simulator the fake add-on trades on.
	Market *sim.Platform
	// Dir is the folder of the discovery file (ntwire.DiscoveryFileName);
	// it is created when missing.
	Dir string
	// Secret is the first session's secret; empty means a random one.
	// Restart and Resume always make a new random secret.
	Secret string
	// Version is the highest protocol version the fake speaks; 0 means
	// ntwire.Version. It speaks every version from 1 to Version.
	Version int
	// Logger receives the fake's logs; nil discards them.
	Logger *zap.Logger
	// PlatformVersion and AddonVersion are sent in the welcome;
	// AddonVersion also goes into the discovery file. Empty means
	// DefaultPlatformVersion and DefaultAddonVersion.
	PlatformVersion, AddonVersion string
	// HelloTimeout, PingAfter and DeadAfter are the protocol's timings;
	// 0 means ntwire's (HelloTimeout, PingAfter, DeadAfter). Tests shorten
	// them.
	HelloTimeout, PingAfter, DeadAfter time.Duration
	// RequestTimeout bounds a request that carries no timeoutMs; 0 means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// UserDataDir goes into the discovery file as NinjaTrader's user
	// folder; empty means none.
	UserDataDir string
}

// withDefaults validates o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Market == nil:
		return o, errors.New("ntfake: Options.Market is required")
	case o.Dir == "":
		return o, errors.New("ntfake: Options.Dir is required")
	case o.Version < 0:
		return o, errors.New("ntfake: Options.Version must not be negative")
	case o.HelloTimeout < 0 || o.PingAfter < 0 || o.DeadAfter < 0 || o.RequestTimeout < 0:
		return o, errors.New("ntfake: timings must not be negative")
	}
	if o.Version == 0 {
		o.Version = ntwire.Version
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.PlatformVersion == "" {
		o.PlatformVersion = DefaultPlatformVersion
	}
	if o.AddonVersion == "" {
		o.AddonVersion = DefaultAddonVersion
	}
	if o.HelloTimeout == 0 {
		o.HelloTimeout = ntwire.HelloTimeout
	}
	if o.PingAfter == 0 {
		o.PingAfter = ntwire.PingAfter
	}
	if o.DeadAfter == 0 {
		o.DeadAfter = ntwire.DeadAfter
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	return o, nil
}

// Server is a fake NinjaTrader add-on over a simulator. Its methods are
// safe for concurrent use.
//
// One goroutine, the loop, owns the simulator's event stream, the session's
// event numbering, the agent's connection and everything written to it;
// it also answers requests, one at a time. An accept goroutine per
// listening port and a goroutine per connection (handshake, then reading)
// feed it. Close waits for all of them.
type Server struct {
	opts   Options
	log    *zap.Logger
	market *sim.Platform

	ctx    context.Context // ends at Close
	cancel context.CancelFunc

	cmds     chan func() // run by the loop
	attachc  chan attachRequest
	inbound  chan inboundMessage
	gone     chan uint64 // a connection's reader stopped
	loopDone chan struct{}
	wg       sync.WaitGroup

	life sync.Mutex // serializes Restart, Stop, Resume and Close

	mu            sync.Mutex
	closed        bool
	stopped       bool // not listening (Stop, or a failed Resume)
	ln            net.Listener
	addr          string
	secret        string
	sessionID     string
	discoveryPath string
	pending       map[net.Conn]struct{} // accepted, not attached to the loop

	lastSeq  atomic.Uint64
	accepted atomic.Int64

	ls loopState // owned by the loop
}

// loopState is what the loop goroutine owns.
type loopState struct {
	events  <-chan bridge.Event // nil once the stream ended
	held    bool                // events are not read (tests provoke a loss)
	running bool                // a session is open (between start and stop)
	seq     uint64

	conn      net.Conn // the agent's connection, nil when none
	w         *ntwire.Writer
	gen       uint64 // counts attached connections
	lastWrite time.Time
	pingID    uint64

	// status holds the connections whose status SetConnectionStatus set
	// to something other than the simulator's; down the accounts of
	// connections that are not Connected.
	status map[string]string
	down   map[string]bool
	// marked is each position as last sent, to send it again when its
	// market price moves.
	marked map[string]protocol.Position
}

type attachRequest struct {
	conn    net.Conn
	w       *ntwire.Writer
	version int
	reply   chan attachResult
}

type attachResult struct {
	gen uint64
	// refused is a refusal code (busy), or "-" when no session is open.
	refused string
}

type inboundMessage struct {
	gen uint64
	msg ntwire.Message
}

// Start starts a fake add-on: it listens on 127.0.0.1 on a free port and
// writes the discovery file (under a temporary name, renamed into place,
// mode 0600).
func Start(opts Options) (*Server, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{
		opts:     opts,
		log:      opts.Logger,
		market:   opts.Market,
		cmds:     make(chan func()),
		attachc:  make(chan attachRequest),
		inbound:  make(chan inboundMessage),
		gone:     make(chan uint64),
		loopDone: make(chan struct{}),
		pending:  make(map[net.Conn]struct{}),
		stopped:  true,
		ls: loopState{
			status: make(map[string]string),
			down:   make(map[string]bool),
			marked: make(map[string]protocol.Position),
		},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.ls.events = opts.Market.Events(s.ctx)
	s.wg.Add(1)
	go s.loop()
	secret := opts.Secret
	if secret == "" {
		secret = newSecret()
	}
	s.life.Lock()
	defer s.life.Unlock()
	if err := s.resume(secret); err != nil {
		s.cancel()
		s.wg.Wait()
		return nil, err
	}
	return s, nil
}

// Close stops the add-on: a connected agent gets bye addon_stopping, the
// discovery file is removed, and Close returns once every goroutine of the
// server has ended. It is idempotent.
func (s *Server) Close() error {
	s.life.Lock()
	defer s.life.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	stopped := s.stopped
	s.mu.Unlock()
	if !stopped {
		s.stop(ntwire.ByeAddonStopping)
	}
	s.cancel()
	s.wg.Wait()
	s.log.Info("fake add-on closed")
	return nil
}

// Addr returns the address the fake listens on ("127.0.0.1:port"), or
// the last one while it is stopped.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Secret returns the current session's secret.
func (s *Server) Secret() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.secret
}

// SessionID returns the current session's id.
func (s *Server) SessionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionID
}

// DiscoveryPath returns the path of the discovery file (which is absent
// while the fake is stopped or closed).
func (s *Server) DiscoveryPath() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.discoveryPath
}

// LastSeq returns the seq of the current session's last event: sent to the
// agent, dropped while no agent was connected, or skipped after a loss.
func (s *Server) LastSeq() uint64 { return s.lastSeq.Load() }

// Connections returns how many agent connections the fake has welcomed
// since it started.
func (s *Server) Connections() int { return int(s.accepted.Load()) }

// Flush forwards every event the simulator has published so far before it
// returns (numbered, and sent when an agent is connected).
func (s *Server) Flush() { s.do(s.drain) }

// Drop closes the agent's connection abruptly, without a bye. The session
// goes on: an agent that reconnects sees the same session id.
func (s *Server) Drop() { s.do(s.closeConn) }

// Restart restarts NinjaTrader: the agent gets bye platform_closing and is
// disconnected, then a new session starts with a new id, seq from 0, a new
// port and a new secret, and the discovery file is written again. The
// simulator's state (orders, positions) carries over, as a broker's does.
// On a stopped server Restart is Resume.
func (s *Server) Restart() error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.isClosed() {
		return ErrClosed
	}
	if !s.isStopped() {
		s.stop(ntwire.ByePlatformClosing)
	}
	return s.resume(newSecret())
}

// Stop closes NinjaTrader: the agent gets bye platform_closing and is
// disconnected, the fake stops listening and removes the discovery file.
// Resume starts it again. Stop on a stopped or closed server does nothing.
func (s *Server) Stop() {
	s.life.Lock()
	defer s.life.Unlock()
	if s.isClosed() || s.isStopped() {
		return
	}
	s.stop(ntwire.ByePlatformClosing)
}

// Resume starts a stopped fake again, as a new NinjaTrader session (see
// Restart). On a running server it does nothing.
func (s *Server) Resume() error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.isClosed() {
		return ErrClosed
	}
	if !s.isStopped() {
		return nil
	}
	return s.resume(newSecret())
}

// SetConnectionStatus sets the status of one of the simulator's
// connections as NinjaTrader would report it ("Connected",
// "ConnectionLost", "Disconnected", …). A connection event and an account
// event per account of the connection are sent; until the status is
// Connected again, order methods on its accounts answer not_connected.
func (s *Server) SetConnectionStatus(name, status string) error {
	var err error
	if !s.do(func() { err = s.setConnectionStatus(name, status) }) {
		return ErrClosed
	}
	return err
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Server) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// resume opens a session: a new listener, a new session in the loop, the
// discovery file and an accept goroutine. s.life is held.
func (s *Server) resume(secret string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("ntfake: listen: %w", err)
	}
	sid := newSessionID()
	if !s.do(func() { s.startSession(sid) }) {
		_ = ln.Close()
		return ErrClosed
	}
	s.mu.Lock()
	s.ln, s.addr, s.secret, s.sessionID, s.stopped = ln, ln.Addr().String(), secret, sid, false
	s.mu.Unlock()
	path, err := writeDiscovery(s.opts.Dir, ntwire.Discovery{
		Version:      s.opts.Version,
		Port:         ln.Addr().(*net.TCPAddr).Port,
		Secret:       secret,
		PID:          os.Getpid(),
		AddonVersion: s.opts.AddonVersion,
		StartedAt:    time.Now().UTC().Format(time.RFC3339),
		UserDataDir:  s.opts.UserDataDir,
	})
	if err != nil {
		s.stop(ntwire.ByePlatformClosing)
		return err
	}
	s.mu.Lock()
	s.discoveryPath = path
	s.mu.Unlock()
	s.wg.Add(1)
	go s.accept(ln)
	s.log.Info("fake add-on listening", zap.String("addr", ln.Addr().String()), zap.String("session", sid))
	return nil
}

// stop closes the session: no more connections, the agent gets bye reason
// and is disconnected, the discovery file is removed. s.life is held.
func (s *Server) stop(reason string) {
	s.mu.Lock()
	ln := s.ln
	s.ln, s.stopped = nil, true
	pending := make([]net.Conn, 0, len(s.pending))
	for c := range s.pending {
		pending = append(pending, c)
	}
	path := s.discoveryPath
	s.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	for _, c := range pending {
		_ = c.Close()
	}
	s.do(func() { s.endSession(reason) })
	if path != "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("cannot remove the discovery file", zap.Error(err))
		}
	}
}

// do runs f in the loop and waits for it; false when the loop has ended.
func (s *Server) do(f func()) bool {
	done := make(chan struct{})
	select {
	case s.cmds <- func() { f(); close(done) }:
	case <-s.loopDone:
		return false
	}
	<-done
	return true
}

// accept accepts connections on ln until it is closed.
func (s *Server) accept(ln net.Listener) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Warn("accept failed", zap.Error(err))
			}
			return
		}
		s.mu.Lock()
		ok := !s.closed && s.ln == ln
		if ok {
			s.pending[c] = struct{}{}
		}
		s.mu.Unlock()
		if !ok {
			_ = c.Close()
			continue
		}
		s.wg.Add(1)
		go s.serveConn(c)
	}
}

// serveConn runs one connection: the handshake, then reading the agent's
// messages for the loop until the connection ends.
func (s *Server) serveConn(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.pending, c)
		s.mu.Unlock()
	}()
	defer c.Close()
	r := ntwire.NewReader(c)
	w := ntwire.NewWriter(c)
	refuse := func(code, text string) {
		_ = c.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
		_ = w.Write(ntwire.Message{Type: ntwire.TypeRefused, Code: code, Text: text})
		s.log.Info("agent refused", zap.String("code", code))
	}

	_ = c.SetReadDeadline(time.Now().Add(s.opts.HelloTimeout))
	hello, err := r.Read()
	switch {
	case errors.Is(err, ntwire.ErrMalformed):
		refuse(ntwire.RefusedBadHello, "the first message must be a hello")
		return
	case err != nil:
		return // silent, gone, or a line too long
	case hello.Type != ntwire.TypeHello:
		refuse(ntwire.RefusedBadHello, "the first message must be a hello")
		return
	case !s.secretMatches(hello.Secret):
		refuse(ntwire.RefusedBadSecret, "the secret does not match the add-on's")
		return
	case hello.ProtocolVersion < 1:
		refuse(ntwire.RefusedVersionUnsupported, fmt.Sprintf("the add-on speaks protocol versions 1 to %d", s.opts.Version))
		return
	}
	reply := make(chan attachResult, 1)
	select {
	case s.attachc <- attachRequest{conn: c, w: w, version: min(hello.ProtocolVersion, s.opts.Version), reply: reply}:
	case <-s.loopDone:
		return
	}
	res := <-reply
	switch res.refused {
	case "":
	case ntwire.RefusedBusy:
		refuse(ntwire.RefusedBusy, "another agent is connected")
		return
	default:
		return
	}

	for {
		_ = c.SetReadDeadline(time.Now().Add(s.opts.DeadAfter))
		m, err := r.Read()
		if errors.Is(err, ntwire.ErrMalformed) {
			s.log.Warn("agent sent a malformed line")
			continue
		}
		if err != nil {
			select {
			case s.gone <- res.gen:
			case <-s.loopDone:
			}
			return
		}
		select {
		case s.inbound <- inboundMessage{gen: res.gen, msg: m}:
		case <-s.loopDone:
			return
		}
	}
}

// secretMatches compares a hello's secret with the session's in constant
// time (the hashes hide the length too).
func (s *Server) secretMatches(got string) bool {
	s.mu.Lock()
	want := s.secret
	s.mu.Unlock()
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// writeDiscovery writes the discovery file into dir under a temporary name
// and renames it into place, mode 0600; it returns its path.
func writeDiscovery(dir string, d ntwire.Discovery) (string, error) {
	b, err := ntwire.Encode(d)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("ntfake: discovery folder: %w", err)
	}
	f, err := os.CreateTemp(dir, ".ninjatrader-addon-*.tmp")
	if err != nil {
		return "", fmt.Errorf("ntfake: discovery file: %w", err)
	}
	tmp := f.Name()
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(b)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	path := filepath.Join(dir, ntwire.DiscoveryFileName)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("ntfake: discovery file: %w", err)
	}
	return path, nil
}

// newSecret returns 32 random bytes in unpadded base64url.
func newSecret() string {
	return base64.RawURLEncoding.EncodeToString(random(32))
}

// newSessionID returns 16 random hex characters.
func newSessionID() string { return hex.EncodeToString(random(8)) }

func random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return b
}
