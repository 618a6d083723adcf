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

const resourceColumns = "kind, id, version, body, created_at, updated_at"

var (
	qConfig         = sqlConst("SELECT version, connections FROM manage_config WHERE user_id = ?")
	qConfigVersion  = sqlConst("SELECT version FROM manage_config WHERE user_id = ?")
	qResources      = sqlConst("SELECT " + resourceColumns + " FROM manage_resources WHERE user_id = ? ORDER BY kind, created_at, id")
	qResource       = sqlConst("SELECT " + resourceColumns + " FROM manage_resources WHERE user_id = ? AND kind = ? AND id = ?")
	qResourceExists = sqlConst("SELECT 1 FROM manage_resources WHERE user_id = ? AND kind = ? AND id = ?")
	qCreateResource = sqlConst(`INSERT INTO manage_resources (user_id, kind, id, version, body, created_at, updated_at)
		VALUES (?, ?, ?, 1, ?, ?, ?)`)
	qUpdateResource = sqlConst(`UPDATE manage_resources SET version = version + 1, body = ?, updated_at = ?
		WHERE user_id = ? AND kind = ? AND id = ? AND version = ?`)
	qDeleteResource = sqlConst("DELETE FROM manage_resources WHERE user_id = ? AND kind = ? AND id = ? AND version = ?")
	qBumpConfig     = sqlConst(`INSERT INTO manage_config (user_id, version, updated_at) VALUES (?, 1, ?)
		ON CONFLICT (user_id) DO UPDATE SET version = manage_config.version + 1, updated_at = excluded.updated_at
		RETURNING version`)
	qSetConnections = sqlConst(`INSERT INTO manage_config (user_id, version, connections, updated_at) VALUES (?, 0, ?, {now})
		ON CONFLICT (user_id) DO UPDATE SET connections = excluded.connections, updated_at = excluded.updated_at`)
)

// snapshot is a read-only transaction that sees one moment of the
// database throughout: REPEATABLE READ on PostgreSQL; on SQLite, whose
// driver takes no isolation level, every read transaction in WAL mode.
var snapshot = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}

// ManagedState implements Store. It reads in one snapshot, so the config
// version and the resources are of the same moment.
func (s *sqlStore) ManagedState(ctx context.Context, userID string) (ManagedState, error) {
	var st ManagedState
	err := s.txWith(ctx, snapshot, func(tx conn) error {
		err := tx.row(ctx, qConfig, userID).Scan(&st.ConfigVersion, &st.Connections)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		st.Resources, err = all(ctx, tx, func(row scanner) (Resource, error) {
			return scanResource(row, userID)
		}, qResources, userID)
		return err
	})
	if err != nil {
		return ManagedState{}, wrap("read managed state", err)
	}
	return st, nil
}

func scanResource(row scanner, userID string) (Resource, error) {
	r := Resource{UserID: userID}
	var created, updated int64
	if err := row.Scan(&r.Kind, &r.ID, &r.Version, &r.Body, &created, &updated); err != nil {
		return Resource{}, err
	}
	r.CreatedAt, r.UpdatedAt = fromMS(created), fromMS(updated)
	return r, nil
}

// Resource implements Store.
func (s *sqlStore) Resource(ctx context.Context, userID, kind, id string) (Resource, error) {
	r, err := scanResource(s.row(ctx, qResource, userID, kind, id), userID)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Resource{}, wrap("read resource", err)
	}
	return r, nil
}

// WriteResources implements Store. Each write is conditional on the row
// as it is when the write reaches it: a concurrent writer of the same row
// waits for this transaction and then finds another version.
func (s *sqlStore) WriteResources(ctx context.Context, userID string, bumpConfig bool, writes ...ResourceWrite) (int64, error) {
	for _, w := range writes {
		if w.Kind == "" || w.ID == "" || w.Version < 0 || (w.Body != nil && len(w.Body) == 0) {
			return 0, fmt.Errorf("store: write resources: a write needs a kind, an id, a version of at least 0 and a body that is nil or not empty")
		}
	}
	var version int64
	err := s.tx(ctx, func(tx conn) error {
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
			err := tx.row(ctx, qConfigVersion, userID).Scan(&version)
			if errors.Is(err, sql.ErrNoRows) {
				return nil // never bumped: version 0
			}
			return err
		}
		if latest.IsZero() {
			latest = time.Now()
		}
		return tx.row(ctx, qBumpConfig, userID, millis(latest)).Scan(&version)
	})
	if err != nil {
		return 0, wrap("write resources", err)
	}
	return version, nil
}

// writeResource applies one conditional write inside tx.
func writeResource(ctx context.Context, tx conn, userID string, w ResourceWrite) error {
	var err error
	switch {
	case w.Version == 0 && w.Body != nil: // create
		_, err = tx.exec(ctx, qCreateResource, userID, w.Kind, w.ID, w.Body, millis(w.At), millis(w.At))
		if err != nil && tx.d.isUnique(err) {
			return ErrVersionConflict
		}
		return err
	case w.Version == 0: // delete of a resource that must not exist: a check only
		var one int
		err = tx.row(ctx, qResourceExists, userID, w.Kind, w.ID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err == nil {
			return ErrVersionConflict
		}
		return err
	case w.Body != nil: // update
		err = affected(tx.exec(ctx, qUpdateResource, w.Body, millis(w.At), userID, w.Kind, w.ID, w.Version))
	default: // delete
		err = affected(tx.exec(ctx, qDeleteResource, userID, w.Kind, w.ID, w.Version))
	}
	if errors.Is(err, ErrNotFound) {
		return ErrVersionConflict // missing, or at another version
	}
	return err
}

// SetConnections implements Store. The row's updated_at takes the store's
// clock: the connections come from the agent, without a time of their own.
func (s *sqlStore) SetConnections(ctx context.Context, userID string, connections []byte) error {
	_, err := s.exec(ctx, qSetConnections, userID, orNull(connections))
	return wrap("set connections", s.d.noUser(err))
}
