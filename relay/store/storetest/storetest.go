// Package storetest gives tests a store of either backend: a fresh SQLite
// database in a temporary directory, or a fresh schema of the PostgreSQL
// database that the TB_TEST_POSTGRES environment variable names. Tests
// that ask for PostgreSQL skip, saying so, when the variable is unset.
//
// Every PostgreSQL test gets its own schema (tb_test_<random>), so tests
// of several packages may share the database at once; the schema is
// dropped at the test's cleanup.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"tradebridge/relay/store"
)

// EnvPostgres is the environment variable naming the PostgreSQL database
// of the tests, a postgres:// URL such as
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
const EnvPostgres = "TB_TEST_POSTGRES"

// Backends are the names Open accepts.
var Backends = []string{"sqlite", "postgres"}

// setupTimeout bounds creating and dropping a test's schema.
const setupTimeout = 30 * time.Second

// PostgresURL creates a fresh schema in the database of TB_TEST_POSTGRES
// and returns a URL whose connections use it (its search_path), for the
// test alone; the schema is dropped, with all it holds, at the test's
// cleanup. It skips the test when TB_TEST_POSTGRES is unset.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvPostgres)
	if base == "" {
		t.Skip(EnvPostgres + " is unset: set it to a PostgreSQL URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the PostgreSQL tests")
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "tb_test_" + hex.EncodeToString(b[:])
	exec(t, base, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { exec(t, base, "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
	return withSearchPath(t, base, schema)
}

// withSearchPath adds search_path=schema to a URL or to a keyword/value
// connection string; pgx sends it as a run-time parameter.
func withSearchPath(t testing.TB, base, schema string) string {
	t.Helper()
	if !strings.Contains(base, "://") {
		return base + " search_path=" + schema
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("storetest: %s does not parse as a URL", EnvPostgres)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// exec runs one statement on its own connection to the database.
func exec(t testing.TB, connString, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		t.Fatalf("storetest: connect to the database of %s: %v", EnvPostgres, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("storetest: %s: %v", sql, err)
	}
}

// Open returns a fresh, empty store of the backend ("sqlite" or
// "postgres"), closed at the test's cleanup. "postgres" skips the test
// when TB_TEST_POSTGRES is unset.
func Open(t testing.TB, backend string) store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	var s store.Store
	var err error
	switch backend {
	case "sqlite":
		s, err = store.Open(ctx, store.Options{Dir: t.TempDir()})
	case "postgres":
		s, err = store.OpenPostgres(ctx, store.PostgresOptions{URL: PostgresURL(t)})
	default:
		t.Fatalf("storetest: unknown backend %q (want one of %v)", backend, Backends)
	}
	if err != nil {
		t.Fatalf("storetest: open the %s store: %v", backend, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
