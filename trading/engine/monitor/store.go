package monitor

import (
	"encoding/json"
	"time"

	"go.uber.org/zap"
)

// record is an account's state as the Store keeps it (JSON).
type record struct {
	State         string            `json:"state,omitempty"`
	Reason        string            `json:"reason,omitempty"`
	StoppedAt     *time.Time        `json:"stoppedAt,omitempty"`
	RestartedFrom *time.Time        `json:"restartedFrom,omitempty"`
	Session       time.Time         `json:"session"`
	Highs         *[nCounts]float64 `json:"highs,omitempty"`
	AutoFlattenAt string            `json:"autoFlattenAt,omitempty"`
	FlattenedFor  *time.Time        `json:"flattenedFor,omitempty"`
}

// optTime returns a pointer to t, or nil when t is zero.
func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// pending returns a's state to save, with the engine's lock held.
func (a *account) pending() pending {
	r := record{
		State:         a.state,
		Reason:        a.reason,
		StoppedAt:     optTime(a.stoppedAt),
		RestartedFrom: optTime(a.restartedFrom),
		Session:       a.session,
		AutoFlattenAt: a.flattenSetting,
		FlattenedFor:  optTime(a.flattenedFor),
	}
	if a.highSet {
		h := a.highs
		r.Highs = &h
	}
	return pending{account: a.name, seq: a.seq, rec: r}
}

// account rebuilds the account a record saved. A monitor saved as active
// or paused waits for the configuration; one saved as stopped stays
// stopped until a restart.
func (r *record) account(name string) *account {
	a := &account{
		name:           name,
		state:          r.State,
		reason:         r.Reason,
		session:        r.Session,
		flattenSetting: r.AutoFlattenAt,
	}
	if r.StoppedAt != nil {
		a.stoppedAt = r.StoppedAt.UTC()
	}
	if r.RestartedFrom != nil {
		a.restartedFrom = r.RestartedFrom.UTC()
	}
	if r.FlattenedFor != nil {
		a.flattenedFor = *r.FlattenedFor
	}
	if r.Highs != nil {
		a.highs, a.highSet = *r.Highs, true
	}
	return a
}

// write saves p, unless a later state of the account was saved already.
// A failed write is logged: the monitor goes on in memory.
func (e *Engine) write(p pending) {
	e.storeMu.Lock()
	defer e.storeMu.Unlock()
	if last, ok := e.written[p.account]; ok && p.seq <= last {
		return
	}
	raw, err := json.Marshal(p.rec)
	if err == nil {
		err = e.opts.Store.Put(Bucket, p.account, raw)
	}
	if err != nil {
		e.log.Error("saving a monitor's state", zap.String("account", p.account), zap.Error(err))
		return
	}
	e.written[p.account] = p.seq
}
