package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// The migrations of each database, numbered from 0001 without a gap:
// SQLite's in migrations/, PostgreSQL's in migrations/postgres/. A
// database records the number of the last one applied (the dialect's
// schemaVersion: SQLite's user_version, PostgreSQL's schema_version
// table).
var (
	//go:embed migrations/*.sql
	sqliteMigrations embed.FS
	//go:embed migrations/postgres/*.sql
	postgresMigrations embed.FS
)

// migration is one numbered schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the migrations in dir of fsys, in order, and
// checks that they are numbered 1, 2, … without a gap.
func loadMigrations(fsys fs.FS, dir string) ([]migration, error) {
	files, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, fmt.Errorf("store: list migrations: %w", err)
	}
	sort.Strings(files)
	out := make([]migration, 0, len(files))
	for i, f := range files {
		name := path.Base(f)
		want := i + 1
		if n, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0]); err != nil || n != want {
			return nil, fmt.Errorf("store: migration %s is out of sequence (want %04d)", name, want)
		}
		body, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, fmt.Errorf("store: read migration %s: %w", name, err)
		}
		out = append(out, migration{version: want, name: name, sql: string(body)})
	}
	return out, nil
}

// migrate applies the dialect's migrations newer than the database's
// schema version and records the new version, all in one transaction
// that first takes the dialect's migration lock: stores opening one
// database at once migrate one after the other, and the later ones find
// the schema current. A failed migration leaves the schema as it was.
func (s *sqlStore) migrate(ctx context.Context) error {
	ms, err := loadMigrations(s.d.migrations, s.d.migrationsDir)
	if err != nil {
		return err
	}
	var applied []migration
	err = s.tx(ctx, func(tx conn) error {
		for _, q := range s.d.lockMigrations {
			if _, err := tx.q.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("lock the schema: %w", err)
			}
		}
		var current int
		if err := tx.q.QueryRowContext(ctx, s.d.schemaVersion).Scan(&current); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if current > len(ms) {
			return fmt.Errorf("%w: version %d, this relay knows %d", ErrSchemaTooNew, current, len(ms))
		}
		for _, m := range ms[current:] {
			if _, err := tx.q.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			applied = append(applied, m)
		}
		if len(applied) == 0 {
			return nil
		}
		_, err := tx.q.ExecContext(ctx, s.d.setSchemaVersion(len(ms)))
		return err
	})
	if errors.Is(err, ErrSchemaTooNew) {
		return err
	}
	if err != nil {
		return fmt.Errorf("store: migrate the %s schema: %w", s.d.name, err)
	}
	for _, m := range applied {
		s.log.Info("schema migrated", zap.Int("version", m.version), zap.String("migration", m.name))
	}
	return nil
}
