package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/internal/testkit"
	"tradebridge/relay/store"
	"tradebridge/relay/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// backend is one fresh database of a backend under test.
type backend struct {
	name string
	// open opens a new store on the database, closed at t's cleanup: a
	// reopen after a Close, or another relay node on the same database.
	open func(t *testing.T) store.Store
}

// withUsers opens a store on the database and creates the users of the
// ids.
func (b backend) withUsers(t *testing.T, ids ...string) store.Store {
	t.Helper()
	s := b.open(t)
	createUsers(t, s, ids)
	return s
}

// forEach runs fn as the parallel subtests "sqlite" and "postgres", each
// with a fresh database. The "postgres" one skips unless TB_TEST_POSTGRES
// names a database.
func forEach(t *testing.T, fn func(t *testing.T, b backend)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		fn(t, backend{name: "sqlite", open: func(t *testing.T) store.Store { return open(t, dir) }})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := storetest.PostgresURL(t)
		fn(t, backend{name: "postgres", open: func(t *testing.T) store.Store { return openPostgres(t, url) }})
	})
}

// each runs fn against every backend, on a fresh store holding the users
// of the ids.
func each(t *testing.T, users []string, fn func(t *testing.T, s store.Store)) {
	t.Helper()
	forEach(t, func(t *testing.T, b backend) { fn(t, b.withUsers(t, users...)) })
}

// eachShared runs fn against every backend with two stores that share one
// database, as two relay nodes do: two SQLite handles on one file, two
// PostgreSQL pools on one schema.
func eachShared(t *testing.T, users []string, fn func(t *testing.T, stores []store.Store)) {
	t.Helper()
	forEach(t, func(t *testing.T, b backend) { fn(t, []store.Store{b.withUsers(t, users...), b.open(t)}) })
}

func openPostgres(t *testing.T, url string) *store.Postgres {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Long)
	defer cancel()
	s, err := store.OpenPostgres(ctx, store.PostgresOptions{URL: url})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func createUsers(t *testing.T, s store.Store, ids []string) {
	t.Helper()
	for _, id := range ids {
		require.NoError(t, s.CreateUser(context.Background(), store.User{ID: id, Name: id, Plan: "elite", CreatedAt: t0}))
	}
}
