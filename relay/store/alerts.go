package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// The alert deliveries (alert_deliveries): one row per activity entry and
// alert destination that asked for its kind, per test and per summary of
// a flood, with the body every attempt sends. relay/alerts writes them and
// sends them; a node sends a row only while it holds the row's lease,
// whose end is by the store's clock.

// States of an AlertDelivery.
const (
	// AlertPending: to be sent at NextAt (again, after a failed attempt).
	AlertPending = "pending"
	// AlertSent: the destination accepted it.
	AlertSent = "sent"
	// AlertFailed: the destination refused it, or it was not delivered
	// in time.
	AlertFailed = "failed"
	// AlertCancelled: not sent, and never to be (an agent.disconnected
	// whose agent came back within the grace).
	AlertCancelled = "cancelled"
	// AlertFolded: past the destination's rate limit, the entry is
	// counted in its window's summary instead of being sent on its own.
	AlertFolded = "folded"
)

// AlertDelivery is one message to one alert destination.
type AlertDelivery struct {
	// ID is the delivery's id ("dlv_…"), sent as X-Tradebridge-Delivery.
	ID            string
	UserID        string
	DestinationID string
	// EntrySeq is the activity entry's seq; 0 for a test or a summary.
	// A destination gets one delivery per entry.
	EntrySeq int64
	// Kind is the entry's kind, or "alert.test", "alert.summary".
	Kind string
	// Body is the payload, fixed at creation (a summary's is set at its
	// first attempt, when its window has closed).
	Body []byte
	// State is one of AlertPending, AlertSent, AlertFailed,
	// AlertCancelled, AlertFolded.
	State string
	// Attempts counts the attempts made.
	Attempts int
	// NextAt is when the next attempt is due.
	NextAt time.Time
	// LastError is the last failed attempt's reason (never a secret).
	LastError string
	// CreatedAt and UpdatedAt are by the writer's clock.
	CreatedAt, UpdatedAt time.Time
}

// AlertWindow is a destination's rate limit as QueueAlertDelivery applies
// it: at most Max deliveries created in [Start, End); past it a delivery
// is stored folded and the window's summary, SummaryID, is created, due at
// End. Max 0 means no limit.
type AlertWindow struct {
	Max        int
	Start, End time.Time
	SummaryID  string
}

const alertColumns = `id, user_id, destination_id, entry_seq, kind, body, state, attempts, next_at, last_error,
	created_at, updated_at`

var (
	qAlertByEntry  = sqlConst("SELECT state FROM alert_deliveries WHERE destination_id = ? AND entry_seq = ? AND entry_seq > 0")
	qAlertInWindow = sqlConst(`SELECT COUNT(*) FROM alert_deliveries WHERE destination_id = ? AND created_at >= ? AND created_at < ?
		AND state <> 'folded' AND kind <> 'alert.summary'`)
	qAddAlert = sqlConst(`INSERT INTO alert_deliveries (` + alertColumns + `)
		VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, '', ?, ?) ON CONFLICT DO NOTHING`)
	// The claim takes due rows whose lease is free or ended, and checks
	// the same again on each row it updates, so that two nodes claiming
	// at once never both take a row.
	qClaimAlerts = sqlConst(`UPDATE alert_deliveries SET lease_node = ?, lease_until = {now} + ?
		WHERE id IN (SELECT id FROM alert_deliveries WHERE state = 'pending' AND next_at <= ? AND lease_until <= {now}
			AND destination_id = ? ORDER BY next_at, created_at, id LIMIT ?)
		AND state = 'pending' AND lease_until <= {now}
		RETURNING ` + alertColumns)
	qDueDestinations = sqlConst(`SELECT destination_id, MIN(next_at) FROM alert_deliveries
		WHERE state = 'pending' AND next_at <= ? AND lease_until <= {now}
		GROUP BY destination_id ORDER BY MIN(next_at) LIMIT ?`)
	qFinishAlert = sqlConst(`UPDATE alert_deliveries SET state = ?, attempts = ?, next_at = ?, last_error = ?, body = ?,
		updated_at = ?, lease_node = '', lease_until = 0 WHERE id = ? AND lease_node = ?`)
	qAlertsOf = sqlConst(`SELECT ` + alertColumns + ` FROM alert_deliveries WHERE user_id = ? AND destination_id = ?
		ORDER BY created_at DESC, id DESC LIMIT ?`)
	qAlert       = sqlConst(`SELECT ` + alertColumns + ` FROM alert_deliveries WHERE user_id = ? AND id = ?`)
	qFoldedKinds = sqlConst(`SELECT kind, COUNT(*) FROM alert_deliveries WHERE destination_id = ? AND state = 'folded'
		AND created_at >= ? AND created_at < ? GROUP BY kind ORDER BY kind`)
	qPruneAlerts = sqlConst("DELETE FROM alert_deliveries WHERE state <> 'pending' AND updated_at < ?")
)

// errAlertDelivery refuses a delivery without its ids, kind or body.
var errAlertDelivery = errors.New("a delivery needs an id, a user, a destination, a kind and a body")

// QueueAlertDelivery implements Store. It runs under the user's row lock
// (FOR NO KEY UPDATE on PostgreSQL; SQLite's write lock), so that the
// window's count and the insert are of one moment on every node.
func (s *sqlStore) QueueAlertDelivery(ctx context.Context, d AlertDelivery, w AlertWindow) (string, error) {
	if d.ID == "" || d.UserID == "" || d.DestinationID == "" || d.Kind == "" || d.Body == nil {
		return "", wrap("queue alert delivery", errAlertDelivery)
	}
	var state string
	err := s.tx(ctx, func(tx conn) error {
		var one int
		err := tx.row(ctx, qLockUser, d.UserID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if d.EntrySeq > 0 {
			err := tx.row(ctx, qAlertByEntry, d.DestinationID, d.EntrySeq).Scan(&state)
			if err == nil {
				return ErrConflict
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		state = AlertPending
		if w.Max > 0 {
			var n int
			if err := tx.row(ctx, qAlertInWindow, d.DestinationID, millis(w.Start), millis(w.End)).Scan(&n); err != nil {
				return err
			}
			if n >= w.Max {
				state = AlertFolded
			}
		}
		if err := insertAlert(ctx, tx, d, state, d.NextAt); err != nil {
			return err
		}
		if state != AlertFolded || w.SummaryID == "" {
			return nil
		}
		sum := AlertDelivery{ID: w.SummaryID, UserID: d.UserID, DestinationID: d.DestinationID, Kind: "alert.summary",
			Body: []byte{}, CreatedAt: d.CreatedAt, UpdatedAt: d.CreatedAt}
		return insertAlert(ctx, tx, sum, AlertPending, w.End)
	})
	if errors.Is(err, ErrConflict) {
		return state, wrap("queue alert delivery", err)
	}
	if err != nil {
		return "", wrap("queue alert delivery", err)
	}
	return state, nil
}

// insertAlert adds a delivery in a state; a row of the same id, or of the
// same destination and entry, is left as it is.
func insertAlert(ctx context.Context, tx conn, d AlertDelivery, state string, next time.Time) error {
	_, err := tx.exec(ctx, qAddAlert, d.ID, d.UserID, d.DestinationID, d.EntrySeq, d.Kind, string(d.Body), state,
		millis(next), millis(d.CreatedAt), millis(d.CreatedAt))
	return tx.d.noUser(err)
}

// DueAlertDestinations implements Store.
func (s *sqlStore) DueAlertDestinations(ctx context.Context, now time.Time, limit int) ([]string, error) {
	ids, err := all(ctx, s.conn, func(row scanner) (string, error) {
		var id string
		var at int64
		err := row.Scan(&id, &at)
		return id, err
	}, qDueDestinations, millis(now), limit)
	return ids, wrap("due alert destinations", err)
}

// ClaimAlertDeliveries implements Store.
func (s *sqlStore) ClaimAlertDeliveries(ctx context.Context, destinationID, node string, now time.Time, lease time.Duration, limit int) ([]AlertDelivery, error) {
	if lease <= 0 {
		return nil, wrap("claim alert deliveries", errLeaseTTL)
	}
	out, err := all(ctx, s.conn, scanAlert, qClaimAlerts, node, lease.Milliseconds(), millis(now), destinationID, limit)
	return out, wrap("claim alert deliveries", err)
}

// FinishAlertAttempt implements Store.
func (s *sqlStore) FinishAlertAttempt(ctx context.Context, node string, d AlertDelivery) error {
	err := affected(s.exec(ctx, qFinishAlert, d.State, d.Attempts, millis(d.NextAt), d.LastError, string(d.Body),
		millis(d.UpdatedAt), d.ID, node))
	return wrap("finish alert attempt", err)
}

// AlertDeliveries implements Store.
func (s *sqlStore) AlertDeliveries(ctx context.Context, userID, destinationID string, limit int) ([]AlertDelivery, error) {
	out, err := all(ctx, s.conn, scanAlert, qAlertsOf, userID, destinationID, limit)
	return out, wrap("alert deliveries", err)
}

// AlertDelivery implements Store.
func (s *sqlStore) AlertDelivery(ctx context.Context, userID, id string) (AlertDelivery, error) {
	d, err := scanAlert(s.row(ctx, qAlert, userID, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	return d, wrap("alert delivery", err)
}

// FoldedAlertKinds implements Store.
func (s *sqlStore) FoldedAlertKinds(ctx context.Context, destinationID string, from, until time.Time) (map[string]int, error) {
	type kc struct {
		kind string
		n    int
	}
	rows, err := all(ctx, s.conn, func(row scanner) (kc, error) {
		var v kc
		err := row.Scan(&v.kind, &v.n)
		return v, err
	}, qFoldedKinds, destinationID, millis(from), millis(until))
	if err != nil {
		return nil, wrap("folded alert kinds", err)
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.kind] = r.n
	}
	return out, nil
}

// PruneAlertDeliveries implements Store.
func (s *sqlStore) PruneAlertDeliveries(ctx context.Context, before time.Time) (int, error) {
	n, err := changed(s.exec(ctx, qPruneAlerts, millis(before)))
	return n, wrap("prune alert deliveries", err)
}

func scanAlert(row scanner) (AlertDelivery, error) {
	var d AlertDelivery
	var body string
	var next, created, updated int64
	err := row.Scan(&d.ID, &d.UserID, &d.DestinationID, &d.EntrySeq, &d.Kind, &body, &d.State, &d.Attempts, &next,
		&d.LastError, &created, &updated)
	if err != nil {
		return AlertDelivery{}, err
	}
	d.Body = []byte(body)
	d.NextAt, d.CreatedAt, d.UpdatedAt = fromMS(next), fromMS(created), fromMS(updated)
	return d, nil
}
