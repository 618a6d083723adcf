package store

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// The migrations of each database, numbered from 0001 without a gap:
// SQLite's in migrations/, PostgreSQL's in migrations/postgres/. A
// database records the number of the last one applied: SQLite in its
// user_version, PostgreSQL in the schema_version table.
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
