package agent

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/trading/engine"
)

// The activity outbox's bounds: a report is kept, and sent again after
// every connect, for outboxMaxAge; at most outboxMaxCount are kept, the
// oldest dropped first.
const (
	outboxMaxAge   = 15 * time.Minute
	outboxMaxCount = 1000
)

// OutboxBucket is the engine.Store bucket of the activity reports the
// agent keeps (one value per report, keyed by its id), so that a report
// made while the relay was out of reach survives an agent restart.
const OutboxBucket = "agent.activity"

// outgoing is one activity report in the outbox.
type outgoing struct {
	Entry  protocol.ActivityEntry `json:"entry"`
	KeptAt time.Time              `json:"keptAt"` // the agent's clock when the report was made

	sent      bool // sent on the current connection
	persisted bool // in the Store
}

// outbox holds the engines' activity reports (EventActivity) for the
// reporter: each is sent at once while connected, and every report kept is
// sent again after each connect, until it is older than maxAge or pushed
// out by maxCount newer ones. The relay records each report id once, so
// sending one twice is harmless; that is how a report in flight when the
// link dropped is not lost. Its fields are guarded by the reporter's mu.
type outbox struct {
	store    engine.Store // nil keeps the reports in memory only
	now      func() time.Time
	maxAge   time.Duration
	maxCount int

	kept    []*outgoing // oldest first
	deletes []string    // ids of persisted reports dropped, to delete
	dropped int         // reports dropped before they were sent, since the last warning
}

// load reads the reports a previous run of the agent kept; they are all
// sent after the first connect.
func (o *outbox) load(log *zap.Logger) {
	if o.store == nil {
		return
	}
	recs, err := o.store.Load(OutboxBucket)
	if err != nil {
		log.Error("the activity reports kept before the restart are unreadable", zap.Error(err))
		return
	}
	for id, raw := range recs {
		var g outgoing
		if err := json.Unmarshal(raw, &g); err != nil || g.Entry.ID != id {
			log.Warn("an activity report kept before the restart is unreadable; it is dropped", zap.Error(err))
			o.deletes = append(o.deletes, id)
			continue
		}
		g.persisted = true
		o.kept = append(o.kept, &g)
	}
	slices.SortFunc(o.kept, func(a, b *outgoing) int {
		if c := a.KeptAt.Compare(b.KeptAt); c != 0 {
			return c
		}
		return strings.Compare(a.Entry.ID, b.Entry.ID)
	})
	if len(o.kept) > 0 {
		log.Info("activity reports kept before the restart are sent after the next connect", zap.Int("reports", len(o.kept)))
	}
}

// add keeps a new report.
func (o *outbox) add(e protocol.ActivityEntry) {
	o.kept = append(o.kept, &outgoing{Entry: e, KeptAt: o.now()})
	o.trim()
}

// trim drops the reports past maxAge and beyond maxCount, oldest first.
func (o *outbox) trim() {
	cut := time.Time{}
	if o.maxAge > 0 {
		cut = o.now().Add(-o.maxAge)
	}
	n := 0
	for n < len(o.kept) && (len(o.kept)-n > o.maxCount || o.kept[n].KeptAt.Before(cut)) {
		g := o.kept[n]
		if g.persisted {
			o.deletes = append(o.deletes, g.Entry.ID)
		}
		if !g.sent {
			o.dropped++
		}
		n++
	}
	if n > 0 {
		clear(o.kept[:n])
		o.kept = o.kept[n:]
	}
}

// resend marks every report for sending (the tunnel connected).
func (o *outbox) resend() {
	for _, g := range o.kept {
		g.sent = false
	}
}
