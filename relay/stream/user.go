package stream

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/tradecall"
)

// user is the state one user's sockets share: the subscription set sent to
// the agent, the quote routes, P&L polling. One goroutine (run) owns it;
// sockets and the hub talk to it through channels, and HandleEvent reads
// only routes, an immutable table swapped atomically.
type user struct {
	srv *Server
	id  string
	log *zap.Logger

	// count is the number of sockets reserved for the user (joined or
	// about to), guarded by srv.mu. The user retires only at count 0.
	count int

	routes atomic.Pointer[routeTable]

	// actSubs are the user's sockets subscribed to the activity log: an
	// immutable list, replaced whole under actMu, so that HandleRecorded
	// reads it without a lock.
	actMu   sync.Mutex
	actSubs atomic.Pointer[[]*socket]

	// The latest quote of each contract the agent streams, for the
	// subscribed reply, numbered by quoteSeq in arrival order.
	quoteMu  sync.Mutex
	quoteSeq uint64
	latest   map[string]cachedQuote

	ops       chan userOp // join, leave, streamPnl
	subOps    chan userOp // subscribe, unsubscribe: one at a time, in order
	subDone   chan callResult
	pnlDone   chan callResult
	statusSig chan struct{}
	// resyncSig asks the loop to send the subscriptions again if the
	// agent may not hold them: the platform's connections changed, or a
	// failed sync's retry is due (retry).
	resyncSig chan struct{}
	retry     *time.Timer // a failed sync's retry; nil when none waits
	done      chan struct{}

	// Owned by run.
	sockets      map[*socket]struct{}
	refs         map[string]int    // requested name → sockets asking for it
	sent         map[string]bool   // requested names the agent holds
	resolved     map[string]string // requested name → contract, from the agent's last answer
	dirty        bool              // the agent may not hold sent
	subBusy      bool
	resyncAfter  bool
	pendingSub   *userOp
	pendingSet   []string
	ticker       Ticker
	pollEvery    time.Duration
	pnlBusy      bool
	lastPollAt   time.Time
	pnlCache     []byte
	pnlCacheAt   time.Time
	hasPolledYet bool
}

// routeTable maps a contract to the sockets subscribed to it, with each
// socket's slot for it, so delivering a quote costs no lookup per socket.
type routeTable struct {
	by map[string][]route
}

type route struct {
	sk   *socket
	slot *mdSlot
}

type opKind int

const (
	opJoin opKind = iota
	opLeave
	opSubscribe
	opUnsubscribe
	opStreamPnl
)

type userOp struct {
	kind     opKind
	sk       *socket
	names    []string
	id       json.RawMessage
	enabled  bool
	interval time.Duration
	ack      chan struct{} // join: closed once the socket is a member
}

type cachedQuote struct {
	seq  uint64
	data []byte
}

// Bounds of what an agent's quotes make the relay keep. The agent streams
// only the user's subscriptions, so the count is reached only by an agent
// that sends quotes nobody asked for; a real quote encodes in about 300
// bytes. Per user the cache holds at most maxCachedQuotes ×
// (maxQuoteBytes + maxInstrumentLen) bytes of quotes and keys, 1.06 MiB.
const (
	maxCachedQuotes = 1024
	// maxQuoteEvent bounds a quote event's data as the agent sent it
	// (fields the relay does not know are dropped when it is encoded
	// again).
	maxQuoteEvent = 4 << 10
	// maxQuoteBytes bounds a quote as the relay encodes it for sockets.
	maxQuoteBytes = 1 << 10
	// maxInstrumentLen bounds a quote's instrument name.
	maxInstrumentLen = 64
)

// validInstrument reports whether s may name a contract: 1 to
// maxInstrumentLen printable ASCII characters ("ES 12-26", "EURUSD").
func validInstrument(s string) bool {
	if s == "" || len(s) > maxInstrumentLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// cacheQuote numbers a quote event and keeps it as its contract's latest.
// Quotes beyond the bounds above are numbered but not kept.
func (u *user) cacheQuote(contract string, data []byte) uint64 {
	u.quoteMu.Lock()
	defer u.quoteMu.Unlock()
	u.quoteSeq++
	if len(contract) > maxInstrumentLen || len(data) > maxQuoteBytes {
		return u.quoteSeq
	}
	if _, ok := u.latest[contract]; ok || len(u.latest) < maxCachedQuotes {
		u.latest[contract] = cachedQuote{seq: u.quoteSeq, data: data}
	}
	return u.quoteSeq
}

// latestQuotes returns the latest quotes of contracts.
func (u *user) latestQuotes(contracts []string) map[string]cachedQuote {
	u.quoteMu.Lock()
	defer u.quoteMu.Unlock()
	out := make(map[string]cachedQuote, len(contracts))
	for _, c := range contracts {
		if q, ok := u.latest[c]; ok {
			out[c] = q
		}
	}
	return out
}

// pruneQuotes forgets the quotes of contracts no longer streamed.
func (u *user) pruneQuotes(keep map[string]bool) {
	u.quoteMu.Lock()
	defer u.quoteMu.Unlock()
	for c := range u.latest {
		if !keep[c] {
			delete(u.latest, c)
		}
	}
}

type callResult struct {
	res json.RawMessage
	err error
}

func newUser(s *Server, id string) *user {
	u := &user{
		srv:       s,
		id:        id,
		log:       s.log.With(zap.String("user", id)),
		ops:       make(chan userOp, 16),
		subOps:    make(chan userOp, 16),
		subDone:   make(chan callResult, 1),
		pnlDone:   make(chan callResult, 1),
		statusSig: make(chan struct{}, 1),
		resyncSig: make(chan struct{}, 1),
		done:      make(chan struct{}),
		sockets:   make(map[*socket]struct{}),
		refs:      make(map[string]int),
		latest:    make(map[string]cachedQuote),
		sent:      make(map[string]bool),
		resolved:  make(map[string]string),
	}
	u.routes.Store(&routeTable{})
	return u
}

// ---- Called by sockets and the hub ----

func (u *user) send(ch chan userOp, op userOp, abandon <-chan struct{}) {
	select {
	case ch <- op:
	case <-u.done:
	case <-abandon:
	}
}

// join adds a socket (it gets a status frame at once) and returns once the
// loop knows it, so that none of the socket's frames can reach the loop
// (on subOps) before the socket does (on ops).
func (u *user) join(sk *socket) {
	ack := make(chan struct{})
	u.send(u.ops, userOp{kind: opJoin, sk: sk, ack: ack}, nil)
	select {
	case <-ack:
	case <-u.done:
	}
}

// leave removes a socket (nil: a reservation that never became a socket).
func (u *user) leave(sk *socket) { u.send(u.ops, userOp{kind: opLeave, sk: sk}, nil) }

// release gives back a reservation that never became a socket.
func (u *user) release(sk *socket) { u.leave(sk) }

func (u *user) subscription(sk *socket, subscribe bool, names []string, id json.RawMessage) {
	kind := opUnsubscribe
	if subscribe {
		kind = opSubscribe
	}
	u.send(u.subOps, userOp{kind: kind, sk: sk, names: names, id: id}, sk.ending)
}

func (u *user) streamPnl(sk *socket, enabled bool, interval time.Duration, id json.RawMessage) {
	u.send(u.ops, userOp{kind: opStreamPnl, sk: sk, enabled: enabled, interval: interval, id: id}, sk.ending)
}

// setActivity adds sk to the sockets subscribed to the user's activity,
// or removes it.
func (u *user) setActivity(sk *socket, on bool) {
	u.actMu.Lock()
	defer u.actMu.Unlock()
	var list []*socket
	if cur := u.actSubs.Load(); cur != nil {
		list = *cur
	}
	i := slices.Index(list, sk)
	var next []*socket
	switch {
	case on && i < 0:
		next = append(slices.Clip(list), sk)
	case !on && i >= 0:
		next = slices.Delete(slices.Clone(list), i, i+1)
	default:
		return
	}
	u.actSubs.Store(&next)
}

func (u *user) signalStatus() {
	select {
	case u.statusSig <- struct{}{}:
	default:
	}
}

func (u *user) signalResync() {
	select {
	case u.resyncSig <- struct{}{}:
	default:
	}
}

// syncRetryDelay is how long after a failed sync of the subscriptions
// (the platform not ready yet behind a connected agent) it is tried
// again, while the agent stays connected.
const syncRetryDelay = time.Second

// ---- The loop ----

func (u *user) run() {
	defer u.srv.wg.Done()
	defer close(u.done)
	defer func() {
		if u.ticker != nil {
			u.ticker.Stop()
		}
		if u.retry != nil {
			u.retry.Stop()
		}
	}()
	for {
		var subOps chan userOp
		if !u.subBusy {
			subOps = u.subOps
		}
		var tick <-chan time.Time
		if u.ticker != nil {
			tick = u.ticker.C()
		}
		select {
		case <-u.srv.ctx.Done():
			return
		case op := <-u.ops:
			u.handle(op)
		case op := <-subOps:
			u.handleSub(op)
		case r := <-u.subDone:
			u.subFinished(r)
		case r := <-u.pnlDone:
			u.pnlFinished(r)
		case <-tick:
			u.poll(false)
		case <-u.statusSig:
			u.statusChanged()
		case <-u.resyncSig:
			if u.dirty {
				u.maybeSync()
			}
		}
		if u.retire() {
			return
		}
	}
}

// retire ends the user once no socket is left or reserved and the agent
// has been told (when it could be) to stream nothing.
func (u *user) retire() bool {
	if len(u.sockets) > 0 || u.subBusy {
		return false
	}
	s := u.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if u.count > 0 {
		return false
	}
	if s.users[u.id] == u {
		delete(s.users, u.id)
	}
	return true
}

func (u *user) connected() bool { return u.srv.opts.Upstream.Connected(u.id) }

func (u *user) handle(op userOp) {
	switch op.kind {
	case opJoin:
		u.sockets[op.sk] = struct{}{}
		op.sk.setStatus(statusBody(u.connected()))
		close(op.ack)
	case opLeave:
		if op.sk != nil {
			if _, ok := u.sockets[op.sk]; ok {
				delete(u.sockets, op.sk)
				for n := range op.sk.requested {
					u.dropRequested(op.sk, n)
				}
				u.applySocket(op.sk)
				if op.sk.pnlOn {
					u.retunePnl()
				}
				u.maybeSync()
			}
		}
		u.srv.mu.Lock()
		u.count--
		u.srv.mu.Unlock()
	case opStreamPnl:
		u.handlePnl(op)
	}
}

// ---- Subscriptions ----

func (u *user) member(sk *socket) bool {
	_, ok := u.sockets[sk]
	return ok
}

func (u *user) handleSub(op userOp) {
	sk := op.sk
	if !u.member(sk) {
		return // the socket left; nobody to answer
	}
	if op.kind == opUnsubscribe {
		u.unsubscribe(op)
		return
	}
	if !u.connected() {
		sk.reply((&frameError{code: errcode.AddonDisconnected, detail: "the trading add-on is not connected: start the agent next to the platform"}).encode(op.id, false))
		return
	}
	added := 0
	for _, n := range op.names {
		if _, ok := sk.requested[n]; !ok {
			added++
		}
	}
	if max := u.srv.opts.MaxInstruments; len(sk.requested)+added > max {
		sk.reply((&frameError{code: errcode.TooManyInstruments, detail: "a socket subscribes to at most " + strconv.Itoa(max) + " instruments; nothing changed"}).encode(op.id, false))
		return
	}
	desired := u.union(op.names)
	known := true
	for _, n := range op.names {
		if u.resolved[n] == "" {
			known = false
			break
		}
	}
	if known && !u.dirty && sameSet(desired, u.sent) {
		u.completeSubscribe(op)
		return
	}
	u.startSync(desired, &op)
}

// completeSubscribe adds op's known names to its socket and answers with
// the contracts and their latest quotes. The reply is queued before the
// socket's new slots exist, so it normally precedes their first
// marketData; a quote that arrives between the snapshot and the slots is
// offered to them afterwards, and one already in the snapshot is not
// sent again.
func (u *user) completeSubscribe(op userOp) {
	sk := op.sk
	contracts := []string{}
	var unknown []string
	for _, n := range op.names {
		c := u.resolved[n]
		if c == "" {
			unknown = append(unknown, n)
			continue
		}
		u.addRequested(sk, n, c)
		if !slices.Contains(contracts, c) {
			contracts = append(contracts, c)
		}
	}
	snap := u.latestQuotes(contracts)
	var quotes []json.RawMessage
	seqs := make(map[string]uint64, len(snap))
	for _, c := range contracts {
		if q, ok := snap[c]; ok {
			quotes = append(quotes, q.data)
			seqs[c] = q.seq
		}
	}
	sk.reply(mustJSON(instrumentsFrame{Type: typeSubscribed, ID: op.id, Instruments: contracts, Unknown: unknown, Quotes: quotes}))
	u.applySocketSeeded(sk, seqs)
	// Quotes that came after the snapshot and before the routes.
	for c, q := range u.latestQuotes(contracts) {
		for _, r := range u.routes.Load().by[c] {
			if r.sk == sk {
				sk.offerQuote(r.slot, q.seq, q.data)
			}
		}
	}
}

func (u *user) unsubscribe(op userOp) {
	sk := op.sk
	removed := []string{}
	for _, n := range op.names {
		for req, c := range sk.requested {
			if req != n && c != n {
				continue
			}
			u.dropRequested(sk, req)
			label := c
			if label == "" {
				label = req
			}
			if !slices.Contains(removed, label) {
				removed = append(removed, label)
			}
		}
	}
	// No quote of these contracts is written after the reply.
	u.applySocket(sk)
	sk.reply(mustJSON(instrumentsFrame{Type: typeUnsubscribed, ID: op.id, Instruments: removed}))
	u.maybeSync()
}

// union is every socket's requested names, plus extra, sorted.
func (u *user) union(extra []string) []string {
	out := make([]string, 0, len(u.refs)+len(extra))
	for n := range u.refs {
		out = append(out, n)
	}
	for _, n := range extra {
		if u.refs[n] == 0 {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// addRequested records that sk asked for n, resolved to c.
func (u *user) addRequested(sk *socket, n, c string) {
	if _, ok := sk.requested[n]; !ok {
		u.refs[n]++
	}
	sk.requested[n] = c
}

// dropRequested forgets that sk asked for n.
func (u *user) dropRequested(sk *socket, n string) {
	if _, ok := sk.requested[n]; !ok {
		return
	}
	delete(sk.requested, n)
	if u.refs[n]--; u.refs[n] <= 0 {
		delete(u.refs, n)
	}
}

func sameSet(list []string, set map[string]bool) bool {
	if len(list) != len(set) {
		return false
	}
	for _, n := range list {
		if !set[n] {
			return false
		}
	}
	return true
}

// maybeSync sends the agent the union of the sockets' names when it may
// not hold it.
func (u *user) maybeSync() {
	if u.subBusy {
		return
	}
	desired := u.union(nil)
	if !u.dirty && sameSet(desired, u.sent) {
		return
	}
	if !u.connected() {
		u.dirty = true // sent again when the agent connects
		return
	}
	u.startSync(desired, nil)
}

// startSync sends desired to the agent; op, when set, waits for the
// answer. One sync runs at a time; subscription frames wait for it.
func (u *user) startSync(desired []string, op *userOp) {
	u.subBusy = true
	u.pendingSub = op
	u.pendingSet = desired
	args, err := json.Marshal(protocol.SubscriptionsArgs{Instruments: desired})
	if err != nil {
		u.subDone <- callResult{err: err}
		return
	}
	s := u.srv
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, s.opts.SubscribeTimeout)
		defer cancel()
		res, err := s.opts.Upstream.Call(ctx, u.id, protocol.FnSetSubscriptions, "", args)
		u.subDone <- callResult{res: res, err: err}
	}()
}

func (u *user) subFinished(r callResult) {
	u.subBusy = false
	op := u.pendingSub
	u.pendingSub = nil
	var result protocol.SubscriptionsResult
	if r.err == nil {
		if err := json.Unmarshal(r.res, &result); err != nil {
			r.err = err
		}
	}
	if r.err != nil {
		u.dirty = true
		u.resyncAfter = false
		if u.connected() {
			// The platform may not be ready behind the agent yet.
			if u.retry == nil {
				u.retry = time.AfterFunc(syncRetryDelay, u.signalResync)
			} else {
				u.retry.Reset(syncRetryDelay)
			}
		}
		u.log.Warn("setting market-data subscriptions failed", zap.Int("instruments", len(u.pendingSet)), zap.Error(r.err))
		if op != nil && u.member(op.sk) {
			e, ok := tradecall.CallError(r.err, false)
			if !ok {
				e.Code, e.Detail = errcode.InternalError, "the relay failed to set the subscriptions"
			}
			op.sk.reply((&frameError{code: e.Code, detail: e.Detail}).encode(op.id, false))
		}
		return
	}
	mapping, unknown := resolveNames(u.pendingSet, result)
	u.resolved = mapping
	streamed := make(map[string]bool, len(mapping))
	for _, c := range mapping {
		streamed[c] = true
	}
	u.pruneQuotes(streamed)
	u.sent = make(map[string]bool, len(u.pendingSet))
	for _, n := range u.pendingSet {
		if !unknown[n] {
			u.sent[n] = true
		}
	}
	u.dirty = false
	// A root may now resolve to another contract (a roll).
	for sk := range u.sockets {
		changed := false
		for req, c := range sk.requested {
			if nc := mapping[req]; nc != c {
				sk.requested[req] = nc
				changed = true
			}
		}
		if changed {
			u.applySocket(sk)
		}
	}
	if op != nil && u.member(op.sk) {
		u.completeSubscribe(*op)
	}
	if u.resyncAfter {
		// The agent changed during the call: the answer may be the old
		// agent's.
		u.resyncAfter = false
		u.dirty = true
	}
	u.maybeSync()
}

// applySocket makes the socket's slots and routes match its requested
// names (none once it left). Only the routes of the contracts that changed
// are copied, so a change costs the sockets of those contracts, not all.
func (u *user) applySocket(sk *socket) { u.applySocketSeeded(sk, nil) }

// applySocketSeeded is applySocket whose new slots start at seq.
func (u *user) applySocketSeeded(sk *socket, seq map[string]uint64) {
	set := make(map[string]bool, len(sk.requested))
	if u.member(sk) {
		for _, c := range sk.requested {
			if c != "" {
				set[c] = true
			}
		}
	}
	slots := sk.setContracts(set, seq)
	var added, removed []string
	for c := range set {
		if !sk.routed[c] || slots[c] != nil {
			added = append(added, c) // new, or a new slot
		}
	}
	for c := range sk.routed {
		if !set[c] {
			removed = append(removed, c)
		}
	}
	if len(added) == 0 && len(removed) == 0 {
		return
	}
	sk.routed = set
	old := u.routes.Load()
	by := make(map[string][]route, len(old.by)+len(added))
	for c, rs := range old.by {
		by[c] = rs
	}
	without := func(c string) []route {
		rs := make([]route, 0, len(by[c])+1)
		for _, r := range by[c] {
			if r.sk != sk {
				rs = append(rs, r)
			}
		}
		return rs
	}
	for _, c := range removed {
		if rs := without(c); len(rs) == 0 {
			delete(by, c)
		} else {
			by[c] = rs
		}
	}
	for _, c := range added {
		by[c] = append(without(c), route{sk: sk, slot: slots[c]})
	}
	u.routes.Store(&routeTable{by: by})
}

func (u *user) statusChanged() {
	up := u.connected()
	for sk := range u.sockets {
		sk.setStatus(statusBody(up))
	}
	if !up {
		return
	}
	// A (re)connected agent may hold none of the subscriptions.
	if u.subBusy {
		u.resyncAfter = true
		return
	}
	u.dirty = true
	u.maybeSync()
}

// ---- P&L ----

type pnlUpdateFrame struct {
	Type     string                `json:"type"`
	Epoch    int64                 `json:"epoch"`
	Accounts []protocol.PnlAccount `json:"accounts"`
}

func (u *user) handlePnl(op userOp) {
	sk := op.sk
	if !u.member(sk) {
		return
	}
	sk.pnlOn, sk.pnlInterval, sk.pnlSent = op.enabled, op.interval, false
	if !op.enabled {
		sk.setPnl(nil) // nothing after the reply
	}
	// The poller is retuned before the reply, so a client that has read
	// the reply is polled at its interval from then on.
	u.retunePnl()
	sk.reply(mustJSON(pnlStreamingFrame{Type: typePnlStreaming, ID: op.id, Enabled: op.enabled, Interval: sk.pnlInterval.Milliseconds()}))
	if op.enabled {
		u.kick(sk)
	}
}

// retunePnl polls at the smallest interval any socket asks for, or not at
// all.
func (u *user) retunePnl() {
	var every time.Duration
	for sk := range u.sockets {
		if sk.pnlOn && (every == 0 || sk.pnlInterval < every) {
			every = sk.pnlInterval
		}
	}
	switch {
	case every == 0:
		if u.ticker != nil {
			u.ticker.Stop()
			u.ticker = nil
		}
	case u.ticker == nil:
		u.ticker = u.srv.opts.Clock.NewTicker(every)
	case every != u.pollEvery:
		u.ticker.Reset(every)
	}
	u.pollEvery = every
}

// kick gets a socket that just enabled P&L its first frame soon: the last
// snapshot when it is fresh, else a poll now (at most one per
// MinPnlInterval; a poll that is skipped leaves the socket to the next
// tick).
func (u *user) kick(sk *socket) {
	now := u.srv.opts.Clock.Now()
	if u.pnlCache != nil && now.Sub(u.pnlCacheAt) < MinPnlInterval {
		sk.setPnl(u.pnlCache)
		sk.pnlLast, sk.pnlSent = now, true
		return
	}
	u.poll(true)
}

// poll asks the agent for P&L, unless a poll runs or the agent is away.
// A kicked poll (not a tick's) waits MinPnlInterval after the last one.
func (u *user) poll(kicked bool) {
	if u.pnlBusy || u.pollEvery == 0 || !u.connected() {
		return
	}
	now := u.srv.opts.Clock.Now()
	if kicked && u.hasPolledYet && now.Sub(u.lastPollAt) < MinPnlInterval {
		return
	}
	u.pnlBusy, u.lastPollAt, u.hasPolledYet = true, now, true
	s := u.srv
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, s.opts.PnlTimeout)
		defer cancel()
		res, err := s.opts.Upstream.Call(ctx, u.id, protocol.FnGetPnl, "", json.RawMessage(`{}`))
		u.pnlDone <- callResult{res: res, err: err}
	}()
}

func (u *user) pnlFinished(r callResult) {
	u.pnlBusy = false
	if r.err != nil {
		u.log.Debug("polling P&L failed", zap.Error(r.err))
		return
	}
	var snap protocol.PnlSnapshot
	if err := json.Unmarshal(r.res, &snap); err != nil {
		u.log.Warn("the agent sent a malformed P&L snapshot", zap.Error(err))
		return
	}
	if snap.Accounts == nil {
		snap.Accounts = []protocol.PnlAccount{}
	}
	body := mustJSON(pnlUpdateFrame{Type: typePnlUpdate, Epoch: snap.Epoch, Accounts: snap.Accounts})
	now := u.srv.opts.Clock.Now()
	u.pnlCache, u.pnlCacheAt = body, now
	for sk := range u.sockets {
		if !sk.pnlOn {
			continue
		}
		// Half a poll of slack: ticks jitter, and a socket due a hair
		// late would otherwise wait a whole interval more.
		if !sk.pnlSent || now.Sub(sk.pnlLast) >= sk.pnlInterval-u.pollEvery/2 {
			sk.setPnl(body)
			sk.pnlLast, sk.pnlSent = now, true
		}
	}
}
