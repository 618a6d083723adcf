// Package alerts tells users when something on their account matters: it
// sends the activity log's entries that a user's alert destinations ask
// for (a webhook, a Discord channel, a Telegram chat, an email address;
// the Management API's /v1/api/manage/alerts) and records each outcome in
// the activity log.
//
// The Dispatcher takes the entries the activity log recorded on this
// node (events.TypeRecorded, a queued subscription of the spine) and
// stores one delivery per entry and destination that asks for its kind
// (relay/store's alert_deliveries, once per entry), with the exact body
// every attempt sends. Any node then sends it: a node claims a
// destination's due deliveries under a lease of the store, so that each
// is sent by one node, and serves each destination on a goroutine of its
// own, so that a slow or dead destination delays no other.
//
// Delivery is at least once: an attempt that fails with a timeout, a
// connection error, 408, 429 or 5xx is tried again with backoff for
// RetryFor (24 hours); any other answer fails the delivery at once. The
// delivery's id (X-Tradebridge-Delivery) lets a receiver drop a
// duplicate. The outcome is an activity entry, alert.sent or alert.failed
// (never itself alerted).
//
// Each destination takes at most RateLimit messages a Window (6 a
// minute); the window's further entries become one summary message at its
// end ("12 more events: 10 order.refused, 2 trading.blocked").
// agent.disconnected waits the destination's grace: if the agent is back
// by then, nothing is sent.
//
// User-given URLs (a webhook's) are checked when set (CheckURL) and at
// every connection, on the address dialed (no loopback, private,
// link-local, CGNAT, unique-local, unspecified or multicast address unless
// AllowPrivate; no redirect followed), so that no name resolving there,
// now or later, reaches the relay's own network.
package alerts

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/internal/backoff"
	"tradebridge/internal/lifecycle"
	"tradebridge/protocol"
	"tradebridge/relay/activity"
	"tradebridge/relay/events"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
)

// ResourceKind is the destinations' kind among the management resources
// in the store (manage's Kind.Name).
const ResourceKind = "alert"

// Store is what the Dispatcher needs of the relay's store; store.Store
// implements it.
type Store interface {
	ManagedState(ctx context.Context, userID string) (store.ManagedState, error)
	Resource(ctx context.Context, userID, kind, id string) (store.Resource, error)
	QueueAlertDelivery(ctx context.Context, d store.AlertDelivery, w store.AlertWindow) (string, error)
	DueAlertDestinations(ctx context.Context, now time.Time, limit int) ([]string, error)
	ClaimAlertDeliveries(ctx context.Context, destinationID, node string, now time.Time, lease time.Duration, limit int) ([]store.AlertDelivery, error)
	FinishAlertAttempt(ctx context.Context, node string, d store.AlertDelivery) error
	FoldedAlertKinds(ctx context.Context, destinationID string, from, until time.Time) (map[string]int, error)
	PruneAlertDeliveries(ctx context.Context, before time.Time) (int, error)
}

// Options configure a Dispatcher.
type Options struct {
	// Store keeps the destinations and the deliveries. Required.
	Store Store
	// Publisher takes the outcomes (alert.sent, alert.failed activity
	// entries); the relay's event spine. Required.
	Publisher events.Publisher
	// Connected reports whether the user's agent is connected now, on any
	// node (the hub, or the cluster); nil means never, so that every
	// agent.disconnected is sent after its grace.
	Connected func(userID string) bool
	// Keys open the destinations' sealed secrets (the broker's key ring).
	Keys *sealed.Keyring
	// Node names this relay node in the deliveries' leases. Default
	// "local".
	Node string
	// AllowPrivate lets webhooks on loopback and private addresses, over
	// plain http too (relay serve --alerts-allow-private).
	AllowPrivate bool
	// SMTP is the operator's mail server; without it email destinations
	// cannot be created.
	SMTP SMTP
	// DiscordURL and TelegramURL are the bases of Discord's and Telegram's
	// APIs. Defaults DefaultDiscordURL, DefaultTelegramURL.
	DiscordURL, TelegramURL string
	// Timeout bounds one attempt. Default 10 s.
	Timeout time.Duration
	// Lease is how long a node holds the deliveries it claims. Default
	// 4 × Timeout.
	Lease time.Duration
	// TLS configures TLS to webhooks and the Discord and Telegram bases;
	// nil uses the system's roots. Tests set RootCAs.
	TLS *tls.Config
	// RetryFor is how long a delivery is tried. Default 24 h.
	RetryFor time.Duration
	// RetryMin and RetryMax bound the backoff between attempts (full
	// jitter, doubling). Defaults 5 s and 10 min.
	RetryMin, RetryMax time.Duration
	// RateLimit is how many messages a destination takes a Window before
	// the rest become the window's summary. Defaults 6 and 1 minute.
	RateLimit int
	Window    time.Duration
	// PollInterval is how often the store is asked for due deliveries
	// (new ones of this node are sent at once). Default 1 s.
	PollInterval time.Duration
	// MaxSenders bounds the destinations served at once. Default 32.
	MaxSenders int
	// Keep is how long finished deliveries are kept. Default 7 days.
	Keep time.Duration
	// CacheTTL is how long a user's destinations read from the store
	// are trusted by Handle, so that a busy user's entries do not each
	// read the store: a change made through this node applies at once
	// (Changed), one made through another node within CacheTTL. Default
	// DefaultCacheTTL.
	CacheTTL time.Duration
	// Clock gives the time of deliveries and their due times; nil means
	// time.Now. The leases are by the store's clock.
	Clock func() time.Time
	// Logger may be nil.
	Logger *zap.Logger
}

// Defaults of Options.
const (
	DefaultDiscordURL   = "https://discord.com"
	DefaultTelegramURL  = "https://api.telegram.org"
	DefaultTimeout      = 10 * time.Second
	DefaultRetryFor     = 24 * time.Hour
	DefaultRetryMin     = 5 * time.Second
	DefaultRetryMax     = 10 * time.Minute
	DefaultRateLimit    = 6
	DefaultWindow       = time.Minute
	DefaultPollInterval = time.Second
	DefaultMaxSenders   = 32
	DefaultKeep         = 7 * 24 * time.Hour
	DefaultCacheTTL     = 2 * time.Second
)

// maxCachedUsers bounds the users whose destinations the Dispatcher
// keeps.
const maxCachedUsers = 10_000

// entrySeq returns the activity log's seq of an entry id; 0 when it is
// none (the delivery's id alone then makes the delivery once).
func entrySeq(id string) int64 {
	seq, _ := activity.ParseEntryID(id)
	return seq
}

// ErrInvalidOptions reports Options without a Store or a Publisher.
var ErrInvalidOptions = errors.New("alerts: Options.Store and Publisher are required")

// ErrNotFound reports a destination that does not exist.
var ErrNotFound = errors.New("alerts: no such destination")

// Dispatcher stores and sends the alerts. Create it with New, subscribe
// Handle to the spine's TypeRecorded events (local ones only), Run it,
// and Close it after the spine stops calling Handle.
type Dispatcher struct {
	opts  Options
	log   *zap.Logger
	hooks *http.Client // webhooks: guarded
	apis  *http.Client // the operator's Discord and Telegram bases
	wake  chan struct{}
	group lifecycle.Group

	mu   sync.Mutex
	busy map[string]bool // destinations being served by this node

	cmu    sync.Mutex
	cached map[string]cachedDestinations // by user
	// changes counts Changed calls: a read that began before one is not
	// kept, as it may predate the change.
	changes uint64
}

// cachedDestinations are a user's destinations as read at a time (by
// the monotonic clock, whatever Options.Clock says).
type cachedDestinations struct {
	at    time.Time
	dests []Destination
}

// New returns a Dispatcher.
func New(opts Options) (*Dispatcher, error) {
	if opts.Store == nil || opts.Publisher == nil {
		return nil, ErrInvalidOptions
	}
	if err := opts.SMTP.Check(); err != nil {
		return nil, err
	}
	if opts.Connected == nil {
		opts.Connected = func(string) bool { return false }
	}
	if opts.Node == "" {
		opts.Node = "local"
	}
	if opts.DiscordURL == "" {
		opts.DiscordURL = DefaultDiscordURL
	}
	if opts.TelegramURL == "" {
		opts.TelegramURL = DefaultTelegramURL
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.Timeout, DefaultTimeout)
	def(&opts.Lease, 4*opts.Timeout)
	def(&opts.RetryFor, DefaultRetryFor)
	def(&opts.RetryMin, DefaultRetryMin)
	def(&opts.RetryMax, DefaultRetryMax)
	def(&opts.Window, DefaultWindow)
	def(&opts.PollInterval, DefaultPollInterval)
	def(&opts.Keep, DefaultKeep)
	def(&opts.CacheTTL, DefaultCacheTTL)
	if opts.RateLimit <= 0 {
		opts.RateLimit = DefaultRateLimit
	}
	if opts.MaxSenders <= 0 {
		opts.MaxSenders = DefaultMaxSenders
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	return &Dispatcher{
		opts:   opts,
		log:    opts.Logger.Named("alerts"),
		hooks:  newClient(opts.Timeout, opts.TLS, true, opts.AllowPrivate),
		apis:   newClient(opts.Timeout, opts.TLS, false, true),
		wake:   make(chan struct{}, 1),
		busy:   map[string]bool{},
		cached: map[string]cachedDestinations{},
	}, nil
}

// AllowPrivate reports whether webhooks may be on private addresses.
func (d *Dispatcher) AllowPrivate() bool { return d.opts.AllowPrivate }

// EmailEnabled reports whether the operator configured a mail server.
func (d *Dispatcher) EmailEnabled() bool { return d.opts.SMTP.Enabled() }

// now is the time of deliveries, to the millisecond, in UTC.
func (d *Dispatcher) now() time.Time { return d.opts.Clock().UTC().Truncate(time.Millisecond) }

// Payload is the JSON body of a delivery: the activity entry, without its
// source. A webhook receives it as is; the chat and email transports word
// it.
type Payload struct {
	// ID is the activity entry's id; a test's or a summary's is the
	// delivery's.
	ID      string          `json:"id"`
	At      time.Time       `json:"at"`
	Kind    string          `json:"kind"`
	Account string          `json:"account,omitempty"`
	Summary string          `json:"summary"`
	Detail  json.RawMessage `json:"detail"`
}

// deliveryID is the id of the delivery of an entry (or a window's
// summary) to a destination: the same on every node and every retry of
// Handle, so that it is stored once.
func deliveryID(parts ...string) string {
	sum := sha256.Sum256([]byte("tradebridge/alerts/delivery\x00" + strings.Join(parts, "\x00")))
	return "dlv_" + hex.EncodeToString(sum[:12])
}

// Handle takes an event of the spine: for an entry the activity log
// recorded on this node (TypeRecorded, not Remote), it stores a delivery
// to each of the user's active destinations that asks for the entry's
// kind. An agent.disconnected is due after the destination's grace. Other
// events, and the alerts' own entries, are ignored.
func (d *Dispatcher) Handle(ctx context.Context, ev events.Event) {
	if ev.Type != events.TypeRecorded || ev.Remote || !Alertable(ev.Activity.Kind) {
		return
	}
	dests, err := d.cachedDestinations(ctx, ev.UserID)
	if err != nil {
		d.log.Warn("reading alert destinations", zap.Error(err))
		return
	}
	e := ev.Activity
	detail := e.Detail
	if len(detail) == 0 {
		detail = json.RawMessage("{}")
	}
	body, err := json.Marshal(Payload{ID: e.ID, At: e.At.UTC(), Kind: e.Kind, Account: e.Account, Summary: e.Summary, Detail: detail})
	if err != nil {
		d.log.Warn("encoding an alert", zap.Error(err))
		return
	}
	now := d.now()
	queued := false
	for i := range dests {
		dst := &dests[i]
		if !dst.Wants(e.Kind) {
			continue
		}
		next := now
		if e.Kind == protocol.ActivityAgentDisconnected {
			next = now.Add(time.Duration(dst.GraceSeconds) * time.Second)
		}
		start := now.Truncate(d.opts.Window)
		w := store.AlertWindow{Max: d.opts.RateLimit, Start: start, End: start.Add(d.opts.Window),
			SummaryID: deliveryID(dst.ID, "summary", strconv.FormatInt(start.UnixMilli(), 10))}
		dl := store.AlertDelivery{ID: deliveryID(dst.ID, e.ID), UserID: ev.UserID, DestinationID: dst.ID,
			EntrySeq: entrySeq(e.ID), Kind: e.Kind, Body: body, NextAt: next, CreatedAt: now}
		_, err := d.opts.Store.QueueAlertDelivery(ctx, dl, w)
		switch {
		case errors.Is(err, store.ErrConflict):
			// Stored already (the entry handled twice).
		case err != nil:
			d.log.Warn("storing an alert delivery", zap.String("destination", dst.ID), zap.Error(err))
		default:
			queued = true
		}
	}
	if queued {
		d.poke()
	}
}

// Test stores a test delivery to one of the user's destinations, due at
// once, whether or not the destination is active, and returns its id.
func (d *Dispatcher) Test(ctx context.Context, userID, destinationID string) (string, error) {
	now := d.now()
	id := deliveryID(destinationID, "test", strconv.FormatInt(now.UnixNano(), 10), randomHex())
	body, err := json.Marshal(Payload{ID: id, At: now, Kind: PayloadTest, Summary: "Test alert from tradebridge: this destination works",
		Detail: json.RawMessage(`{"destinationId":"` + destinationID + `"}`)})
	if err != nil {
		return "", err
	}
	_, err = d.opts.Store.QueueAlertDelivery(ctx, store.AlertDelivery{ID: id, UserID: userID, DestinationID: destinationID,
		Kind: PayloadTest, Body: body, NextAt: now, CreatedAt: now}, store.AlertWindow{})
	if err != nil {
		return "", err
	}
	d.poke()
	return id, nil
}

// poke wakes Run to look for due deliveries now.
func (d *Dispatcher) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// destinations returns the user's alert destinations as stored.
// cachedDestinations returns the user's destinations as read within
// CacheTTL, or reads them.
func (d *Dispatcher) cachedDestinations(ctx context.Context, userID string) ([]Destination, error) {
	now := time.Now()
	d.cmu.Lock()
	c, ok := d.cached[userID]
	changes := d.changes
	d.cmu.Unlock()
	if ok && now.Sub(c.at) < d.opts.CacheTTL {
		return c.dests, nil
	}
	dests, err := d.destinations(ctx, userID)
	if err != nil {
		return nil, err
	}
	d.cmu.Lock()
	defer d.cmu.Unlock()
	if d.changes != changes {
		return dests, nil // read while a change was made: used once, not kept
	}
	if len(d.cached) >= maxCachedUsers {
		for u, c := range d.cached {
			if now.Sub(c.at) >= d.opts.CacheTTL {
				delete(d.cached, u)
			}
		}
		if len(d.cached) >= maxCachedUsers {
			clear(d.cached)
		}
	}
	d.cached[userID] = cachedDestinations{at: now, dests: dests}
	return dests, nil
}

// Changed forgets what the Dispatcher read of the user's destinations:
// the Management API calls it once it stored a change of one.
func (d *Dispatcher) Changed(userID string) {
	d.cmu.Lock()
	delete(d.cached, userID)
	d.changes++
	d.cmu.Unlock()
}

// destinations reads the user's destinations.
func (d *Dispatcher) destinations(ctx context.Context, userID string) ([]Destination, error) {
	ms, err := d.opts.Store.ManagedState(ctx, userID)
	if err != nil {
		return nil, err
	}
	var out []Destination
	for _, r := range ms.Resources {
		if r.Kind != ResourceKind {
			continue
		}
		var dst Destination
		if err := json.Unmarshal(r.Body, &dst); err != nil {
			return nil, fmt.Errorf("alerts: stored destination: %w", err)
		}
		dst.ID = r.ID
		out = append(out, dst)
	}
	return out, nil
}

// destination returns one of the user's destinations; ErrNotFound when
// it was deleted.
func (d *Dispatcher) destination(ctx context.Context, userID, id string) (*Destination, error) {
	r, err := d.opts.Store.Resource(ctx, userID, ResourceKind, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var dst Destination
	if err := json.Unmarshal(r.Body, &dst); err != nil {
		return nil, fmt.Errorf("alerts: stored destination: %w", err)
	}
	dst.ID = id
	return &dst, nil
}

// Run sends the due deliveries until ctx ends or Close: every
// PollInterval, and at once when this node stores one, it asks the store
// for destinations with due deliveries and serves each that is not being
// served on a goroutine of its own, up to MaxSenders at once. It also
// forgets finished deliveries older than Keep, hourly.
func (d *Dispatcher) Run(ctx context.Context) error {
	ctx, leave, ok := d.group.Enter(ctx)
	if !ok {
		return nil
	}
	defer leave()
	tick := time.NewTicker(d.opts.PollInterval)
	defer tick.Stop()
	var pruned time.Time
	for {
		d.dispatch(ctx)
		if now := d.now(); now.Sub(pruned) > time.Hour {
			pruned = now
			if _, err := d.opts.Store.PruneAlertDeliveries(ctx, now.Add(-d.opts.Keep)); err != nil && ctx.Err() == nil {
				d.log.Warn("pruning alert deliveries", zap.Error(err))
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-d.wake:
		}
	}
}

// dispatch starts a sender for each destination with due deliveries that
// this node does not serve yet.
func (d *Dispatcher) dispatch(ctx context.Context) {
	ids, err := d.opts.Store.DueAlertDestinations(ctx, d.now(), d.opts.MaxSenders*2)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("looking for due alerts", zap.Error(err))
		}
		return
	}
	for _, id := range ids {
		d.mu.Lock()
		if d.busy[id] || len(d.busy) >= d.opts.MaxSenders {
			d.mu.Unlock()
			continue
		}
		d.busy[id] = true
		d.mu.Unlock()
		if !d.group.Go(func(ctx context.Context) { d.serve(ctx, id) }) {
			d.mu.Lock()
			delete(d.busy, id)
			d.mu.Unlock()
			return
		}
	}
}

// serve sends a destination's due deliveries one by one, each claimed
// under the lease, until none is due.
func (d *Dispatcher) serve(ctx context.Context, destinationID string) {
	defer func() {
		d.mu.Lock()
		delete(d.busy, destinationID)
		d.mu.Unlock()
	}()
	for ctx.Err() == nil {
		got, err := d.opts.Store.ClaimAlertDeliveries(ctx, destinationID, d.opts.Node, d.now(), d.opts.Lease, 1)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("claiming alert deliveries", zap.Error(err))
			}
			return
		}
		if len(got) == 0 {
			return
		}
		d.attempt(ctx, got[0])
	}
}

// attempt makes one attempt of a claimed delivery and records it.
func (d *Dispatcher) attempt(ctx context.Context, dl store.AlertDelivery) {
	log := d.log.With(zap.String("delivery", dl.ID), zap.String("destination", dl.DestinationID))
	finish := func(state, reason string) {
		dl.State, dl.LastError, dl.UpdatedAt = state, reason, d.now()
		if err := d.opts.Store.FinishAlertAttempt(context.WithoutCancel(ctx), d.opts.Node, dl); err != nil {
			log.Warn("recording an alert attempt", zap.Error(err))
		}
	}
	dst, err := d.destination(ctx, dl.UserID, dl.DestinationID)
	switch {
	case errors.Is(err, ErrNotFound):
		finish(store.AlertCancelled, "destination_deleted")
		return
	case err != nil:
		log.Warn("reading an alert destination", zap.Error(err))
		dl.NextAt = d.now().Add(d.opts.RetryMin)
		finish(store.AlertPending, "storage_error")
		return
	}
	if dl.Kind == protocol.ActivityAgentDisconnected && d.opts.Connected(dl.UserID) {
		finish(store.AlertCancelled, "agent_reconnected")
		return
	}
	if !dst.Active && dl.Kind != PayloadTest {
		finish(store.AlertCancelled, "destination_inactive")
		return
	}
	if dl.Kind == PayloadSummary && len(dl.Body) == 0 {
		body, err := d.summaryBody(ctx, &dl)
		if err != nil {
			log.Warn("summing up folded alerts", zap.Error(err))
			dl.NextAt = d.now().Add(d.opts.RetryMin)
			finish(store.AlertPending, "storage_error")
			return
		}
		dl.Body = body
	}
	sctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	err = d.send(sctx, dst, &dl)
	cancel()
	dl.Attempts++
	now := d.now()
	if err == nil {
		finish(store.AlertSent, "")
		d.outcome(dst, &dl, protocol.ActivityAlertSent, "")
		return
	}
	se := classify(err)
	if ctx.Err() != nil {
		// Shutting down: the attempt does not count; another node, or
		// this one after a restart, tries again.
		dl.Attempts--
		dl.NextAt = now
		finish(store.AlertPending, se.reason)
		return
	}
	if !se.retryable || now.Sub(dl.CreatedAt) >= d.opts.RetryFor {
		finish(store.AlertFailed, se.reason)
		d.outcome(dst, &dl, protocol.ActivityAlertFailed, se.reason)
		log.Info("alert not delivered", zap.String("reason", se.reason), zap.Int("attempts", dl.Attempts))
		return
	}
	b := backoff.Backoff{Min: d.opts.RetryMin, Max: d.opts.RetryMax}
	for i := 1; i < dl.Attempts; i++ {
		b.Next()
	}
	dl.NextAt = now.Add(max(b.Next(), se.after))
	finish(store.AlertPending, se.reason)
}

// summaryBody words a window's summary: how many entries it folded, of
// which kinds. The window ends at the summary's due time.
func (d *Dispatcher) summaryBody(ctx context.Context, dl *store.AlertDelivery) ([]byte, error) {
	until := dl.NextAt
	from := until.Add(-d.opts.Window)
	kinds, err := d.opts.Store.FoldedAlertKinds(ctx, dl.DestinationID, from, until)
	if err != nil {
		return nil, err
	}
	return json.Marshal(summaryPayload(dl.ID, from, until, kinds))
}

// summaryPayload is the summary of the entries of a window past the rate
// limit: "12 more events: 10 order.refused, 2 trading.blocked", the most
// frequent kind first.
func summaryPayload(id string, from, until time.Time, kinds map[string]int) Payload {
	type kc struct {
		kind string
		n    int
	}
	var list []kc
	total := 0
	for k, n := range kinds {
		list = append(list, kc{k, n})
		total += n
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].n != list[j].n {
			return list[i].n > list[j].n
		}
		return list[i].kind < list[j].kind
	})
	parts := make([]string, len(list))
	for i, x := range list {
		parts[i] = strconv.Itoa(x.n) + " " + x.kind
	}
	word := "events"
	if total == 1 {
		word = "event"
	}
	detail, _ := json.Marshal(map[string]any{"count": total, "kinds": kinds, "from": from.UTC(), "until": until.UTC()})
	return Payload{ID: id, At: until.UTC(), Kind: PayloadSummary,
		Summary: fmt.Sprintf("%d more %s: %s", total, word, strings.Join(parts, ", ")), Detail: detail}
}

// send makes one attempt to the destination.
func (d *Dispatcher) send(ctx context.Context, dst *Destination, dl *store.AlertDelivery) error {
	sec, err := Open(d.opts.Keys, dl.UserID, dst)
	if err != nil {
		return &sendError{reason: "secret_unavailable"}
	}
	var p Payload
	if err := json.Unmarshal(dl.Body, &p); err != nil {
		return &sendError{reason: "invalid_body"}
	}
	m := &Message{DeliveryID: dl.ID, Kind: p.Kind, At: p.At, Account: p.Account, Summary: p.Summary, Detail: p.Detail}
	switch dst.Kind {
	case KindWebhook:
		if sec.Secret == "" {
			return &sendError{reason: "secret_unavailable"}
		}
		return sendWebhook(ctx, d.hooks, dst.URL, sec.Secret, dl.ID, dl.Body)
	case KindDiscord:
		return sendDiscord(ctx, d.apis, d.opts.DiscordURL, sec.URL, m)
	case KindTelegram:
		return sendTelegram(ctx, d.apis, d.opts.TelegramURL, sec.BotToken, dst.ChatID, m)
	case KindEmail:
		if !d.opts.SMTP.Enabled() {
			return &sendError{reason: "smtp_not_configured"}
		}
		return sendEmail(ctx, d.opts.SMTP, d.opts.Timeout, dst.To, m, d.now())
	}
	return &sendError{reason: "unknown_kind"}
}

// outcome publishes a delivery's outcome as an activity entry, recorded
// once per delivery (its ref).
func (d *Dispatcher) outcome(dst *Destination, dl *store.AlertDelivery, kind, reason string) {
	var entryID string
	if dl.EntrySeq > 0 || (dl.Kind != PayloadTest && dl.Kind != PayloadSummary) {
		var p Payload
		if json.Unmarshal(dl.Body, &p) == nil {
			entryID = p.ID
		}
	}
	detail := map[string]any{"destinationId": dst.ID, "destinationKind": dst.Kind, "deliveryId": dl.ID,
		"attempts": dl.Attempts, "alertKind": dl.Kind}
	if entryID != "" {
		detail["entryId"] = entryID
	}
	name := dst.Name
	if name == "" {
		name = dst.Kind
	}
	summary := fmt.Sprintf("Alert %s sent to %s", dl.Kind, name)
	if kind == protocol.ActivityAlertFailed {
		detail["error"] = reason
		summary = fmt.Sprintf("Alert %s to %s failed: %s", dl.Kind, name, reason)
	}
	b, _ := json.Marshal(detail)
	d.opts.Publisher.Publish(events.Activity(dl.UserID, "alert:"+dl.ID, protocol.ActivityEntry{
		At: d.now(), Kind: kind, Source: protocol.ActivitySource{Kind: protocol.SourceAlert, ID: dst.ID, Name: dst.Name},
		Summary: summary, Detail: b,
	}))
}

// Close stops Run and the senders and waits for them; an attempt under
// way is cut short and tried again later. It is idempotent.
func (d *Dispatcher) Close() error {
	d.group.Close()
	d.hooks.CloseIdleConnections()
	d.apis.CloseIdleConnections()
	return nil
}

// randomHex returns 8 random bytes in hex.
func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
