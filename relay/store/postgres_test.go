package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"tradebridge/relay/store"
	"tradebridge/relay/store/storetest"
)

// A PostgreSQL database migrated by a newer relay is refused, as a SQLite
// one is.
func TestPostgresSchemaTooNew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.PostgresURL(t)
	s := openPostgres(t, url)
	v, err := s.SchemaVersion(ctx)
	require.NoError(t, err)
	require.Positive(t, v)
	require.NoError(t, s.Close())

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "UPDATE schema_version SET version = 999")
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))

	_, err = store.OpenPostgres(ctx, store.PostgresOptions{URL: url})
	require.ErrorIs(t, err, store.ErrSchemaTooNew)
}

// Three nodes starting at once on an empty database: one migrates, the
// others wait for it and find the schema current; all of them work.
func TestPostgresConcurrentMigrations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.PostgresURL(t)
	const nodes = 3
	stores := make([]*store.Postgres, nodes)
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range nodes {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = store.OpenPostgres(ctx, store.PostgresOptions{URL: url, MaxConns: 2})
		})
	}
	close(start)
	wg.Wait()
	for i := range nodes {
		require.NoError(t, errs[i], "node %d", i)
		t.Cleanup(func() { stores[i].Close() })
	}
	for i, s := range stores {
		v, err := s.SchemaVersion(ctx)
		require.NoError(t, err)
		require.Equal(t, 8, v, "node %d", i)
	}
	require.NoError(t, stores[0].CreateUser(ctx, store.User{ID: "u1", Name: "u1", Plan: "pro", CreatedAt: t0}))
	u, err := stores[2].User(ctx, "u1")
	require.NoError(t, err, "one database")
	require.Equal(t, "u1", u.ID)
}

func TestOpenPostgresErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts store.PostgresOptions
	}{
		{"no URL", store.PostgresOptions{}},
		{"negative MaxConns", store.PostgresOptions{URL: "postgres://h/db", MaxConns: -1}},
		{"not a connection string", store.PostgresOptions{URL: "postgres://u:s3cr3t@h:notaport/db"}},
		{"nobody listening", store.PostgresOptions{URL: "postgres://u:s3cr3t@127.0.0.1:1/db?connect_timeout=5"}},
	} {
		_, err := store.OpenPostgres(ctx, tc.opts)
		require.Error(t, err, tc.name)
		require.NotContains(t, err.Error(), "s3cr3t", "%s: the password is never shown", tc.name)
	}
}

// Dial opens the store the URL names and refuses others without showing
// their password.
func TestDial(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, u := range []string{"", "sqlite"} {
		s, err := store.Dial(ctx, store.DialOptions{URL: u, Dir: t.TempDir()})
		require.NoError(t, err, "%q", u)
		require.IsType(t, &store.SQLite{}, s)
		require.NoError(t, s.Close())
	}
	_, err := store.Dial(ctx, store.DialOptions{URL: "sqlite"})
	require.Error(t, err, "SQLite needs a directory")
	for _, u := range []string{"mysql://root:s3cr3t@db/relay", "redis://:s3cr3t@127.0.0.1:6379/0", "/var/lib/relay", "postgres:/x"} {
		_, err := store.Dial(ctx, store.DialOptions{URL: u, Dir: t.TempDir()})
		require.ErrorIs(t, err, store.ErrUnknownStore, u)
		require.NotContains(t, err.Error(), "s3cr3t", u)
	}

	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := storetest.PostgresURL(t)
		for _, u := range []string{url, "postgresql" + strings.TrimPrefix(url, "postgres")} {
			s, err := store.Dial(ctx, store.DialOptions{URL: u, Dir: t.TempDir()})
			require.NoError(t, err)
			require.IsType(t, &store.Postgres{}, s)
			require.NoError(t, s.Ping(ctx))
			require.NoError(t, s.Close())
			require.NoError(t, s.Close(), "Close is idempotent")
		}
	})
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"sqlite", "sqlite"},
		{"postgres://relay:s3cr3t@db:5432/relay?sslmode=require", "postgres://relay:xxxxx@db:5432/relay?sslmode=require"},
		{"postgres://relay@db/relay", "postgres://relay@db/relay"},
		{"postgres://db/relay?password=s3cr3t&user=relay", "postgres://db/relay?password=xxxxx&user=relay"},
		{"postgres://relay:s3cr3t@db:notaport/relay", "(a store URL that does not parse)"},
	} {
		require.Equal(t, tc.want, store.Redact(tc.in), tc.in)
	}
}

// Describe names the SQLite file by its absolute path and a PostgreSQL
// URL without its password.
func TestDescribe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		opts store.DialOptions
		want string
	}{
		{store.DialOptions{Dir: dir}, "sqlite:" + filepath.Join(dir, store.FileName)},
		{store.DialOptions{URL: "sqlite", Dir: dir}, "sqlite:" + filepath.Join(dir, store.FileName)},
		{store.DialOptions{URL: "postgres://relay:s3cr3t@db:5432/relay"}, "postgres://relay:xxxxx@db:5432/relay"},
	} {
		require.Equal(t, tc.want, tc.opts.Describe())
		require.NotContains(t, tc.opts.Describe(), "s3cr3t")
	}
	rel := store.DialOptions{Dir: "relay-data"}.Describe()
	require.True(t, strings.HasPrefix(rel, "sqlite:/"), "a relative --data is named absolute: %s", rel)
}

// Times are stored to the millisecond and read back in UTC, the same on
// every backend.
func TestMillisecondTimes(t *testing.T) {
	t.Parallel()
	each(t, nil, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		at := time.Date(2026, 11, 2, 9, 30, 0, 123456789, time.FixedZone("EST", -5*3600))
		before1970 := time.Date(1969, 7, 20, 20, 17, 40, 999_000_000, time.UTC)
		require.NoError(t, s.CreateUser(ctx, store.User{ID: "u1", Name: "u1", Plan: "pro", CreatedAt: at}))
		require.NoError(t, s.CreateUser(ctx, store.User{ID: "u2", Name: "u2", Plan: "pro", CreatedAt: before1970}))
		u, err := s.User(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, time.Date(2026, 11, 2, 14, 30, 0, 123_000_000, time.UTC), u.CreatedAt)
		u, err = s.User(ctx, "u2")
		require.NoError(t, err)
		require.Equal(t, before1970, u.CreatedAt)
	})
}

// A cancelled context stops a call.
func TestContextCancelled(t *testing.T) {
	t.Parallel()
	each(t, []string{"u1"}, func(t *testing.T, s store.Store) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := s.User(ctx, "u1")
		require.True(t, errors.Is(err, context.Canceled), "%v", err)
		_, err = s.WriteResources(ctx, "u1", true, create("copier", "c1", `{}`, t0))
		require.True(t, errors.Is(err, context.Canceled), "%v", err)
		_, err = s.AcquireBrokerLease(ctx, "u1", "node-a", time.Minute)
		require.Error(t, err)
	})
}
