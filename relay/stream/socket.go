package stream

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/tradecall"
)

// socket is one client connection. Its goroutines: serve (the lifecycle,
// on the HTTP handler's goroutine), the reader, the writer, at most one
// ping, and one per running RPC.
//
// Frames reach the writer two ways. Replies (one per client frame) travel
// on ctrl, whose capacity the reader reserves before it handles a frame
// (tokens), so a reply never waits and a client that sends without reading
// is held back by TCP instead of growing a queue. State pushed by the relay
// (quotes, P&L, agent status) sits in slots that keep only the latest
// value: per instrument for quotes, one each for P&L and status. The
// user's activity entries wait in a queue of at most MaxActivityQueue
// (each one matters, so none replaces another; one beyond is dropped and
// counted).
type socket struct {
	srv   *Server
	user  *user
	ws    *websocket.Conn
	log   *zap.Logger
	id    string
	p     auth.Principal
	token string // to re-verify; never logged
	// door admitted the socket (Door, or SessionDoor for the dashboard's
	// pages); its re-verification and budget refusals use it.
	door *admit.Door

	ctx    context.Context // the socket's life: RPCs run under it
	cancel context.CancelFunc
	// readCtx bounds the connection's reads; cancelling it drops the
	// connection at once (see kill). Writes take no context, which would
	// cost a timer per frame: writeStart and the lifecycle's watchdog
	// bound them instead.
	readCtx    context.Context
	cancelRead context.CancelFunc
	writeStart atomic.Int64 // monotonic ns when the running write began; 0 when none

	ctrl   chan []byte   // replies, capacity cap(tokens)
	tokens chan struct{} // one per reply owed
	wake   chan struct{} // slots changed; capacity 1

	endOnce   sync.Once
	ending    chan struct{}
	endCode   websocket.StatusCode // 0: the connection is already gone
	endReason string

	inflight atomic.Int32
	calls    sync.WaitGroup // RPC and ping goroutines

	// Guarded by mu: the slots.
	mu        sync.Mutex
	md        map[string]*mdSlot // subscribed contracts
	mdQueue   []*mdSlot          // slots holding a quote, in arrival order
	mdSpare   []*mdSlot
	conflated int64 // cumulative, reported as dropped
	status    []byte
	pnl       []byte
	// The user's activity entries (encoded) waiting for the writer,
	// oldest first, while actOn; actDropped counts those the queue could
	// not take (cumulative, reported as dropped).
	actOn      bool
	actHold    bool // a subscription's reply is not queued yet
	activity   [][]byte
	actDropped int64

	// Reader's own.
	badInRow   int
	badTimes   []time.Time
	readerDone chan struct{}

	// Writer's own.
	seq           uint64
	sentConflated int64
	quotes        [][]byte
	writerDone    chan struct{}

	// Owned by the user loop.
	requested   map[string]string // requested name → contract ("" while unknown)
	routed      map[string]bool   // contracts in the user's routes for this socket
	pnlOn       bool
	pnlInterval time.Duration
	pnlLast     time.Time
	pnlSent     bool
}

// mdSlot holds the latest quote of one contract for one socket.
type mdSlot struct {
	data    []byte
	seq     uint64 // the user's event number of the newest quote taken
	queued  bool
	removed bool
}

// readOnly reports a dashboard session's socket, whose rpc frames run
// nothing.
func (sk *socket) readOnly() bool { return sk.door.Kind == auth.KindSession }

func newSocket(s *Server, u *user, ws *websocket.Conn, p auth.Principal, token string, door *admit.Door) *socket {
	ctxCap := s.opts.MaxInFlight + 16
	sk := &socket{
		srv:         s,
		user:        u,
		ws:          ws,
		id:          newID("sock_"),
		p:           p,
		token:       token,
		door:        door,
		ctrl:        make(chan []byte, ctxCap),
		tokens:      make(chan struct{}, ctxCap),
		wake:        make(chan struct{}, 1),
		ending:      make(chan struct{}),
		md:          make(map[string]*mdSlot),
		readerDone:  make(chan struct{}),
		writerDone:  make(chan struct{}),
		requested:   make(map[string]string),
		pnlInterval: DefaultPnlInterval,
	}
	sk.log = s.log.With(zap.String("user", p.UserID), zap.String("socket", sk.id))
	// Not derived from the Server's context: shutdown cancels it once the
	// close code is chosen.
	sk.ctx, sk.cancel = context.WithCancel(context.Background())
	sk.readCtx, sk.cancelRead = context.WithCancel(context.Background())
	return sk
}

// serve runs the socket until it ends, then closes it and waits for all of
// its goroutines.
func (sk *socket) serve() {
	s := sk.srv
	sk.ws.SetReadLimit(s.opts.ReadLimit)
	s.stats.sockets.Add(1)
	if m := s.opts.Metrics; m != nil {
		m.StreamSockets(1)
	}
	sk.log.Info("stream socket opened")
	sk.user.join(sk)
	go sk.readLoop()
	go sk.writeLoop()

	every := s.opts.ReverifyInterval
	if sk.readOnly() {
		every = min(every, s.opts.SessionReverifyInterval)
	}
	reverify := time.NewTicker(every)
	defer reverify.Stop()
	watchdog := time.NewTicker(min(s.opts.WriteTimeout/4, time.Second))
	defer watchdog.Stop()
	var ping <-chan time.Time
	if s.opts.PingInterval > 0 {
		t := time.NewTicker(s.opts.PingInterval)
		defer t.Stop()
		ping = t.C
	}
	pinging := false
	pingDone := make(chan error, 1)
loop:
	for {
		select {
		case <-sk.ending:
			break loop
		case <-s.ctx.Done():
			sk.end(websocket.StatusGoingAway, "relay shutting down")
			break loop
		case <-reverify.C:
			sk.reverify()
		case <-watchdog.C:
			if st := sk.writeStart.Load(); st != 0 && time.Duration(monotonic()-st) > s.opts.WriteTimeout {
				sk.log.Info("stream client stopped reading; dropping the socket")
				sk.end(0, "")
				sk.kill()
			}
		case <-ping:
			if !pinging {
				pinging = true
				sk.calls.Add(1)
				go func() {
					defer sk.calls.Done()
					ctx, cancel := context.WithTimeout(sk.readCtx, s.opts.WriteTimeout)
					defer cancel()
					pingDone <- sk.ws.Ping(ctx)
				}()
			}
		case err := <-pingDone:
			pinging = false
			if err != nil {
				sk.end(0, "")
			}
		}
	}
	sk.shutdown()
	s.stats.sockets.Add(-1)
	if m := s.opts.Metrics; m != nil {
		m.StreamSockets(-1)
		m.StreamClosed(int(sk.endCode))
	}
	sk.log.Info("stream socket closed", zap.Int("closeCode", int(sk.endCode)), zap.String("reason", sk.endReason))
}

// end ends the socket; the first call chooses the close code (0 when the
// connection is already gone and nothing can be sent).
func (sk *socket) end(code websocket.StatusCode, reason string) {
	sk.endOnce.Do(func() {
		sk.endCode, sk.endReason = code, reason
		close(sk.ending)
	})
}

func (sk *socket) ended() bool {
	select {
	case <-sk.ending:
		return true
	default:
		return false
	}
}

// kill drops the connection without a close handshake: the reader's
// context ending closes the connection, which ends any read or write.
func (sk *socket) kill() {
	sk.cancelRead()
}

// shutdown leaves the user, lets the writer send what it owes, closes the
// connection with the chosen code, and waits for every goroutine. No step
// waits longer than CloseGrace before the connection is dropped.
func (sk *socket) shutdown() {
	grace := sk.srv.opts.CloseGrace
	sk.user.setActivity(sk, false)
	sk.user.leave(sk)
	sk.cancel() // RPCs stop; the writer flushes its replies and exits
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-sk.writerDone:
	case <-t.C:
		sk.kill()
		<-sk.writerDone
	}
	if sk.endCode != 0 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = sk.ws.Close(sk.endCode, sk.endReason)
		}()
		t.Reset(grace)
		select {
		case <-done:
		case <-t.C:
			sk.kill()
			<-done
		}
	}
	sk.kill()
	_ = sk.ws.CloseNow()
	<-sk.readerDone
	sk.calls.Wait()
}

// reverify ends the socket when its token was revoked or its user's plan
// no longer includes the API.
func (sk *socket) reverify() {
	e := sk.verify()
	switch {
	case e != nil && e.Status == http.StatusServiceUnavailable:
		// The store could not say; the token may well be valid.
		sk.log.Warn("re-verifying stream token", zap.String("error", e.Detail))
	case e != nil:
		sk.revoked()
	}
}

// recheck checks the socket's token and plan again before a frame that
// acts (an rpc, a subscription), through the Admitter's cache, so that a
// revoked token or a downgraded plan stops acting within the cache's TTL
// (2 s), as on HTTP, not at the next periodic re-verification. It returns
// false when the frame must not run, having answered it: with the HTTP
// door's code (unauthorized, plan_required), and then the socket closes
// with 1008 as on re-verification; or, when the store could not say,
// storage_unavailable with retryAfter, the socket staying open. A refused
// frame is charged to no budget.
func (sk *socket) recheck(id json.RawMessage, rpc bool) bool {
	e := sk.verify()
	if e == nil {
		return true
	}
	sk.badInRow = 0
	sk.refuse(&frameError{code: e.Code, detail: e.Detail, retryAfter: e.RetryAfter}, id, rpc)
	if e.Status != http.StatusServiceUnavailable {
		sk.revoked()
	}
	return false
}

// verify checks the socket's token and plan (the door's Verify) and that
// they still name the socket's user; nil when they hold.
func (sk *socket) verify() *httpapi.Error {
	ctx, cancel := context.WithTimeout(sk.ctx, 5*time.Second)
	defer cancel()
	p, e := sk.srv.opts.Admit.Verify(ctx, sk.door, sk.token)
	if e == nil && p.UserID != sk.p.UserID {
		e = &httpapi.Error{Status: http.StatusUnauthorized, Code: errcode.Unauthorized, Detail: "the token is missing, malformed or revoked"}
	}
	return e
}

// revoked ends the socket whose token or session no longer holds, with
// 1008.
func (sk *socket) revoked() {
	sk.log.Info("stream token no longer valid; closing socket")
	if sk.readOnly() {
		sk.end(websocket.StatusPolicyViolation, "dashboard session ended")
		return
	}
	sk.end(websocket.StatusPolicyViolation, "API token revoked or plan changed")
}

// ---- Reading ----

func (sk *socket) readLoop() {
	defer close(sk.readerDone)
	for {
		typ, data, err := sk.ws.Read(sk.readCtx)
		if err != nil {
			// The client closed, went away, broke the protocol or sent a
			// frame over the read limit (the library answered 1009).
			sk.end(0, "")
			return
		}
		if sk.ended() {
			continue // keep reading so that the close handshake completes
		}
		if typ == websocket.MessageText && !utf8.Valid(data) {
			// RFC 6455 §8.1: a text message that is not UTF-8 fails the
			// connection with 1007.
			sk.log.Info("closing stream socket: a text frame is not valid UTF-8")
			sk.end(websocket.StatusInvalidFramePayloadData, "text frames must be valid UTF-8")
			continue
		}
		select {
		case sk.tokens <- struct{}{}:
		case <-sk.ending:
			continue
		}
		sk.handle(typ, data)
	}
}

// reply queues a reply; a token was taken for it.
func (sk *socket) reply(b []byte) {
	sk.ctrl <- b
}

// refuse answers a refused frame, and closes the socket once the client
// has sent too many malformed ones.
func (sk *socket) refuse(e *frameError, id json.RawMessage, rpc bool) {
	sk.reply(e.encode(id, rpc))
	if !e.bad {
		return
	}
	now := sk.srv.opts.Clock.Now()
	sk.badInRow++
	limit := sk.srv.opts.BadFrameLimit
	sk.badTimes = append(sk.badTimes, now)
	if len(sk.badTimes) > limit {
		sk.badTimes = sk.badTimes[len(sk.badTimes)-limit:]
	}
	if sk.badInRow >= limit || (len(sk.badTimes) == limit && now.Sub(sk.badTimes[0]) <= sk.srv.opts.BadFrameWindow) {
		sk.log.Info("closing stream socket: too many malformed frames")
		sk.end(websocket.StatusPolicyViolation, "too many malformed frames")
	}
}

func (sk *socket) handle(typ websocket.MessageType, data []byte) {
	if typ != websocket.MessageText {
		sk.refuse(badFrame(errcode.InvalidJSON, "frames must be JSON text messages"), nil, false)
		return
	}
	f, e := parseFrame(data)
	if e != nil {
		sk.refuse(e, f.id, false)
		return
	}
	switch f.action {
	case actionPing:
		sk.badInRow = 0
		sk.reply(mustJSON(idOnly{Type: typePong, ID: f.id}))
	case actionSubscribe, actionUnsubscribe:
		names, e := parseInstruments(f, sk.srv.opts.MaxInstruments)
		if e != nil {
			sk.refuse(e, f.id, false)
			return
		}
		sk.badInRow = 0
		if !sk.recheck(f.id, false) {
			return
		}
		if e := sk.srv.opts.Admit.Spend(sk.p, sk.door, sk.srv.opts.SubscriptionBudget); e != nil {
			sk.refuse(&frameError{code: e.Code, detail: "the subscription budget is used up; wait retryAfter seconds",
				retryAfter: e.RetryAfter, policy: e.Policy}, f.id, false)
			return
		}
		sk.user.subscription(sk, f.action == actionSubscribe, names, f.id)
	case actionStreamPnl:
		enabled, interval, e := parseStreamPnl(f)
		if e != nil {
			sk.refuse(e, f.id, false)
			return
		}
		sk.badInRow = 0
		sk.user.streamPnl(sk, enabled, interval, f.id)
	case actionSubscribeActivity:
		sk.badInRow = 0
		// Subscribed before the reply goes out, so that a client that
		// read it misses no entry; the entries queued meanwhile are held
		// until the reply is queued (the writer sends replies first).
		sk.setActivity(true)
		sk.user.setActivity(sk, true)
		sk.reply(mustJSON(idOnly{Type: typeActivitySubscribed, ID: f.id}))
		sk.releaseActivity()
	case actionUnsubscribeActivity:
		sk.badInRow = 0
		sk.user.setActivity(sk, false)
		sk.setActivity(false)
		sk.reply(mustJSON(idOnly{Type: typeActivityUnsubscribed, ID: f.id}))
	case actionRPC:
		if sk.readOnly() {
			sk.badInRow = 0
			sk.refuse(&frameError{code: errcode.ReadOnlySocket,
				detail: "this socket was opened with a dashboard session and only reads; rpc needs an API token"}, f.id, true)
			return
		}
		sk.rpc(f)
	}
}

// rpc starts an RPC. Its reply comes when the agent answers.
func (sk *socket) rpc(f clientFrame) {
	if f.id == nil {
		sk.refuse(badFrame(errcode.InvalidFrame, "an rpc frame needs an id to correlate the reply"), nil, false)
		return
	}
	var fn string
	if raw, ok := f.fields["api"]; !ok || json.Unmarshal(raw, &fn) != nil {
		sk.refuse(badFrame(errcode.InvalidFrame, "an rpc frame needs api, the name of an RPC function"), f.id, true)
		return
	}
	if !sk.recheck(f.id, true) {
		return
	}
	if _, known := protocol.LookupFunction(fn); known {
		// The token's scope: a read token's write is refused here, as
		// the HTTP door refuses it, charging and calling nothing.
		if e := admit.RequireScope(sk.p, tradecall.FunctionScope(fn)); e != nil {
			sk.badInRow = 0
			sk.refuse(&frameError{code: e.Code, detail: e.Detail}, f.id, true)
			return
		}
	}
	if int(sk.inflight.Load()) >= sk.srv.opts.MaxInFlight {
		sk.refuse(&frameError{code: errcode.TooManyConcurrentRequests, detail: "this socket already runs " + strconv.Itoa(sk.srv.opts.MaxInFlight) + " calls; wait for a reply"}, f.id, true)
		return
	}
	if e := sk.srv.opts.Admit.Spend(sk.p, sk.door, sk.srv.opts.Budget); e != nil {
		sk.refuse(&frameError{code: e.Code, detail: "the request budget is used up; wait retryAfter seconds",
			retryAfter: e.RetryAfter, policy: e.Policy}, f.id, true)
		return
	}
	call, he := tradecall.PrepareSocketCall(fn, f.fields["args"])
	if he != nil {
		sk.refuse(&frameError{code: he.Code, detail: he.Detail, fields: he.Fields, bad: he.Code == errcode.UnknownFunction}, f.id, true)
		return
	}
	sk.badInRow = 0
	sk.inflight.Add(1)
	sk.calls.Add(1)
	go func() {
		defer sk.calls.Done()
		defer sk.inflight.Add(-1)
		// A keyed write follows the HTTP API's rule, on the same store:
		// a repeat within 24 h is answered with the recorded outcome.
		o := sk.srv.calls.Run(sk.ctx, sk.p, call)
		sk.answer(f.id, o)
		// Recorded once the reply is queued.
		sk.srv.calls.Record(sk.p, call, o)
	}()
}

// answer sends the rpc reply of an outcome: the result rendered in the
// socket's response profile, or the error; a recorded outcome answered
// again carries "replayed":true.
func (sk *socket) answer(id json.RawMessage, o tradecall.Outcome) {
	if o.Gone {
		return // the socket is closing; nobody to answer
	}
	if e := o.Err; e != nil {
		fe := &frameError{code: e.Code, detail: e.Detail, fields: e.Fields, retryAfter: e.RetryAfter, policy: e.Policy, replayed: o.Replayed}
		sk.reply(fe.encode(id, true))
		return
	}
	reply, e := tradecall.Render(sk.log, sk.p.Profile, o.Fn, o.Result)
	if e != nil {
		fe := &frameError{code: e.Code, detail: e.Detail, replayed: o.Replayed}
		sk.reply(fe.encode(id, true))
		return
	}
	sk.reply(rpcSuccess(id, reply, o.Replayed))
}

// ---- Slots ----

// offerQuote makes data, the user's quote event number seq, the latest
// quote of slot's contract, unless the socket unsubscribed from it
// meanwhile or already took a newer one. It never blocks.
func (sk *socket) offerQuote(slot *mdSlot, seq uint64, data []byte) {
	sk.mu.Lock()
	if slot.removed || seq <= slot.seq {
		sk.mu.Unlock()
		return
	}
	slot.seq = seq
	if slot.data != nil {
		sk.conflated++
	}
	slot.data = data
	wake := false
	if !slot.queued {
		slot.queued = true
		wake = len(sk.mdQueue) == 0
		sk.mdQueue = append(sk.mdQueue, slot)
	}
	sk.mu.Unlock()
	if wake {
		sk.signal()
	}
}

func (sk *socket) signal() {
	select {
	case sk.wake <- struct{}{}:
	default:
	}
}

// setContracts makes set the socket's subscribed contracts: slots of
// contracts no longer in it are dropped with any quote they held, so no
// quote of them is written after the unsubscribed reply. It returns the
// slots it created, which start at seq: quotes up to seq are taken (they
// went out with the subscribed reply).
func (sk *socket) setContracts(set map[string]bool, seq map[string]uint64) map[string]*mdSlot {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	for c, slot := range sk.md {
		if !set[c] {
			slot.removed = true
			slot.data = nil
			delete(sk.md, c)
		}
	}
	var created map[string]*mdSlot
	for c := range set {
		if sk.md[c] == nil {
			if created == nil {
				created = make(map[string]*mdSlot)
			}
			sk.md[c] = &mdSlot{seq: seq[c]}
			created[c] = sk.md[c]
		}
	}
	return created
}

func (sk *socket) setStatus(b []byte) {
	sk.mu.Lock()
	sk.status = b
	sk.mu.Unlock()
	sk.signal()
}

// setActivity turns the socket's activity queue on or off; off drops
// what waits in it, so that no entry follows the unsubscribed reply.
func (sk *socket) setActivity(on bool) {
	sk.mu.Lock()
	sk.actOn, sk.actHold = on, on && !sk.actOn
	if !on {
		clear(sk.activity)
		sk.activity = nil
	}
	sk.mu.Unlock()
}

// releaseActivity lets the writer send the entries queued while a
// subscription's reply was not.
func (sk *socket) releaseActivity() {
	sk.mu.Lock()
	sk.actHold = false
	n := len(sk.activity)
	sk.mu.Unlock()
	if n > 0 {
		sk.signal()
	}
}

// offerActivity queues an encoded activity entry for the writer, unless
// the socket unsubscribed meanwhile; a full queue drops it and counts it.
// It never blocks.
func (sk *socket) offerActivity(data []byte) {
	sk.mu.Lock()
	if !sk.actOn {
		sk.mu.Unlock()
		return
	}
	if len(sk.activity) >= sk.srv.opts.MaxActivityQueue {
		sk.actDropped++
		sk.mu.Unlock()
		sk.srv.stats.activityDropped.Add(1)
		return
	}
	sk.activity = append(sk.activity, data)
	sk.mu.Unlock()
	sk.signal()
}

// setPnl makes b the pnlUpdate to send (nil: none).
func (sk *socket) setPnl(b []byte) {
	sk.mu.Lock()
	sk.pnl = b
	sk.mu.Unlock()
	if b != nil {
		sk.signal()
	}
}

// ---- Writing ----

// writeLoop writes frames until the socket ends, numbering them. Frames
// are built in pooled buffers, so an idle socket holds none.
func (sk *socket) writeLoop() {
	defer close(sk.writerDone)
	for {
		select {
		case <-sk.ctx.Done():
			// Send the replies owed (an error frame before a 1008)
			// unless the connection is gone.
			if sk.endCode != 0 {
				buf := getBuf()
				sk.writeReplies(buf)
				putBuf(buf)
			}
			return
		case b := <-sk.ctrl:
			buf := getBuf()
			ok := sk.write(buf, b, true) == nil && sk.flush(buf)
			putBuf(buf)
			if !ok {
				return
			}
		case <-sk.wake:
			runtime.Gosched() // let a burst of quotes land in one frame
			buf := getBuf()
			ok := sk.flush(buf)
			putBuf(buf)
			if !ok {
				return
			}
		}
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > 256<<10 {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}

// flush writes what the slots and ctrl hold: status, replies, activity,
// P&L, quotes.
func (sk *socket) flush(buf *[]byte) bool {
	sk.mu.Lock()
	status, pnl := sk.status, sk.pnl
	sk.status, sk.pnl = nil, nil
	sk.mu.Unlock()
	if status != nil && sk.write(buf, status, false) != nil {
		return false
	}
	if !sk.writeReplies(buf) {
		return false
	}
	if !sk.flushActivity(buf) {
		return false
	}
	if pnl != nil && sk.write(buf, pnl, false) != nil {
		return false
	}
	return sk.flushQuotes(buf)
}

// writeReplies writes the replies queued now.
func (sk *socket) writeReplies(buf *[]byte) bool {
	for {
		select {
		case b := <-sk.ctrl:
			if sk.write(buf, b, true) != nil {
				return false
			}
		default:
			return true
		}
	}
}

// flushActivity writes the queued activity entries, one frame each,
// with the socket's cumulative count of dropped entries as dropped once it
// is not 0.
func (sk *socket) flushActivity(buf *[]byte) bool {
	sk.mu.Lock()
	if sk.actHold {
		sk.mu.Unlock()
		return true
	}
	pending := sk.activity
	sk.activity = nil
	dropped := sk.actDropped
	sk.mu.Unlock()
	for _, data := range pending {
		sk.seq++
		b := append((*buf)[:0], `{"seq":`...)
		b = strconv.AppendUint(b, sk.seq, 10)
		b = append(b, `,"type":"activity","event":`...)
		b = append(b, data...)
		if dropped > 0 {
			b = append(b, `,"dropped":`...)
			b = strconv.AppendInt(b, dropped, 10)
		}
		b = append(b, '}')
		*buf = b
		if err := sk.writeRaw(b); err != nil {
			return false
		}
		sk.srv.stats.activity.Add(1)
	}
	return true
}

// flushQuotes writes every pending quote in one marketData frame, with
// the socket's cumulative count of conflated quotes as dropped.
func (sk *socket) flushQuotes(buf *[]byte) bool {
	quotes := sk.quotes[:0]
	sk.mu.Lock()
	queue := sk.mdQueue
	sk.mdQueue = sk.mdSpare[:0]
	for _, slot := range queue {
		slot.queued = false
		if !slot.removed && slot.data != nil {
			quotes = append(quotes, slot.data)
			slot.data = nil
		}
	}
	conflated := sk.conflated
	clear(queue)
	sk.mdSpare = queue[:0]
	sk.mu.Unlock()
	if len(quotes) == 0 {
		return true
	}
	sk.seq++
	b := append((*buf)[:0], `{"seq":`...)
	b = strconv.AppendUint(b, sk.seq, 10)
	b = append(b, `,"type":"marketData","quotes":[`...)
	for i, q := range quotes {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, q...)
	}
	b = append(b, ']')
	if conflated > 0 {
		b = append(b, `,"dropped":`...)
		b = strconv.AppendInt(b, conflated, 10)
	}
	b = append(b, '}')
	*buf = b
	n := len(quotes)
	clear(quotes)
	sk.quotes = quotes[:0]
	if err := sk.writeRaw(b); err != nil {
		return false
	}
	s := sk.srv
	s.stats.delivered.Add(int64(n))
	delta := conflated - sk.sentConflated
	sk.sentConflated = conflated
	if delta > 0 {
		s.stats.conflated.Add(delta)
	}
	if m := s.opts.Metrics; m != nil {
		m.StreamQuotes(n, int(delta))
	}
	return true
}

// write writes body, a JSON object, as the next frame. A reply gives back
// the token taken for it.
func (sk *socket) write(buf *[]byte, body []byte, reply bool) error {
	sk.seq++
	*buf = appendSeq((*buf)[:0], sk.seq, body)
	err := sk.writeRaw(*buf)
	if reply {
		select {
		case <-sk.tokens:
		default:
		}
	}
	return err
}

func (sk *socket) writeRaw(b []byte) error {
	sk.writeStart.Store(monotonic())
	err := sk.ws.Write(context.Background(), websocket.MessageText, b)
	sk.writeStart.Store(0)
	if err != nil {
		sk.end(0, "")
		return err
	}
	sk.srv.stats.frames.Add(1)
	return nil
}

// closeQuickly closes ws with code, dropping the connection when the
// client does not complete the handshake within grace.
func closeQuickly(ws *websocket.Conn, code websocket.StatusCode, reason string, grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, _, err := ws.Read(ctx); err != nil {
				return
			}
		}
	}()
	_ = ws.Close(code, reason)
	cancel()
	<-done
	_ = ws.CloseNow()
}

var clockStart = time.Now()

// monotonic is a monotonic clock in nanoseconds, never 0.
func monotonic() int64 { return int64(time.Since(clockStart)) + 1 }
