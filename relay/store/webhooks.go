package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
)

// The TradingView webhooks (webhooks) and the alerts they received
// (webhook_alerts). relay/webhook writes them; the key is never stored in
// clear: its hash checks an alert's key, its sealed form shows it again.

// Webhook is a user's TradingView webhook.
type Webhook struct {
	UserID string
	// ID is the webhook's id in its URL ("wh_…").
	ID string
	// KeyHash is the hex SHA-256 of the key.
	KeyHash string
	// KeySealed is the key as relay/sealed sealed it.
	KeySealed string
	// CreatedAt is when the webhook was made, RotatedAt when its key was
	// last issued (CreatedAt at first).
	CreatedAt, RotatedAt time.Time
}

// States of a WebhookAlert.
const (
	// WebhookExecuted: every call ran, or was blocked for some accounts.
	WebhookExecuted = "executed"
	// WebhookScheduled: waiting for its delay to end (DueAt).
	WebhookScheduled = "scheduled"
	// WebhookRunning: its calls are running.
	WebhookRunning = "running"
	// WebhookBlocked: not run, by the alert's own conditions (its rate
	// limit, window, position requirement).
	WebhookBlocked = "blocked"
	// WebhookFailed: it could not be run (a parse error, a refusal).
	WebhookFailed = "failed"
)

// WebhookAlert is one alert received with the right key.
type WebhookAlert struct {
	UserID string
	// Seq is the alert's place, given by AddWebhookAlert ("tva_<seq>").
	Seq        int64
	ReceivedAt time.Time
	// Text is the alert's body without its key.
	Text        string
	Command     string
	Destination string
	// Accounts is a JSON array of the account names; nil is stored as [].
	Accounts []byte
	// Status is one of the Webhook* states; Reason says why when blocked
	// or failed.
	Status, Reason string
	// Results is a JSON array, one item per account; nil is stored as [].
	Results []byte
	// RateID is the alert's id= when its rate limit let it through.
	RateID string
	// DueAt is a scheduled alert's due time; zero otherwise.
	DueAt time.Time
	// UpdatedAt is the time of the last change.
	UpdatedAt time.Time
}

// WebhookAlertUpdate is a change of an alert's outcome
// (UpdateWebhookAlert).
type WebhookAlertUpdate struct {
	Status, Reason string
	// Results replaces the results when not nil.
	Results []byte
	// RateID replaces the rate id when not "".
	RateID string
	At     time.Time
}

const webhookColumns = "user_id, webhook_id, key_hash, key_sealed, created_at, rotated_at"

const webhookAlertColumns = `seq, user_id, received_at, text, command, accounts, destination, status, reason, results,
	rate_id, due_at, updated_at`

var (
	qInsertWebhook = sqlConst(`INSERT INTO webhooks (` + webhookColumns + `)
		SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM users WHERE id = ?) ON CONFLICT (user_id) DO NOTHING`)
	qWebhookByUser = sqlConst("SELECT " + webhookColumns + " FROM webhooks WHERE user_id = ?")
	qLookupWebhook = sqlConst("SELECT " + userColumns + ", webhooks.key_hash, webhooks.key_sealed, webhooks.created_at, webhooks.rotated_at" +
		" FROM webhooks JOIN users ON users.id = webhooks.user_id WHERE webhooks.webhook_id = ?")
	qRotateWebhook = sqlConst("UPDATE webhooks SET key_hash = ?, key_sealed = ?, rotated_at = ? WHERE user_id = ?")

	qAddWebhookAlert = sqlConst(`INSERT INTO webhook_alerts (user_id, received_at, text, command, accounts, destination, status,
		reason, results, rate_id, due_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`)
	qWebhookAlert       = sqlConst("SELECT " + webhookAlertColumns + " FROM webhook_alerts WHERE user_id = ? AND seq = ?")
	qListWebhookAlerts  = sqlConst("SELECT " + webhookAlertColumns + " FROM webhook_alerts WHERE user_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?")
	qCountWebhookAlerts = sqlConst("SELECT COUNT(*) FROM webhook_alerts WHERE user_id = ? AND rate_id = ? AND received_at >= ?")
	qDueWebhookAlerts   = sqlConst("SELECT " + webhookAlertColumns + " FROM webhook_alerts WHERE status = 'scheduled' AND due_at < ? ORDER BY due_at LIMIT ?")
	qStaleWebhookAlerts = sqlConst("SELECT " + webhookAlertColumns + " FROM webhook_alerts WHERE status = 'running' AND updated_at < ? ORDER BY updated_at LIMIT ?")
	qPruneWebhookAlerts = sqlConst("DELETE FROM webhook_alerts WHERE received_at < ? AND status <> 'scheduled'")
)

// CreateWebhook implements Store.
func (s *sqlStore) CreateWebhook(ctx context.Context, w Webhook) (Webhook, bool, error) {
	if w.UserID == "" || w.ID == "" || w.KeyHash == "" || w.KeySealed == "" {
		return Webhook{}, false, errors.New("store: create webhook: a webhook needs a user, an id, a key hash and a sealed key")
	}
	var got Webhook
	created := false
	err := s.tx(ctx, func(tx conn) error {
		n, err := changed(tx.exec(ctx, qInsertWebhook, w.UserID, w.ID, w.KeyHash, w.KeySealed, millis(w.CreatedAt),
			millis(w.CreatedAt), w.UserID))
		if err != nil {
			return tx.d.conflict(err)
		}
		created = n == 1
		got, err = scanWebhook(tx.row(ctx, qWebhookByUser, w.UserID))
		return err
	})
	if err != nil {
		return Webhook{}, false, wrap("create webhook", err)
	}
	return got, created, nil
}

// Webhook implements Store.
func (s *sqlStore) Webhook(ctx context.Context, userID string) (Webhook, error) {
	w, err := scanWebhook(s.row(ctx, qWebhookByUser, userID))
	return w, wrap("read webhook", err)
}

// LookupWebhook implements Store.
func (s *sqlStore) LookupWebhook(ctx context.Context, webhookID string) (Webhook, User, error) {
	w := Webhook{ID: webhookID}
	var created, rotated int64
	u, err := scanUser(s.row(ctx, qLookupWebhook, webhookID), &w.KeyHash, &w.KeySealed, &created, &rotated)
	if err != nil {
		return Webhook{}, User{}, wrap("look up webhook", err)
	}
	w.UserID, w.CreatedAt, w.RotatedAt = u.ID, fromMS(created), fromMS(rotated)
	return w, u, nil
}

// RotateWebhook implements Store.
func (s *sqlStore) RotateWebhook(ctx context.Context, userID, keyHash, keySealed string, at time.Time) (Webhook, error) {
	var got Webhook
	err := s.tx(ctx, func(tx conn) error {
		if err := affected(tx.exec(ctx, qRotateWebhook, keyHash, keySealed, millis(at), userID)); err != nil {
			return err
		}
		var err error
		got, err = scanWebhook(tx.row(ctx, qWebhookByUser, userID))
		return err
	})
	return got, wrap("rotate webhook", err)
}

func scanWebhook(row scanner) (Webhook, error) {
	var w Webhook
	var created, rotated int64
	err := row.Scan(&w.UserID, &w.ID, &w.KeyHash, &w.KeySealed, &created, &rotated)
	if errors.Is(err, sql.ErrNoRows) {
		return Webhook{}, ErrNotFound
	}
	w.CreatedAt, w.RotatedAt = fromMS(created), fromMS(rotated)
	return w, err
}

// AddWebhookAlert implements Store.
func (s *sqlStore) AddWebhookAlert(ctx context.Context, a WebhookAlert) (int64, error) {
	if a.UserID == "" || a.Status == "" {
		return 0, errors.New("store: add webhook alert: an alert needs a user and a status")
	}
	seq, err := addWebhookAlert(ctx, s.conn, a)
	if err != nil {
		return 0, wrap("add webhook alert", s.d.noUser(err))
	}
	return seq, nil
}

// addWebhookAlert inserts a on c and returns its seq.
func addWebhookAlert(ctx context.Context, c conn, a WebhookAlert) (int64, error) {
	var due int64
	if !a.DueAt.IsZero() {
		due = millis(a.DueAt)
	}
	var seq int64
	err := c.row(ctx, qAddWebhookAlert, a.UserID, millis(a.ReceivedAt), a.Text, a.Command, jsonArray(a.Accounts),
		a.Destination, a.Status, a.Reason, jsonArray(a.Results), a.RateID, due, millis(a.UpdatedAt)).Scan(&seq)
	return seq, err
}

// UpdateWebhookAlert implements Store.
func (s *sqlStore) UpdateWebhookAlert(ctx context.Context, userID string, seq int64, from []string, u WebhookAlertUpdate) (bool, error) {
	if u.Status == "" {
		return false, errors.New("store: update webhook alert: a status is required")
	}
	ok, err := updateWebhookAlert(ctx, s.conn, userID, seq, from, u)
	return ok, wrap("update webhook alert", err)
}

// updateWebhookAlert is UpdateWebhookAlert on c.
func updateWebhookAlert(ctx context.Context, c conn, userID string, seq int64, from []string, u WebhookAlertUpdate) (bool, error) {
	q := "UPDATE webhook_alerts SET status = ?, reason = ?, updated_at = ?"
	args := []any{u.Status, u.Reason, millis(u.At)}
	if u.Results != nil {
		q += ", results = ?"
		args = append(args, string(u.Results))
	}
	if u.RateID != "" {
		q += ", rate_id = ?"
		args = append(args, u.RateID)
	}
	q += " WHERE user_id = ? AND seq = ?"
	args = append(args, userID, seq)
	if len(from) > 0 {
		q += " AND status IN (?" + strings.Repeat(", ?", len(from)-1) + ")"
		for _, f := range from {
			args = append(args, f)
		}
	}
	n, err := changed(c.exec(ctx, sqlText(q), args...))
	return n == 1, err
}

// WebhookAlert implements Store.
func (s *sqlStore) WebhookAlert(ctx context.Context, userID string, seq int64) (WebhookAlert, error) {
	a, err := scanWebhookAlert(s.row(ctx, qWebhookAlert, userID, seq))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	return a, wrap("read webhook alert", err)
}

// ListWebhookAlerts implements Store.
func (s *sqlStore) ListWebhookAlerts(ctx context.Context, userID string, before int64, limit int) ([]WebhookAlert, error) {
	if limit <= 0 {
		return nil, nil
	}
	if before <= 0 {
		before = 1<<63 - 1
	}
	out, err := all(ctx, s.conn, scanWebhookAlert, qListWebhookAlerts, userID, before, limit)
	return out, wrap("list webhook alerts", err)
}

// CountWebhookAlerts implements Store.
func (s *sqlStore) CountWebhookAlerts(ctx context.Context, userID, rateID string, since time.Time) (int, error) {
	var n int
	err := s.row(ctx, qCountWebhookAlerts, userID, rateID, millis(since)).Scan(&n)
	return n, wrap("count webhook alerts", err)
}

// OverdueWebhookAlerts implements Store.
func (s *sqlStore) OverdueWebhookAlerts(ctx context.Context, dueBefore time.Time, limit int) ([]WebhookAlert, error) {
	out, err := all(ctx, s.conn, scanWebhookAlert, qDueWebhookAlerts, millis(dueBefore), limit)
	return out, wrap("list overdue webhook alerts", err)
}

// StaleWebhookAlerts implements Store.
func (s *sqlStore) StaleWebhookAlerts(ctx context.Context, runningBefore time.Time, limit int) ([]WebhookAlert, error) {
	out, err := all(ctx, s.conn, scanWebhookAlert, qStaleWebhookAlerts, millis(runningBefore), limit)
	return out, wrap("list stale webhook alerts", err)
}

// PruneWebhookAlerts implements Store.
func (s *sqlStore) PruneWebhookAlerts(ctx context.Context, before time.Time) (int, error) {
	n, err := changed(s.exec(ctx, qPruneWebhookAlerts, millis(before)))
	return n, wrap("prune webhook alerts", err)
}

// jsonArray stores a nil or empty JSON array as [].
func jsonArray(b []byte) string {
	if len(b) == 0 {
		return "[]"
	}
	return string(b)
}

func scanWebhookAlert(row scanner) (WebhookAlert, error) {
	var a WebhookAlert
	var received, due, updated int64
	var accounts, results string
	err := row.Scan(&a.Seq, &a.UserID, &received, &a.Text, &a.Command, &accounts, &a.Destination, &a.Status, &a.Reason,
		&results, &a.RateID, &due, &updated)
	a.ReceivedAt, a.UpdatedAt = fromMS(received), fromMS(updated)
	if due != 0 {
		a.DueAt = fromMS(due)
	}
	a.Accounts, a.Results = []byte(accounts), []byte(results)
	return a, err
}

// ReceiveWebhookAlert implements Store: one transaction.
func (s *sqlStore) ReceiveWebhookAlert(ctx context.Context, claim Idempotent, expiredBefore time.Time, a WebhookAlert,
	answer func(seq int64) Idempotent) (int64, Idempotent, bool, error) {
	if a.UserID == "" || a.Status == "" || claim.UserID != a.UserID {
		return 0, Idempotent{}, false, errors.New("store: receive webhook alert: an alert needs a user, a status and a claim of its user")
	}
	var seq int64
	var got Idempotent
	claimed := false
	err := s.tx(ctx, func(tx conn) error {
		var err error
		got, claimed, err = claimIn(ctx, tx, claim, time.Time{}, expiredBefore)
		if err != nil || !claimed {
			return err
		}
		if seq, err = addWebhookAlert(ctx, tx, a); err != nil {
			return err
		}
		ans := answer(seq)
		got.State, got.Status, got.Body = cmp.Or(ans.State, IdemRunning), ans.Status, ans.Body
		_, err = tx.exec(ctx, qFinishIdem, got.State, got.Status, orNull(got.Body), millis(claim.CreatedAt), claim.UserID, claim.Key)
		return err
	})
	if err != nil {
		return 0, Idempotent{}, false, wrap("receive webhook alert", s.d.noUser(err))
	}
	return seq, got, claimed, nil
}

// FinishWebhookAlert implements Store: one transaction.
func (s *sqlStore) FinishWebhookAlert(ctx context.Context, userID string, seq int64, from []string, u WebhookAlertUpdate, dup Idempotent) (bool, error) {
	if u.Status == "" {
		return false, errors.New("store: finish webhook alert: a status is required")
	}
	ok := false
	err := s.tx(ctx, func(tx conn) error {
		var err error
		if ok, err = updateWebhookAlert(ctx, tx, userID, seq, from, u); err != nil {
			return err
		}
		if dup.Key == "" {
			return nil
		}
		_, err = tx.exec(ctx, qFinishIdem, dup.State, dup.Status, orNull(dup.Body), millis(dup.UpdatedAt), dup.UserID, dup.Key)
		return err
	})
	if err != nil {
		return false, wrap("finish webhook alert", err)
	}
	return ok, nil
}
