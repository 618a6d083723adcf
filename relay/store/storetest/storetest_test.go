package storetest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/relay/store"
	"tradebridge/relay/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Each backend's store is fresh and works.
func TestOpen(t *testing.T) {
	t.Parallel()
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			s := storetest.Open(t, backend)
			ctx := context.Background()
			_, err := s.User(ctx, "u1")
			require.ErrorIs(t, err, store.ErrNotFound, "empty")
			require.NoError(t, s.CreateUser(ctx, store.User{ID: "u1", Name: "u1", Plan: "pro", CreatedAt: time.Now()}))
		})
	}
}

// The URL's connections use the test's own schema, which exists until the
// test's cleanup.
func TestPostgresURL(t *testing.T) {
	t.Parallel()
	url := storetest.PostgresURL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var schema string
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema))
	require.True(t, strings.HasPrefix(schema, "tb_test_"), schema)
	require.NotEqual(t, url, storetest.PostgresURL(t), "every call has its own schema")
}
