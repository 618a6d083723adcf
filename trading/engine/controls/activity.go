package controls

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/engine"
	"tradebridge/trading/ops"
)

// refusalWindow is how long the strategy-lock refusals of one account,
// instrument, strategy tag and rule are counted before they are reported,
// as one strategy.refused entry.
const refusalWindow = time.Minute

// maxRefusalKeys bounds the refusals counted at once; a refusal of a
// further key is dropped (and logged once per window).
const maxRefusalKeys = 1000

// strategyLock is the source of a strategy.refused report: the agent's
// strategy-tag ownership (the order itself came from a bot).
var strategyLock = protocol.ActivitySource{Kind: protocol.SourceAgent, ID: "strategyLock"}

// killDetail is the detail of a killSwitch.changed report.
type killDetail struct {
	Enabled bool `json:"enabled"`
	// Flatten is the outcome of the flatten the switch ran (flattenOnKill),
	// its first attempt: a failed one is retried, as the agent's log shows.
	Flatten *engine.FlattenDetail `json:"flatten,omitempty"`

	at time.Time // when the engine saw the switch change, the wall clock's
}

// reportKill reports the kill switch change waiting, with the outcome of
// its flatten when it ran one, with e.mu held.
func (e *Engine) reportKill(fd *engine.FlattenDetail) {
	d := e.killReport
	if d == nil {
		return
	}
	e.killReport = nil
	d.Flatten = fd
	summary := "Kill switch turned off"
	if d.Enabled {
		summary = "Kill switch turned on"
		switch {
		case fd == nil:
		case fd.Error != "":
			summary += "; flattening every account failed, retrying"
		default:
			summary += fmt.Sprintf("; every account flattened (%d closing orders, %d orders cancelled)",
				len(fd.OrderIDs), len(fd.CancelledOrderIDs))
		}
	}
	e.report(engine.NewActivity(d.at, protocol.ActivityKillSwitchChanged, "",
		protocol.ActivitySource{Kind: protocol.SourceKillSwitch}, summary, d))
}

// newsDetail is the detail of a newsLockout.entered report.
type newsDetail struct {
	Title  string    `json:"title"`
	From   time.Time `json:"from"`
	Until  time.Time `json:"until"`
	Action string    `json:"action"`
	// Roots are the roots locked out; empty for every root.
	Roots []string `json:"roots"`
	// Flatten is the outcome of the window's flatten (action "flatten"),
	// its first attempt.
	Flatten *engine.FlattenDetail `json:"flatten,omitempty"`
}

// reportNews reports the news window w entered, stamped now (the wall
// clock's), with e.mu held. The window's from and until are the
// platform's times, as the configuration's news events are.
func (e *Engine) reportNews(s *snapshot, w window, fd *engine.FlattenDetail) {
	d := newsDetail{Title: w.title, From: w.from.UTC(), Until: w.until.UTC(), Action: s.newsAction,
		Roots: append([]string{}, s.rootList...), Flatten: fd}
	roots := "every instrument"
	if len(d.Roots) > 0 {
		roots = strings.Join(d.Roots, ", ")
	}
	summary := fmt.Sprintf("News lockout window open until %s UTC (%s): %s", d.Until.Format("15:04"), s.newsAction, roots)
	e.report(engine.NewActivity(e.opts.Wall(), protocol.ActivityNewsLockoutEntered, "",
		protocol.ActivitySource{Kind: protocol.SourceNewsLockout}, summary, d))
}

// report sends an activity report to the relay.
func (e *Engine) report(a protocol.ActivityEntry) {
	if e.opts.Reporter != nil {
		e.opts.Reporter.ReportActivity(a)
	}
}

// refusals counts strategy-lock refusals per key for refusalWindow.
type refusals struct {
	mu      sync.Mutex
	open    map[refusalKey]*refusalCount
	dropped int // refusals of keys beyond maxRefusalKeys, this window
}

type refusalKey struct{ account, instrument, strategy, rule string }

type refusalCount struct {
	owner string // the owning tag of the last refusal
	count int
	// opened is the first refusal's time on the platform's clock, which
	// counts the minute; from and last are the first and the last
	// refusal's real time, which the report carries.
	opened     time.Time
	from, last time.Time
}

// refusedDetail is the detail of a strategy.refused report.
type refusedDetail struct {
	Instrument string `json:"instrument"`
	// Strategy is the strategy tag whose orders were refused.
	Strategy string `json:"strategy"`
	// Rule is ops.RuleStrategyOwned or ops.RuleUntaggedPosition.
	Rule string `json:"rule"`
	// Owner is the tag owning the position (RuleStrategyOwned).
	Owner string `json:"owner,omitempty"`
	// Count is how many orders were refused from From to Until (the
	// first and the last refusal counted).
	Count int       `json:"count"`
	From  time.Time `json:"from"`
	Until time.Time `json:"until"`
}

// StrategyRefused counts a write the operations refused by a strategy lock
// (ops.Ops.SetRefusalObserver): the refusals of one account, instrument,
// strategy tag and rule are reported as one strategy.refused entry, with
// their count, a minute after the first of them, so that a looping
// strategy cannot flood the activity log. It never blocks.
func (e *Engine) StrategyRefused(r ops.OwnerRefusal) {
	now, wall := e.now(), e.opts.Wall()
	k := refusalKey{r.Account, r.Instrument, r.Tag, r.Rule}
	rs := &e.refusals
	rs.mu.Lock()
	defer rs.mu.Unlock()
	c := rs.open[k]
	if c == nil {
		if len(rs.open) >= maxRefusalKeys {
			if rs.dropped == 0 {
				e.log.Warn("too many strategy-lock refusals to count; some are not reported",
					zap.Int("keys", len(rs.open)))
			}
			rs.dropped++
			return
		}
		c = &refusalCount{opened: now, from: wall}
		rs.open[k] = c
	}
	c.count++
	c.last, c.owner = wall, r.Owner
}

// flushRefusals reports the counts whose window is over at now, or every
// count when all.
func (e *Engine) flushRefusals(now time.Time, all bool) {
	rs := &e.refusals
	rs.mu.Lock()
	var out []protocol.ActivityEntry
	for k, c := range rs.open {
		if !all && now.Sub(c.opened) < refusalWindow {
			continue
		}
		delete(rs.open, k)
		d := refusedDetail{Instrument: k.instrument, Strategy: k.strategy, Rule: k.rule, Owner: c.owner,
			Count: c.count, From: c.from.UTC(), Until: c.last.UTC()}
		summary := fmt.Sprintf("%d orders of strategy %s in %s refused (%s)", c.count, k.strategy, k.instrument, k.rule)
		if c.count == 1 {
			summary = fmt.Sprintf("An order of strategy %s in %s refused (%s)", k.strategy, k.instrument, k.rule)
		}
		out = append(out, engine.NewActivity(c.last, protocol.ActivityStrategyRefused, k.account,
			strategyLock, summary, d))
	}
	if len(rs.open) == 0 {
		rs.dropped = 0
	}
	rs.mu.Unlock()
	for _, a := range out {
		e.report(a)
	}
}
