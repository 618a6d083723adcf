package activity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"

	"tradebridge/internal/lifecycle"
	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
	"tradebridge/relay/events"
	"tradebridge/relay/seqid"
	"tradebridge/relay/store"
	"tradebridge/relay/tradecall"
)

// Store is the part of store.Store the Recorder uses.
type Store interface {
	AppendActivities(ctx context.Context, entries []store.ActivityAppend) ([]store.ActivityAppended, error)
	LatestActivity(ctx context.Context, userID, kind string) (store.ActivityRecord, error)
	PruneActivity(ctx context.Context, before time.Time) (int, error)
	TrimActivity(ctx context.Context, userID, class string, keep int) (int, error)
}

// Clock is the Recorder's time source; *testkit.Clock implements it.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Defaults of Options.
const (
	DefaultRetention    = 90 * 24 * time.Hour
	DefaultPruneEvery   = time.Hour
	DefaultTradingCap   = 50_000
	DefaultAccountCap   = 50_000
	DefaultTrimEvery    = 100
	DefaultTrimInterval = time.Minute
	DefaultBatchDelay   = 10 * time.Millisecond
)

// Bounds of an entry; an entry beyond them is not recorded.
const (
	// maxSourceID and maxSourceName bound the source's id and name, in
	// runes.
	maxSourceID   = 64
	maxSourceName = 128
)

// Options configure a Recorder.
type Options struct {
	// Store is where the log is kept. Required.
	Store Store
	// Publisher is where each stored entry is published once
	// (events.TypeRecorded): the relay's spine. Required.
	Publisher events.Publisher
	// Logger receives the entries refused and the store's failures; the
	// Recorder logs as "activity". Nil means no logging.
	Logger *zap.Logger
	// Clock is the time of the pruning, of the trims and the bound of
	// the times agents report. Nil means the real clock.
	Clock Clock
	// Retention is how long an entry is kept. Default DefaultRetention
	// (90 days).
	Retention time.Duration
	// PruneEvery is how often Run forgets the entries older than
	// Retention. Default DefaultPruneEvery (an hour).
	PruneEvery time.Duration
	// TradingCap and AccountCap bound each user's entries of the trading
	// class and of the account class (see the package documentation).
	// Default 50,000 each.
	TradingCap, AccountCap int
	// TrimEvery is how many entries of one user and class the Recorder
	// writes between two trims of them. Default DefaultTrimEvery (100).
	TrimEvery int
	// TrimInterval is the least time between two trims of one user's
	// entries. Default DefaultTrimInterval (a minute).
	TrimInterval time.Duration
	// BatchDelay is how long the writer lets entries gather once one
	// waits, so that a busy log writes many in one transaction: the
	// entries are written and published at most this much later. Default
	// DefaultBatchDelay; negative writes at once.
	BatchDelay time.Duration
	// AlsoPrune, when set, is run with the log's prune, with the same
	// time: what is kept as long as the log (the TradingView alert
	// history, store.Store's PruneWebhookAlerts).
	AlsoPrune func(ctx context.Context, before time.Time) (int, error)
	// Disabled records nothing: Handle returns at once (Run still
	// prunes), and the relay's doors build no entries at all. For
	// measuring what the log costs the order path
	// (BenchmarkPlaceOrderActivity).
	Disabled bool
}

// ErrRunning refuses a second Run of a Recorder while one runs, or after
// Close.
var ErrRunning = errors.New("activity: the recorder runs already or is closed")

// writeTimeout bounds one write to the store.
const writeTimeout = 10 * time.Second

// Recorder records the activity log from the event spine (Handle) and
// prunes it (Run). It is safe for concurrent use.
type Recorder struct {
	opts Options
	log  *zap.Logger

	mu      sync.Mutex
	trims   map[trimKey]int      // entries written since the class's last trim
	trimmed map[string]time.Time // the user's last trim
	warned  map[string]time.Time // the user's last warning of a malformed report
	running bool                 // Run was called

	// The entries waiting for the writer, oldest first: the writer
	// takes all of them (up to maxBatch) and writes them in one
	// transaction. qmu guards them; moved signals a change of the queue
	// or of writing.
	qmu     sync.Mutex
	moved   *sync.Cond
	queue   []pending
	writing bool
	closed  bool
	// hurry cuts the writer's BatchDelay short (Flush, Close).
	hurry chan struct{}

	// group owns the writer and Run, which Close ends and waits for.
	group lifecycle.Group
}

// pending is an entry waiting for the writer.
type pending struct {
	userID string
	entry  protocol.ActivityEntry
	ref    string
	// build, when set, makes entry and ref (a door's deferred entry,
	// events.Event.Build): the writer runs it, so that neither the door
	// nor the spine's goroutine spends anything on it.
	build func() (protocol.ActivityEntry, string, bool)
}

// Bounds of the writer's queue and of one transaction.
const (
	// maxQueued entries wait for the writer at most; Handle waits for
	// room beyond (and the spine's per-user queue fills, then drops).
	maxQueued = 4096
	// maxBatch entries are written in one transaction at most.
	maxBatch = 256
)

type trimKey struct{ user, class string }

// New returns a Recorder; Run prunes the log.
func New(opts Options) (*Recorder, error) {
	if opts.Store == nil || opts.Publisher == nil {
		return nil, errors.New("activity: Options.Store and Options.Publisher are required")
	}
	if opts.Retention < 0 || opts.PruneEvery < 0 || opts.TradingCap < 0 || opts.AccountCap < 0 || opts.TrimEvery < 0 || opts.TrimInterval < 0 {
		return nil, errors.New("activity: Options durations and caps must not be negative")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	if opts.Retention == 0 {
		opts.Retention = DefaultRetention
	}
	if opts.PruneEvery == 0 {
		opts.PruneEvery = DefaultPruneEvery
	}
	if opts.TradingCap == 0 {
		opts.TradingCap = DefaultTradingCap
	}
	if opts.AccountCap == 0 {
		opts.AccountCap = DefaultAccountCap
	}
	if opts.TrimEvery == 0 {
		opts.TrimEvery = DefaultTrimEvery
	}
	if opts.TrimInterval == 0 {
		opts.TrimInterval = DefaultTrimInterval
	}
	if opts.BatchDelay == 0 {
		opts.BatchDelay = DefaultBatchDelay
	}
	r := &Recorder{opts: opts, log: opts.Logger.Named("activity"), trims: map[trimKey]int{}, trimmed: map[string]time.Time{},
		warned: map[string]time.Time{}}
	r.moved = sync.NewCond(&r.qmu)
	r.hurry = make(chan struct{}, 1)
	r.group.Go(r.write)
	return r, nil
}

// Kinds are the kinds of agent and broker events the Recorder takes
// (events.QueuedSubscription.Kinds).
var Kinds = []string{protocol.EventActivity}

// Types are the event types the Recorder takes
// (events.QueuedSubscription.Types).
var Types = []events.Type{events.TypeActivity, events.TypeSession, events.TypeAgent, events.TypeBroker}

// Handle records what e reports (the relay subscribes it, queued, to
// Types and Kinds); other events are ignored. It queues the entry for the
// Recorder's writer, which builds (a deferred entry), checks and writes
// the entries that gathered within BatchDelay in one transaction (so that
// a busy log costs one commit for many entries) and publishes each new
// one; Flush waits for them. It waits only when the writer is maxQueued
// entries behind.
func (r *Recorder) Handle(ctx context.Context, e events.Event) {
	if e.Remote || e.UserID == "" || r.opts.Disabled {
		return
	}
	switch e.Type {
	case events.TypeActivity:
		if e.Build != nil {
			r.enqueue(ctx, pending{userID: e.UserID, build: e.Build})
			return
		}
		r.record(ctx, e.UserID, e.Activity, e.Ref)
	case events.TypeAgent, events.TypeBroker:
		if e.Agent.Kind == protocol.EventActivity {
			r.report(ctx, e)
		}
	case events.TypeSession:
		r.session(ctx, e.Session)
	}
}

// engineKinds are the kinds the engines report.
var engineKinds = map[string]bool{
	protocol.ActivityCopierCopied: true, protocol.ActivityCopierHalted: true, protocol.ActivityMonitorTripped: true,
	protocol.ActivityKillSwitchChanged: true, protocol.ActivityNewsLockoutEntered: true, protocol.ActivityStrategyRefused: true,
	protocol.ActivityExitsPlaced: true, protocol.ActivityExitsFailed: true, protocol.ActivityMonitorBlind: true,
}

// engineSources are the sources the engines report as (a strategy lock
// is the agent's own).
var engineSources = map[string]bool{
	protocol.SourceCopier: true, protocol.SourceMonitor: true, protocol.SourceKillSwitch: true,
	protocol.SourceNewsLockout: true, protocol.SourceAgent: true,
}

// maxReportID bounds a report's id.
const maxReportID = 128

// report records an engine report of an agent (TypeAgent) or of the
// broker family (TypeBroker).
func (r *Recorder) report(ctx context.Context, e events.Event) {
	prefix := "agent:"
	if e.Type == events.TypeBroker {
		prefix = "broker:"
	}
	var entry protocol.ActivityEntry
	why := ""
	switch {
	case len(e.Agent.Data) > protocol.MaxActivityDetail+4<<10:
		why = "the report is too large"
	case json.Unmarshal(e.Agent.Data, &entry) != nil:
		why = "the report is not an activity entry"
	case entry.ID == "" || len(entry.ID) > maxReportID || !printable(entry.ID):
		why = "the report has no valid id"
	case !engineKinds[entry.Kind]:
		why = "the report's kind is not an engine's"
	case !engineSources[entry.Source.Kind]:
		why = "the report's source is not an engine"
	default:
		why = check(&entry)
	}
	if why != "" {
		r.malformed(e.UserID, prefix, why)
		return
	}
	if now := r.opts.Clock.Now(); entry.At.IsZero() || entry.At.After(now) {
		entry.At = now
	}
	ref := prefix + entry.ID
	entry.ID = ""
	r.record(ctx, e.UserID, entry, ref)
}

// malformed logs a malformed report, at most once a minute per user.
func (r *Recorder) malformed(userID, from, why string) {
	now := r.opts.Clock.Now()
	r.mu.Lock()
	last, seen := r.warned[userID]
	ok := !seen || now.Sub(last) >= time.Minute
	if ok {
		r.warned[userID] = now
	}
	r.mu.Unlock()
	if ok {
		r.log.Warn("engine report dropped: "+why, zap.String("user", userID), zap.String("from", strings.TrimSuffix(from, ":")))
	}
}

// session records a tunnel's start and end.
func (r *Recorder) session(ctx context.Context, s agentcall.SessionEvent) {
	if s.SessionID == "" {
		return
	}
	src := protocol.ActivitySource{Kind: protocol.SourceAgent}
	switch s.Kind {
	case agentcall.SessionStarted:
		ref := "session:" + s.SessionID + ":start"
		prev, err := r.latest(ctx, s.UserID, protocol.ActivityAgentConnected)
		if err != nil {
			r.log.Warn("reading the previous agent.connected", zap.String("user", s.UserID), zap.Error(err))
		}
		if prev.Ref == ref {
			return // recorded already
		}
		var was struct {
			AgentVersion string `json:"agentVersion"`
		}
		if prev.Seq != 0 && json.Unmarshal(prev.Detail, &was) == nil && was.AgentVersion != "" && was.AgentVersion != s.AgentVersion {
			r.record(ctx, s.UserID, protocol.ActivityEntry{At: s.At, Kind: protocol.ActivityAgentUpdated, Source: src,
				Summary: protocol.CutActivitySummary("Agent updated from " + was.AgentVersion + " to " + s.AgentVersion),
				Detail:  mustJSON(map[string]string{"from": was.AgentVersion, "to": s.AgentVersion})}, "session:"+s.SessionID+":updated")
		}
		summary := "Agent " + s.AgentVersion + " connected"
		if s.Platform != "" {
			summary += " (" + s.Platform + ")"
		}
		r.record(ctx, s.UserID, protocol.ActivityEntry{At: s.At, Kind: protocol.ActivityAgentConnected, Source: src,
			Summary: protocol.CutActivitySummary(summary),
			Detail: mustJSON(map[string]any{"agentVersion": s.AgentVersion, "protocolVersion": s.ProtocolVersion,
				"platform": s.Platform})}, ref)
	case agentcall.SessionEnded:
		r.record(ctx, s.UserID, protocol.ActivityEntry{At: s.At, Kind: protocol.ActivityAgentDisconnected, Source: src,
			Summary: "Agent disconnected (" + s.Reason + ")", Detail: mustJSON(map[string]string{"reason": s.Reason})},
			"session:"+s.SessionID+":end")
	}
}

// latest reads the user's newest entry of kind; the zero record when
// there is none.
func (r *Recorder) latest(ctx context.Context, userID, kind string) (store.ActivityRecord, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	prev, err := r.opts.Store.LatestActivity(ctx, userID, kind)
	if errors.Is(err, store.ErrNotFound) {
		return store.ActivityRecord{}, nil
	}
	return prev, err
}

// Class returns the class of an entry's kind (store.ActivityClassTrading
// for the trading doors' writes and refusals, the budgets' refusals and
// the TradingView alerts received and the exits the engines placed for
// entries; store.ActivityClassAccount for the rest).
func Class(kind string) string {
	switch kind {
	case protocol.ActivityOrderPlaced, protocol.ActivityOrderChanged, protocol.ActivityOrderRefused, protocol.ActivityOrderReplayed,
		protocol.ActivityTradingBlocked, protocol.ActivityBudgetRefused, protocol.ActivityWebhookReceived,
		protocol.ActivityExitsPlaced, protocol.ActivityExitsFailed:
		return store.ActivityClassTrading
	}
	return store.ActivityClassAccount
}

// record queues an entry for the writer, which checks it.
func (r *Recorder) record(ctx context.Context, userID string, entry protocol.ActivityEntry, ref string) {
	r.enqueue(ctx, pending{userID: userID, entry: entry, ref: ref})
}

// enqueue queues p for the writer; it waits while maxQueued wait already,
// until ctx ends.
func (r *Recorder) enqueue(ctx context.Context, p pending) {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	for len(r.queue) >= maxQueued && !r.closed && ctx.Err() == nil {
		r.moved.Wait()
	}
	if r.closed || len(r.queue) >= maxQueued {
		r.log.Warn("activity entry dropped: the log is closed or behind", zap.String("user", p.userID))
		return
	}
	r.queue = append(r.queue, p)
	r.moved.Broadcast()
}

// prepare builds a queued entry (when it is deferred), checks it and
// returns its record; ok is false when there is nothing to record.
func (r *Recorder) prepare(p *pending) (store.ActivityRecord, bool) {
	if p.build != nil {
		e, ref, ok := p.build()
		if !ok {
			return store.ActivityRecord{}, false
		}
		p.entry, p.ref, p.build = e, ref, nil
	}
	if why := check(&p.entry); why != "" {
		r.log.Warn("activity entry refused: "+why, zap.String("user", p.userID), zap.String("kind", safeKind(p.entry.Kind)))
		return store.ActivityRecord{}, false
	}
	e := &p.entry
	e.At = time.UnixMilli(e.At.UnixMilli()).UTC()
	if len(e.Detail) == 0 || bytes.Equal(e.Detail, []byte("null")) {
		e.Detail = json.RawMessage(`{}`)
	}
	return store.ActivityRecord{At: e.At, Kind: e.Kind, Class: Class(e.Kind), Account: e.Account,
		SourceKind: e.Source.Kind, SourceID: e.Source.ID, SourceName: e.Source.Name, Summary: e.Summary,
		Detail: e.Detail, Ref: p.ref}, true
}

// write is the writer: it writes the queued entries, all that wait at
// once (up to maxBatch) in one transaction, until the Recorder closes and
// its queue is empty.
func (r *Recorder) write(context.Context) {
	delay := time.NewTimer(0)
	<-delay.C
	for {
		r.qmu.Lock()
		for len(r.queue) == 0 && !r.closed {
			r.moved.Wait()
		}
		if len(r.queue) == 0 {
			r.qmu.Unlock()
			return
		}
		if len(r.queue) < maxBatch && !r.closed && r.opts.BatchDelay > 0 {
			// Let more gather, unless someone waits for these.
			r.qmu.Unlock()
			delay.Reset(r.opts.BatchDelay)
			select {
			case <-delay.C:
			case <-r.hurry:
				if !delay.Stop() {
					<-delay.C
				}
			}
			r.qmu.Lock()
		}
		n := min(len(r.queue), maxBatch)
		batch := r.queue[:n:n]
		r.queue = r.queue[n:]
		if len(r.queue) == 0 {
			r.queue = nil
		}
		r.writing = true
		r.moved.Broadcast()
		r.qmu.Unlock()

		r.store(batch)

		r.qmu.Lock()
		r.writing = false
		r.moved.Broadcast()
		r.qmu.Unlock()
	}
}

// store writes a batch of entries, then publishes the new ones with their
// ids and keeps their users' classes within their caps. The write is
// bounded by writeTimeout, not by the Recorder's end: an entry taken
// before Close is written all the same.
func (r *Recorder) store(batch []pending) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	in := make([]store.ActivityAppend, 0, len(batch))
	kept := batch[:0]
	for i := range batch {
		if rec, ok := r.prepare(&batch[i]); ok {
			in = append(in, store.ActivityAppend{UserID: batch[i].userID, Record: rec})
			kept = append(kept, batch[i])
		}
	}
	if len(in) == 0 {
		return
	}
	got, err := r.opts.Store.AppendActivities(ctx, in)
	if err != nil {
		r.log.Warn("recording activity", zap.Int("entries", len(in)), zap.Error(err))
		return
	}
	for i, p := range kept {
		switch {
		case errors.Is(got[i].Err, store.ErrNotFound):
			r.log.Debug("activity of an unknown user", zap.String("kind", p.entry.Kind))
			continue
		case !got[i].Inserted:
			continue
		}
		p.entry.ID = EntryID(got[i].Seq)
		r.opts.Publisher.Publish(events.Event{Type: events.TypeRecorded, UserID: p.userID, Activity: p.entry})
		r.maybeTrim(ctx, p.userID, in[i].Record.Class)
	}
}

// hasten cuts the writer's BatchDelay short.
func (r *Recorder) hasten() {
	select {
	case r.hurry <- struct{}{}:
	default:
	}
}

// Flush waits until the entries handed to Handle so far are written and
// published, or until ctx ends (it then returns ctx's error).
func (r *Recorder) Flush(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		r.qmu.Lock()
		r.moved.Broadcast()
		r.qmu.Unlock()
	})
	defer stop()
	r.hasten()
	r.qmu.Lock()
	defer r.qmu.Unlock()
	for len(r.queue) > 0 || r.writing {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.moved.Wait()
	}
	return nil
}

// maybeTrim trims the user's class to its cap after every TrimEvery-th
// entry of it, at most once per TrimInterval per user.
func (r *Recorder) maybeTrim(ctx context.Context, userID, class string) {
	now := r.opts.Clock.Now()
	k := trimKey{userID, class}
	r.mu.Lock()
	r.trims[k]++
	due := r.trims[k] >= r.opts.TrimEvery && now.Sub(r.trimmed[userID]) >= r.opts.TrimInterval
	if due {
		r.trims[k] = 0
		r.trimmed[userID] = now
	}
	r.mu.Unlock()
	if !due {
		return
	}
	keep := r.opts.AccountCap
	if class == store.ActivityClassTrading {
		keep = r.opts.TradingCap
	}
	n, err := r.opts.Store.TrimActivity(ctx, userID, class, keep)
	switch {
	case err != nil:
		r.log.Warn("trimming activity to its cap", zap.String("user", userID), zap.String("class", class), zap.Error(err))
	case n > 0:
		r.log.Debug("trimmed activity to its cap", zap.String("user", userID), zap.String("class", class), zap.Int("count", n))
	}
}

// EntryID is the id of the entry of seq: "act_<seq>".
func EntryID(seq int64) string { return seqid.Format(entryPrefix, seq) }

// ParseEntryID returns the seq of an entry id, and false when id is not
// one.
func ParseEntryID(id string) (int64, bool) { return seqid.Parse(entryPrefix, id) }

// entryPrefix is the prefix of the entries' ids.
const entryPrefix = "act_"

// Run prunes the log now and then every PruneEvery, until ctx ends or
// Close is called, and returns nil. A Recorder runs once: ErrRunning if it
// runs already or was closed.
func (r *Recorder) Run(ctx context.Context) error {
	r.mu.Lock()
	again := r.running
	r.running = true
	r.mu.Unlock()
	if again {
		return ErrRunning
	}
	ctx, leave, ok := r.group.Enter(ctx)
	if !ok {
		return ErrRunning
	}
	defer leave()
	t := time.NewTicker(r.opts.PruneEvery)
	defer t.Stop()
	for {
		r.prune(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Close writes the entries still queued (each write bounded by
// writeTimeout), stops Run and the writer, and waits for them; later
// entries are dropped. It is idempotent.
func (r *Recorder) Close() error {
	r.qmu.Lock()
	r.closed = true
	r.moved.Broadcast()
	r.qmu.Unlock()
	r.hasten()
	r.group.Close()
	return nil
}

// prune forgets the entries older than the retention, and the trim and
// warning marks older than the trim interval and a minute.
func (r *Recorder) prune(ctx context.Context) {
	now := r.opts.Clock.Now()
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	n, err := r.opts.Store.PruneActivity(wctx, now.Add(-r.opts.Retention))
	switch {
	case err != nil && ctx.Err() == nil:
		r.log.Warn("pruning the activity log", zap.Error(err))
	case n > 0:
		r.log.Info("pruned the activity log", zap.Int("count", n))
	}
	if r.opts.AlsoPrune != nil {
		n, err := r.opts.AlsoPrune(wctx, now.Add(-r.opts.Retention))
		switch {
		case err != nil && ctx.Err() == nil:
			r.log.Warn("pruning with the activity log", zap.Error(err))
		case n > 0:
			r.log.Info("pruned with the activity log", zap.Int("count", n))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for u, at := range r.trimmed {
		if now.Sub(at) >= r.opts.TrimInterval {
			delete(r.trimmed, u)
		}
	}
	for u, at := range r.warned {
		if now.Sub(at) >= time.Minute {
			delete(r.warned, u)
		}
	}
}

// check validates an entry for the log and returns why it is refused, or
// "".
func check(e *protocol.ActivityEntry) string {
	switch {
	case !protocol.ValidActivityKind(e.Kind):
		return "unknown kind"
	case !slices.Contains(protocol.ActivitySourceKinds, e.Source.Kind):
		return "unknown source kind"
	case e.Summary == "" || !utf8.ValidString(e.Summary) || utf8.RuneCountInString(e.Summary) > protocol.MaxActivitySummary:
		return "the summary must be 1 to 200 characters"
	case e.Account != "" && !tradecall.ValidName(e.Account):
		return "the account is not an account name"
	case utf8.RuneCountInString(e.Source.ID) > maxSourceID || !utf8.ValidString(e.Source.ID) ||
		utf8.RuneCountInString(e.Source.Name) > maxSourceName || !utf8.ValidString(e.Source.Name):
		return "the source's id or name is too long"
	case len(e.Detail) > protocol.MaxActivityDetail:
		return "the detail is larger than 8 KiB"
	}
	if d := bytes.TrimSpace(e.Detail); len(d) > 0 && !bytes.Equal(d, []byte("null")) {
		// A valid JSON text that opens with a brace is an object.
		if d[0] != '{' || !json.Valid(d) {
			return "the detail is not a JSON object"
		}
		e.Detail = json.RawMessage(d)
	}
	return ""
}

func printable(s string) bool {
	for _, c := range s {
		if !unicode.IsPrint(c) {
			return false
		}
	}
	return true
}

// safeKind is what a log line shows of a kind: a known one, or
// "(unknown)".
func safeKind(k string) string {
	if protocol.ValidActivityKind(k) {
		return k
	}
	return "(unknown)"
}

// mustJSON encodes v, a detail the Recorder makes; {} if it cannot.
func mustJSON(v any) json.RawMessage {
	b, err := protocol.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}
