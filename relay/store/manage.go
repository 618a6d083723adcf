package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The management resources: one row per resource in manage_resources,
// written only through WriteResources, and one row per user in
// manage_config with the version of the configuration pushed to the agent
// and the agent's platform connections.
//
// Every write runs in one BEGIN IMMEDIATE transaction (the DSN's
// _txlock=immediate), so concurrent writers queue on SQLite's write lock
// and each sees the versions its predecessors committed; the commit is
// durable on return (WAL journal, synchronous FULL).

// ManagedState implements Store. It reads in one transaction, so the
// config version and the resources are of the same moment.
func (s *SQLite) ManagedState(ctx context.Context, userID string) (ManagedState, error) {
	var st ManagedState
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return ManagedState{}, wrap("read managed state", err)
	}
	defer func() { _ = tx.Rollback() }() // read only: nothing to undo
	err = tx.QueryRowContext(ctx,
		"SELECT version, connections FROM manage_config WHERE user_id = ?", userID).
		Scan(&st.ConfigVersion, &st.Connections)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return ManagedState{}, wrap("read managed state", err)
	}
	rows, err := tx.QueryContext(ctx,
		`SELECT kind, id, version, body, created_at, updated_at FROM manage_resources
		 WHERE user_id = ? ORDER BY kind, created_at, id`, userID)
	if err != nil {
		return ManagedState{}, wrap("read managed state", err)
	}
	defer rows.Close()
	for rows.Next() {
		r := Resource{UserID: userID}
		if err := scanResource(rows, &r); err != nil {
			return ManagedState{}, wrap("read managed state", err)
		}
		st.Resources = append(st.Resources, r)
	}
	if err := rows.Err(); err != nil {
		return ManagedState{}, wrap("read managed state", err)
	}
	return st, nil
}

func scanResource(row interface{ Scan(...any) error }, r *Resource) error {
	var created, updated int64
	if err := row.Scan(&r.Kind, &r.ID, &r.Version, &r.Body, &created, &updated); err != nil {
		return err
	}
	r.CreatedAt = time.UnixMilli(created).UTC()
	r.UpdatedAt = time.UnixMilli(updated).UTC()
	return nil
}

// Resource implements Store.
func (s *SQLite) Resource(ctx context.Context, userID, kind, id string) (Resource, error) {
	r := Resource{UserID: userID}
	err := scanResource(s.db.QueryRowContext(ctx,
		`SELECT kind, id, version, body, created_at, updated_at FROM manage_resources
		 WHERE user_id = ? AND kind = ? AND id = ?`, userID, kind, id), &r)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Resource{}, wrap("read resource", err)
	}
	return r, nil
}

// WriteResources implements Store.
func (s *SQLite) WriteResources(ctx context.Context, userID string, bumpConfig bool, writes ...ResourceWrite) (int64, error) {
	for _, w := range writes {
		if w.Kind == "" || w.ID == "" || w.Version < 0 || (w.Body != nil && len(w.Body) == 0) {
			return 0, fmt.Errorf("store: write resources: a write needs a kind, an id, a version of at least 0 and a body that is nil or not empty")
		}
	}
	var version int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := userExists(ctx, tx, userID); err != nil {
			return err
		}
		latest := time.Time{}
		for _, w := range writes {
			if err := writeResource(ctx, tx, userID, w); err != nil {
				return err
			}
			if w.At.After(latest) {
				latest = w.At
			}
		}
		if !bumpConfig {
			err := tx.QueryRowContext(ctx, "SELECT version FROM manage_config WHERE user_id = ?", userID).Scan(&version)
			if errors.Is(err, sql.ErrNoRows) {
				return nil // never bumped: version 0
			}
			return err
		}
		if latest.IsZero() {
			latest = time.Now()
		}
		return tx.QueryRowContext(ctx,
			`INSERT INTO manage_config (user_id, version, updated_at) VALUES (?, 1, ?)
			 ON CONFLICT (user_id) DO UPDATE SET version = version + 1, updated_at = excluded.updated_at
			 RETURNING version`, userID, millis(latest)).Scan(&version)
	})
	if err != nil {
		return 0, wrap("write resources", err)
	}
	return version, nil
}

// writeResource applies one conditional write inside tx.
func writeResource(ctx context.Context, tx *sql.Tx, userID string, w ResourceWrite) error {
	var res sql.Result
	var err error
	switch {
	case w.Version == 0 && w.Body != nil: // create
		_, err = tx.ExecContext(ctx,
			`INSERT INTO manage_resources (user_id, kind, id, version, body, created_at, updated_at)
			 VALUES (?, ?, ?, 1, ?, ?, ?)`,
			userID, w.Kind, w.ID, w.Body, millis(w.At), millis(w.At))
		if isConstraint(err) {
			return ErrVersionConflict
		}
		return err
	case w.Version == 0: // delete of a resource that must not exist: a check only
		var one int
		err = tx.QueryRowContext(ctx,
			"SELECT 1 FROM manage_resources WHERE user_id = ? AND kind = ? AND id = ?", userID, w.Kind, w.ID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err == nil {
			return ErrVersionConflict
		}
		return err
	case w.Body != nil: // update
		res, err = tx.ExecContext(ctx,
			`UPDATE manage_resources SET version = version + 1, body = ?, updated_at = ?
			 WHERE user_id = ? AND kind = ? AND id = ? AND version = ?`,
			w.Body, millis(w.At), userID, w.Kind, w.ID, w.Version)
	default: // delete
		res, err = tx.ExecContext(ctx,
			"DELETE FROM manage_resources WHERE user_id = ? AND kind = ? AND id = ? AND version = ?",
			userID, w.Kind, w.ID, w.Version)
	}
	if err := affected(res, err); err != nil {
		if errors.Is(err, ErrNotFound) {
			return ErrVersionConflict // missing, or at another version
		}
		return err
	}
	return nil
}

// userExists reports ErrNotFound when the user does not exist.
func userExists(ctx context.Context, tx *sql.Tx, userID string) error {
	var one int
	err := tx.QueryRowContext(ctx, "SELECT 1 FROM users WHERE id = ?", userID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// SetConnections implements Store. The row's updated_at takes the store's
// clock: the connections come from the agent, without a time of their own.
func (s *SQLite) SetConnections(ctx context.Context, userID string, connections []byte) error {
	var conns any // NULL when nil
	if connections != nil {
		conns = connections
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := userExists(ctx, tx, userID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO manage_config (user_id, version, connections, updated_at) VALUES (?, 0, ?, ?)
			 ON CONFLICT (user_id) DO UPDATE SET connections = excluded.connections, updated_at = excluded.updated_at`,
			userID, conns, millis(time.Now()))
		return err
	})
	return wrap("set connections", err)
}
