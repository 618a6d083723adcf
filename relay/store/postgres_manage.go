package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgreSQL: the idempotency records and the management resources.

// ClaimIdempotent implements Store. A new key is claimed by one INSERT …
// ON CONFLICT DO NOTHING; a key already there is read FOR UPDATE, so the
// nodes that claim it at once decide one after the other, each seeing
// what the one before wrote.
func (p *Postgres) ClaimIdempotent(ctx context.Context, rec Idempotent, staleBefore, expiredBefore time.Time) (Idempotent, bool, error) {
	var got Idempotent
	claimed := false
	err := p.tx(ctx, func(tx pgx.Tx) error {
		// A row deleted between the insert and the read (purged) is
		// inserted again: a few rounds at most.
		for range 3 {
			tag, err := tx.Exec(ctx,
				`INSERT INTO idempotency (user_id, key, fingerprint, state, status, body, created_at, updated_at)
				 VALUES ($1, $2, $3, $4, 0, NULL, $5, $5) ON CONFLICT (user_id, key) DO NOTHING`,
				rec.UserID, rec.Key, rec.Fingerprint, IdemRunning, millis(rec.CreatedAt))
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 1 {
				got, claimed = newClaim(rec), true
				return nil
			}
			var created, updated int64
			err = tx.QueryRow(ctx,
				`SELECT fingerprint, state, status, body, created_at, updated_at
				 FROM idempotency WHERE user_id = $1 AND key = $2 FOR UPDATE`, rec.UserID, rec.Key).
				Scan(&got.Fingerprint, &got.State, &got.Status, &got.Body, &created, &updated)
			if errors.Is(err, pgx.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			if created < millis(expiredBefore) {
				got, claimed = newClaim(rec), true
				_, err = tx.Exec(ctx,
					`UPDATE idempotency SET fingerprint = $3, state = $4, status = 0, body = NULL, created_at = $5, updated_at = $5
					 WHERE user_id = $1 AND key = $2`,
					rec.UserID, rec.Key, rec.Fingerprint, IdemRunning, millis(rec.CreatedAt))
				return err
			}
			got.UserID, got.Key = rec.UserID, rec.Key
			got.CreatedAt, got.UpdatedAt = fromMS(created), fromMS(updated)
			if got.Fingerprint != rec.Fingerprint {
				return nil // a different request under the same key: the caller refuses it
			}
			if got.State == IdemUnknown || (got.State == IdemRunning && updated < millis(staleBefore)) {
				claimed = true
				got.State, got.UpdatedAt = IdemRunning, rec.CreatedAt
				_, err = tx.Exec(ctx,
					"UPDATE idempotency SET state = $1, updated_at = $2 WHERE user_id = $3 AND key = $4",
					IdemRunning, millis(rec.CreatedAt), rec.UserID, rec.Key)
				return err
			}
			return nil
		}
		return errors.New("the record kept vanishing while it was claimed")
	})
	if err != nil {
		return Idempotent{}, false, wrap("claim idempotency key", err)
	}
	return got, claimed, nil
}

// newClaim is the record of a key claimed afresh.
func newClaim(rec Idempotent) Idempotent {
	return Idempotent{UserID: rec.UserID, Key: rec.Key, Fingerprint: rec.Fingerprint,
		State: IdemRunning, CreatedAt: rec.CreatedAt, UpdatedAt: rec.CreatedAt}
}

// FinishIdempotent implements Store.
func (p *Postgres) FinishIdempotent(ctx context.Context, rec Idempotent) error {
	tag, err := p.pool.Exec(ctx,
		`UPDATE idempotency SET state = $1, status = $2, body = $3, updated_at = $4
		 WHERE user_id = $5 AND key = $6`,
		rec.State, rec.Status, rec.Body, millis(rec.UpdatedAt), rec.UserID, rec.Key)
	return wrap("finish idempotency key", pgAffected(tag, err))
}

// PurgeIdempotent implements Store.
func (p *Postgres) PurgeIdempotent(ctx context.Context, before time.Time) (int, error) {
	tag, err := p.pool.Exec(ctx, "DELETE FROM idempotency WHERE created_at < $1", millis(before))
	if err != nil {
		return 0, wrap("purge idempotency keys", err)
	}
	return int(tag.RowsAffected()), nil
}

// ManagedState implements Store. It reads in one REPEATABLE READ
// transaction, so the config version and the resources are of the same
// moment.
func (p *Postgres) ManagedState(ctx context.Context, userID string) (ManagedState, error) {
	var st ManagedState
	err := pgx.BeginTxFunc(ctx, p.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, "SELECT version, connections FROM manage_config WHERE user_id = $1", userID).
			Scan(&st.ConfigVersion, &st.Connections)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		rows, err := tx.Query(ctx,
			`SELECT kind, id, version, body, created_at, updated_at FROM manage_resources
			 WHERE user_id = $1 ORDER BY kind, created_at, id`, userID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r := Resource{UserID: userID}
			if err := scanResource(rows, &r); err != nil {
				return err
			}
			st.Resources = append(st.Resources, r)
		}
		return rows.Err()
	})
	if err != nil {
		return ManagedState{}, wrap("read managed state", err)
	}
	return st, nil
}

// Resource implements Store.
func (p *Postgres) Resource(ctx context.Context, userID, kind, id string) (Resource, error) {
	r := Resource{UserID: userID}
	err := scanResource(p.pool.QueryRow(ctx,
		`SELECT kind, id, version, body, created_at, updated_at FROM manage_resources
		 WHERE user_id = $1 AND kind = $2 AND id = $3`, userID, kind, id), &r)
	if err != nil {
		return Resource{}, wrap("read resource", pgFound(err))
	}
	return r, nil
}

// WriteResources implements Store. Each write is conditional on the row
// as it is when the write reaches it: a concurrent writer of the same row
// waits for this transaction and then finds another version.
func (p *Postgres) WriteResources(ctx context.Context, userID string, bumpConfig bool, writes ...ResourceWrite) (int64, error) {
	for _, w := range writes {
		if w.Kind == "" || w.ID == "" || w.Version < 0 || (w.Body != nil && len(w.Body) == 0) {
			return 0, fmt.Errorf("store: write resources: a write needs a kind, an id, a version of at least 0 and a body that is nil or not empty")
		}
	}
	var version int64
	err := p.tx(ctx, func(tx pgx.Tx) error {
		if err := pgUserExists(ctx, tx, userID); err != nil {
			return err
		}
		latest := time.Time{}
		for _, w := range writes {
			if err := pgWriteResource(ctx, tx, userID, w); err != nil {
				return err
			}
			if w.At.After(latest) {
				latest = w.At
			}
		}
		if !bumpConfig {
			err := tx.QueryRow(ctx, "SELECT version FROM manage_config WHERE user_id = $1", userID).Scan(&version)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil // never bumped: version 0
			}
			return err
		}
		if latest.IsZero() {
			latest = time.Now()
		}
		return tx.QueryRow(ctx,
			`INSERT INTO manage_config (user_id, version, updated_at) VALUES ($1, 1, $2)
			 ON CONFLICT (user_id) DO UPDATE SET version = manage_config.version + 1, updated_at = excluded.updated_at
			 RETURNING version`, userID, millis(latest)).Scan(&version)
	})
	if err != nil {
		return 0, wrap("write resources", err)
	}
	return version, nil
}

// pgWriteResource applies one conditional write inside tx.
func pgWriteResource(ctx context.Context, tx pgx.Tx, userID string, w ResourceWrite) error {
	var err error
	switch {
	case w.Version == 0 && w.Body != nil: // create
		_, err = tx.Exec(ctx,
			`INSERT INTO manage_resources (user_id, kind, id, version, body, created_at, updated_at)
			 VALUES ($1, $2, $3, 1, $4, $5, $5)`,
			userID, w.Kind, w.ID, w.Body, millis(w.At))
		if pgCode(err) == pgUniqueViolation {
			return ErrVersionConflict
		}
		return err
	case w.Version == 0: // delete of a resource that must not exist: a check only
		var one int
		err = tx.QueryRow(ctx,
			"SELECT 1 FROM manage_resources WHERE user_id = $1 AND kind = $2 AND id = $3", userID, w.Kind, w.ID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err == nil {
			return ErrVersionConflict
		}
		return err
	case w.Body != nil: // update
		err = pgAffected(tx.Exec(ctx,
			`UPDATE manage_resources SET version = version + 1, body = $1, updated_at = $2
			 WHERE user_id = $3 AND kind = $4 AND id = $5 AND version = $6`,
			w.Body, millis(w.At), userID, w.Kind, w.ID, w.Version))
	default: // delete
		err = pgAffected(tx.Exec(ctx,
			"DELETE FROM manage_resources WHERE user_id = $1 AND kind = $2 AND id = $3 AND version = $4",
			userID, w.Kind, w.ID, w.Version))
	}
	if errors.Is(err, ErrNotFound) {
		return ErrVersionConflict // missing, or at another version
	}
	return err
}

// SetConnections implements Store. The row's updated_at takes the
// database's clock.
func (p *Postgres) SetConnections(ctx context.Context, userID string, connections []byte) error {
	_, err := p.pool.Exec(ctx,
		`INSERT INTO manage_config (user_id, version, connections, updated_at) VALUES ($1, 0, $2, `+nowMS+`)
		 ON CONFLICT (user_id) DO UPDATE SET connections = excluded.connections, updated_at = excluded.updated_at`,
		userID, connections)
	return wrap("set connections", pgNoUser(err))
}
