package ninjatrader

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/internal/lifecycle"
	"tradebridge/trading/bridge"
	"tradebridge/trading/bridge/ninjatrader/ntwire"
)

// The protocol's ping rule, overridable in Options for tests.
const (
	pingAfter = ntwire.PingAfter
	deadAfter = ntwire.DeadAfter
)

const (
	// writeTimeout bounds one line's write: the add-on reads all the time,
	// so a write that cannot finish means it is stuck.
	writeTimeout = 5 * time.Second
	// tick is how often a session checks pings, silence and gaps.
	tick = 50 * time.Millisecond
	// maxHeld bounds the events a session holds while it waits for a
	// snapshot or a missing event; an add-on that sends more is broken.
	maxHeld = 1 << 16
)

// runSession dials the add-on once and serves the connection until it
// ends. It reports whether the session became ready (took a snapshot),
// so that Run restarts its backoff.
func (p *Platform) runSession(ctx context.Context) bool {
	d, err := p.readDiscovery()
	if err != nil {
		p.setUnavailable(p.discoveryReason(err))
		return false
	}
	dialer := net.Dialer{Timeout: p.opts.DialTimeout}
	conn, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(d.Port)))
	if err != nil {
		// The discovery file is there but nobody listens: NinjaTrader
		// closed without removing it.
		p.setUnavailable(unavailable(ReasonClosed))
		return false
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	r := ntwire.NewReader(conn)
	w := ntwire.NewWriter(deadlineWriter{conn})
	welcome, err := p.handshake(conn, r, w, d.Secret)
	if err != nil {
		var why *bridge.UnavailableError
		if !errors.As(err, &why) {
			why = unavailable(ReasonConnectionLost)
		}
		p.log.Warn("ninjatrader: handshake failed", zap.String("why", why.Code), zap.Error(err))
		p.setUnavailable(why)
		return false
	}
	s := newSession(p, conn, w, welcome)
	return s.run(ctx, r)
}

// discoveryReason says why the discovery file gave no address.
func (p *Platform) discoveryReason(err error) *bridge.UnavailableError {
	var several *SeveralTradersError
	switch {
	case errors.Is(err, ErrNoListener):
		return unavailable(ReasonClosed)
	case errors.Is(err, errPortOwner):
		p.log.Warn("ninjatrader: not connecting to the add-on's port", zap.Error(err))
		return unavailable(ReasonPortOwner)
	case errors.Is(err, errDiscoveryOwner):
		p.log.Warn("ninjatrader: not trusting the discovery file", zap.Error(err))
		return unavailable(ReasonDiscoveryUntrusted)
	case errors.As(err, &several):
		p.log.Warn("ninjatrader: not choosing a trader", zap.Error(err))
		return &bridge.UnavailableError{Code: ReasonSeveralTraders, Reason: several.Error()}
	case !errors.Is(err, errNoDiscovery):
		p.log.Warn("ninjatrader: discovery file unusable", zap.Error(err))
		return unavailable(ReasonDiscoveryInvalid)
	}
	if installed, known := p.addonInstalled(); known && !installed {
		return unavailable(ReasonNotInstalled)
	}
	return unavailable(ReasonNotRunning)
}

// handshake says hello and reads the add-on's answer.
func (p *Platform) handshake(conn net.Conn, r *ntwire.Reader, w *ntwire.Writer, secret string) (ntwire.Message, error) {
	_ = conn.SetReadDeadline(time.Now().Add(ntwire.HelloTimeout))
	defer conn.SetReadDeadline(time.Time{})
	if err := w.Write(ntwire.Message{Type: ntwire.TypeHello, ProtocolVersion: ntwire.Version,
		Secret: secret, Client: p.opts.Client}); err != nil {
		return ntwire.Message{}, wrapf(err, "ninjatrader: send hello")
	}
	m, err := r.Read()
	if err != nil {
		return ntwire.Message{}, wrapf(err, "ninjatrader: read welcome")
	}
	switch m.Type {
	case ntwire.TypeWelcome:
		if m.ProtocolVersion < 1 || m.ProtocolVersion > ntwire.Version || !ntwire.ValidSessionID(m.SessionID) {
			return m, unavailable(ReasonProtocol)
		}
		return m, nil
	case ntwire.TypeRefused:
		switch m.Code {
		case ntwire.RefusedBadSecret:
			return m, unavailable(ReasonWrongSecret)
		case ntwire.RefusedVersionUnsupported:
			return m, unavailable(ReasonVersion)
		case ntwire.RefusedBusy:
			return m, unavailable(ReasonBusy)
		}
	}
	return m, unavailable(ReasonProtocol)
}

// deadlineWriter bounds each write to the add-on. ntwire.Writer writes a
// line in one call under its lock, so the deadline covers the whole line.
type deadlineWriter struct{ conn net.Conn }

func (d deadlineWriter) Write(b []byte) (int, error) {
	_ = d.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	return d.conn.Write(b)
}

// session is one connection to the add-on after its welcome.
type session struct {
	p    *Platform
	conn net.Conn
	w    *ntwire.Writer
	id   string
	log  *zap.Logger

	mu         sync.Mutex
	nextID     uint64
	pending    map[uint64]chan ntwire.Message
	snapshotID uint64 // the snapshot request in flight, 0 when none
	synced     bool   // events are applied in order (a snapshot is in)
	ready      bool   // the first snapshot is in
	next       uint64 // the next event seq to apply
	held       map[uint64]ntwire.Message
	gapSince   time.Time
	lastRecv   time.Time
	lastSent   time.Time
	bye        string
	broken     bool // the add-on broke the protocol

	life lifecycle.Group // the read loop; stopped when the connection ends
}

func newSession(p *Platform, conn net.Conn, w *ntwire.Writer, welcome ntwire.Message) *session {
	now := time.Now()
	p.mu.Lock()
	if p.sessionID != "" && p.sessionID != welcome.SessionID {
		p.log.Info("ninjatrader: the add-on's session changed (NinjaTrader restarted); resynchronizing")
	}
	p.sessionID, p.addonVer, p.platformVer = welcome.SessionID, welcome.AddonVersion, welcome.PlatformVersion
	p.mu.Unlock()
	return &session{
		p: p, conn: conn, w: w, id: welcome.SessionID,
		log:     p.log.With(zap.String("addonSession", welcome.SessionID)),
		pending: make(map[uint64]chan ntwire.Message), held: make(map[uint64]ntwire.Message),
		lastRecv: now, lastSent: now,
	}
}

// run serves the session until the connection ends or ctx does, and
// reports whether it became ready.
func (s *session) run(ctx context.Context, r *ntwire.Reader) bool {
	s.p.setUnavailable(unavailable(ReasonConnecting))
	s.life.Go(func(context.Context) { s.readLoop(r) })
	s.resync()

	t := time.NewTicker(tick)
	for running := true; running; {
		select {
		case <-ctx.Done():
			running = false
		case <-s.life.Done():
			running = false
		case now := <-t.C:
			s.check(now)
		}
	}
	t.Stop()
	s.end()
	s.life.Wait()

	s.mu.Lock()
	ready, bye, broken := s.ready, s.bye, s.broken
	s.mu.Unlock()
	why := unavailable(ReasonConnectionLost)
	switch {
	case ctx.Err() != nil:
		why = unavailable(ReasonStopped)
	case bye == ntwire.ByePlatformClosing:
		why = unavailable(ReasonClosed)
	case bye == ntwire.ByeAddonStopping:
		why = unavailable(ReasonNotRunning)
	case broken:
		why = unavailable(ReasonProtocol)
	}
	s.log.Info("ninjatrader: disconnected from the add-on", zap.String("why", why.Code))
	s.p.setUnavailable(why)
	return ready
}

// end closes the connection once; pending calls see the session's
// life stopped.
func (s *session) end() {
	if s.life.Stop() {
		s.conn.Close()
	}
}

// fail ends the session because the add-on broke the protocol.
func (s *session) fail(why string) {
	s.log.Warn("ninjatrader: the add-on broke the protocol", zap.String("what", why))
	s.mu.Lock()
	s.broken = true
	s.mu.Unlock()
	s.end()
}

// send writes one message.
func (s *session) send(m ntwire.Message) error {
	if err := s.w.Write(m); err != nil {
		s.end()
		return err
	}
	s.mu.Lock()
	s.lastSent = time.Now()
	s.mu.Unlock()
	return nil
}

// check runs the ping rule and the gap rule.
func (s *session) check(now time.Time) {
	s.mu.Lock()
	silent, idle := now.Sub(s.lastRecv), now.Sub(s.lastSent)
	gap := !s.gapSince.IsZero() && now.Sub(s.gapSince) > s.p.opts.GapWait
	var pingID uint64
	if idle > s.p.opts.PingAfter {
		s.nextID++
		pingID = s.nextID
	}
	s.mu.Unlock()
	switch {
	case silent > s.p.opts.DeadAfter:
		s.log.Warn("ninjatrader: the add-on went silent; reconnecting", zap.Duration("silent", silent))
		s.end()
		return
	case pingID != 0:
		_ = s.send(ntwire.Message{Type: ntwire.TypePing, ID: pingID})
	}
	if gap {
		s.log.Warn("ninjatrader: an event is missing; taking a snapshot")
		s.resync()
	}
}

// resync asks for a snapshot unless one is on its way. Until it comes,
// events are held.
func (s *session) resync() {
	s.mu.Lock()
	if s.snapshotID != 0 {
		s.mu.Unlock()
		return
	}
	s.nextID++
	id := s.nextID
	s.snapshotID, s.synced, s.gapSince = id, false, time.Time{}
	s.mu.Unlock()
	_ = s.send(ntwire.Message{Type: ntwire.TypeRequest, ID: id, Method: ntwire.MethodSnapshot,
		TimeoutMs: s.p.opts.RequestTimeout.Milliseconds()})
}

// readLoop reads the add-on's lines until the connection ends. It is the
// only goroutine that applies snapshots and events, so they apply in the
// order the add-on sent them.
func (s *session) readLoop(r *ntwire.Reader) {
	defer s.end()
	for {
		m, err := r.Read()
		switch {
		case errors.Is(err, ntwire.ErrMalformed), errors.Is(err, ntwire.ErrLineTooLong):
			s.fail("a line that is not a message")
			return
		case err != nil:
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug("ninjatrader: read", zap.Error(err))
			}
			return
		}
		s.mu.Lock()
		s.lastRecv = time.Now()
		s.mu.Unlock()
		switch m.Type {
		case ntwire.TypeReply:
			s.onReply(m)
		case ntwire.TypeEvent:
			s.onEvent(m)
		case ntwire.TypePing:
			_ = s.send(ntwire.Message{Type: ntwire.TypePong, ID: m.ID})
		case ntwire.TypePong:
		case ntwire.TypeBye:
			s.mu.Lock()
			s.bye = m.Reason
			s.mu.Unlock()
			s.log.Info("ninjatrader: the add-on said goodbye", zap.String("reason", m.Reason))
		case ntwire.TypeHello, ntwire.TypeWelcome, ntwire.TypeRefused, ntwire.TypeRequest:
			s.fail("a " + m.Type + " after the handshake")
			return
		}
		// Messages of types a later version adds are ignored.
	}
}

// onReply hands a reply to its caller, or applies the snapshot.
func (s *session) onReply(m ntwire.Message) {
	s.mu.Lock()
	if m.ID != 0 && m.ID == s.snapshotID {
		s.snapshotID = 0
		s.mu.Unlock()
		s.onSnapshot(m)
		return
	}
	ch := s.pending[m.ID]
	delete(s.pending, m.ID)
	s.mu.Unlock()
	if ch != nil {
		ch <- m // buffered: the caller may have gone
	}
}

// onSnapshot applies a snapshot, then the held events that follow it.
func (s *session) onSnapshot(m ntwire.Message) {
	var snap ntwire.Snapshot
	if m.Error != nil || json.Unmarshal(m.Result, &snap) != nil {
		s.fail("a snapshot that failed or does not decode")
		return
	}
	s.p.applySnapshot(snap)
	s.mu.Lock()
	first := !s.ready
	s.ready, s.synced, s.next = true, true, snap.Seq+1
	for seq := range s.held {
		if seq <= snap.Seq {
			delete(s.held, seq)
		}
	}
	run := s.takeRunLocked()
	s.mu.Unlock()
	if first {
		s.p.mu.Lock()
		s.p.sess, s.p.unavailable = s, nil
		s.p.mu.Unlock()
		s.log.Info("ninjatrader: connected to the add-on", zap.Uint64("seq", snap.Seq))
	}
	s.p.applyEvents(run)
}

// onEvent applies an event in seq order: a duplicate is dropped, an early
// one waits for the missing ones, and too many waiting start a resync.
func (s *session) onEvent(m ntwire.Message) {
	s.mu.Lock()
	switch {
	case len(s.held) >= maxHeld:
		s.mu.Unlock()
		s.fail("too many events held")
		return
	case !s.synced:
		s.held[m.Seq] = m
		s.mu.Unlock()
		return
	case m.Seq < s.next:
		s.mu.Unlock() // a duplicate
		return
	}
	s.held[m.Seq] = m
	run := s.takeRunLocked()
	resync := len(s.held) > s.p.opts.GapEvents
	s.mu.Unlock()
	s.p.applyEvents(run)
	if resync {
		s.log.Warn("ninjatrader: events are missing; taking a snapshot", zap.Int("waiting", s.heldCount()))
		s.resync()
	}
}

// takeRunLocked removes the held events that follow s.next without a
// hole and returns them in order; it starts or stops the gap clock.
func (s *session) takeRunLocked() []ntwire.Message {
	var run []ntwire.Message
	for {
		m, ok := s.held[s.next]
		if !ok {
			break
		}
		delete(s.held, s.next)
		run = append(run, m)
		s.next++
	}
	switch {
	case len(s.held) == 0:
		s.gapSince = time.Time{}
	case s.gapSince.IsZero() || len(run) > 0:
		s.gapSince = time.Now()
	}
	return run
}

func (s *session) heldCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.held)
}

// applied returns the last event seq applied.
func (s *session) applied() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next == 0 {
		return 0
	}
	return s.next - 1
}

// request sends a request and waits for its reply. A write whose link
// breaks, or that the add-on does not answer within the request timeout,
// is bridge.ErrOutcomeUnknown: it may have been carried out.
func (s *session) request(ctx context.Context, method string, params any, write bool) (json.RawMessage, error) {
	var raw json.RawMessage
	if params != nil {
		var err error
		if raw, err = ntwire.Encode(params); err != nil {
			return nil, err
		}
	}
	timeout := s.p.opts.RequestTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	ch := make(chan ntwire.Message, 1)
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.pending[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()
	select {
	case <-s.life.Done():
		return nil, unavailable(ReasonConnectionLost)
	default:
	}
	if err := s.send(ntwire.Message{Type: ntwire.TypeRequest, ID: id, Method: method, Params: raw,
		TimeoutMs: max(timeout.Milliseconds(), 1)}); err != nil {
		return nil, unavailable(ReasonConnectionLost)
	}
	t := time.NewTimer(s.p.opts.RequestTimeout)
	defer t.Stop()
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, replyError(m.Error)
		}
		return m.Result, nil
	case <-ctx.Done():
		return nil, wrapf(ctx.Err(), "ninjatrader: %s", method)
	case <-t.C:
		if write {
			return nil, wrapf(bridge.ErrOutcomeUnknown, "ninjatrader: %s: no answer in time", method)
		}
		return nil, wrapf(context.DeadlineExceeded, "ninjatrader: %s: no answer in time", method)
	case <-s.life.Done():
		if write {
			return nil, wrapf(bridge.ErrOutcomeUnknown, "ninjatrader: %s: the connection broke", method)
		}
		return nil, unavailable(ReasonConnectionLost)
	}
}
