package activity

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"tradebridge/internal/lifecycle"
	"tradebridge/protocol"
	"tradebridge/relay/events"
)

// Budget refusals are recorded aggregated: a bot that keeps calling past
// its budget must not fill its user's log with one entry per refused
// call. Refusals counts the refusals (relay/admit tells it of each, and
// the stream socket of its frames') and publishes, at the end of each
// window, one budget.refused entry per user and budget that refused
// anything in it, with detail {policy, count, from, until}.

// Defaults of RefusalsOptions.
const (
	// DefaultRefusalWindow is the window of one entry: one per user and
	// budget per minute.
	DefaultRefusalWindow = time.Minute
	// DefaultMaxRefusalKeys bounds the users and budgets counted in one
	// window.
	DefaultMaxRefusalKeys = 10000
)

// RefusalsOptions configure Refusals.
type RefusalsOptions struct {
	// Events is where the budget.refused entries are published; the relay
	// passes its event spine. Nil counts and publishes nothing.
	Events events.Publisher
	Logger *zap.Logger
	// Window is how long refusals are counted before their entries are
	// published. Default DefaultRefusalWindow.
	Window time.Duration
	// MaxKeys bounds the users and budgets counted in one window, so
	// that memory stays bounded whatever the number of users refused at
	// once; the refusals of a user and budget beyond it are dropped (and
	// counted: Stats.Dropped). Default DefaultMaxRefusalKeys.
	MaxKeys int
	// Now and After are the clock (tests drive them); nil means time.Now
	// and time.After.
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

// RefusalStats are a Refusals' running totals.
type RefusalStats struct {
	// Counted counts the refusals counted; Dropped, those dropped because
	// MaxKeys users and budgets were already counted in their window.
	Counted, Dropped int64
	// Published counts the entries published.
	Published int64
}

// Refusals counts the requests refused for a user's budget and publishes
// them aggregated. Create it with NewRefusals, run it with Run, and Close
// it: Close publishes what was counted since the last window. Its methods
// are safe for concurrent use.
type Refusals struct {
	opts  RefusalsOptions
	log   *zap.Logger
	group lifecycle.Group

	mu      sync.Mutex
	pending map[refusalKey]*refusalCount
	closed  bool

	counted, dropped, published atomic.Int64
	// unwarned counts the refusals dropped since the last warning.
	unwarned atomic.Int64
}

// refusalKey is what one entry aggregates: a user and a budget.
type refusalKey struct{ user, policy string }

// refusalCount is one entry in the making.
type refusalCount struct {
	n           int
	from, until time.Time
	source      protocol.ActivitySource
}

// NewRefusals returns a Refusals.
func NewRefusals(opts RefusalsOptions) (*Refusals, error) {
	if opts.Window < 0 || opts.MaxKeys < 0 {
		return nil, errors.New("activity: RefusalsOptions.Window and MaxKeys must not be negative")
	}
	if opts.Window == 0 {
		opts.Window = DefaultRefusalWindow
	}
	if opts.MaxKeys == 0 {
		opts.MaxKeys = DefaultMaxRefusalKeys
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.After == nil {
		opts.After = time.After
	}
	return &Refusals{opts: opts, log: opts.Logger.Named("activity"), pending: make(map[refusalKey]*refusalCount)}, nil
}

// Refused counts one request of userID refused for the budget named
// policy (429 rate_limited), sent by source (the door's kind and the
// token's id). It never blocks on anything but a short lock, and does
// nothing once the Refusals is closed or when it has no Events.
func (r *Refusals) Refused(userID string, source protocol.ActivitySource, policy string) {
	if r == nil || r.opts.Events == nil || userID == "" {
		return
	}
	now := r.opts.Now()
	k := refusalKey{user: userID, policy: policy}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	c := r.pending[k]
	if c == nil {
		if len(r.pending) >= r.opts.MaxKeys {
			r.dropped.Add(1)
			r.unwarned.Add(1)
			return
		}
		c = &refusalCount{from: now, source: source}
		r.pending[k] = c
	}
	c.n++
	c.until = now
	if c.source != source {
		// Several tokens or doors: the entry names what they share.
		if c.source.Kind != source.Kind {
			c.source.Kind = protocol.SourceAPI
		}
		c.source.ID, c.source.Name = "", ""
	}
	r.counted.Add(1)
}

// Run publishes the entries of each window at its end until ctx ends or
// the Refusals is closed, then publishes what was counted since. It
// returns nil; a Refusals runs once at a time.
func (r *Refusals) Run(ctx context.Context) error {
	ctx, leave, ok := r.group.Enter(ctx)
	if !ok {
		return nil
	}
	defer leave()
	for {
		select {
		case <-ctx.Done():
			r.Flush()
			return nil
		case <-r.opts.After(r.opts.Window):
			r.Flush()
		}
	}
}

// Close stops Run and waits for it, publishes what was counted, and
// counts nothing more. It is idempotent.
func (r *Refusals) Close() error {
	r.group.Close()
	r.Flush()
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	return nil
}

// Flush publishes an entry for each user and budget counted since the
// last Flush, and starts a new window.
func (r *Refusals) Flush() {
	r.mu.Lock()
	if len(r.pending) == 0 {
		r.mu.Unlock()
		return
	}
	pending := r.pending
	r.pending = make(map[refusalKey]*refusalCount, len(pending))
	r.mu.Unlock()
	if d := r.unwarned.Swap(0); d > 0 {
		r.log.Warn("budget refusals not recorded: too many users refused at once", zap.Int64("dropped", d),
			zap.Int("maxKeys", r.opts.MaxKeys))
	}
	for k, c := range pending {
		r.opts.Events.Publish(events.Activity(k.user, "", RefusalEntry(k.policy, c.n, c.from, c.until, c.source)))
		r.published.Add(1)
	}
}

// Stats returns the running totals.
func (r *Refusals) Stats() RefusalStats {
	return RefusalStats{Counted: r.counted.Load(), Dropped: r.dropped.Load(), Published: r.published.Load()}
}

// refusalDetail is budget.refused's detail.
type refusalDetail struct {
	Policy string    `json:"policy"`
	Count  int       `json:"count"`
	From   time.Time `json:"from"`
	Until  time.Time `json:"until"`
}

// RefusalEntry returns the budget.refused entry of n requests refused for
// the budget policy between from and until (the first and the last), by
// source.
func RefusalEntry(policy string, n int, from, until time.Time, source protocol.ActivitySource) protocol.ActivityEntry {
	from, until = from.UTC().Truncate(time.Millisecond), until.UTC().Truncate(time.Millisecond)
	detail, _ := json.Marshal(refusalDetail{Policy: policy, Count: n, From: from, Until: until})
	what := strconv.Itoa(n) + " requests"
	if n == 1 {
		what = "1 request"
	}
	return protocol.ActivityEntry{
		At:      until,
		Kind:    protocol.ActivityBudgetRefused,
		Source:  source,
		Summary: what + " refused: the " + policy + " budget was used up (rate_limited)",
		Detail:  detail,
	}
}
