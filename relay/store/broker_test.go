package store_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/store"
)

func link(user, env, sealed string, at time.Time) store.BrokerLink {
	return store.BrokerLink{UserID: user, Env: env, Method: "apikey", Sealed: sealed, LinkedAt: at, UpdatedAt: at}
}

// A link is stored, read, listed, replaced whole by a relink, updated,
// and survives a reopen.
func TestBrokerLinkLifecycle(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.withUsers(t, "u1", "u2")

		_, err := s.BrokerLink(ctx, "u1")
		require.ErrorIs(t, err, store.ErrNotFound)
		links, err := s.ListBrokerLinks(ctx)
		require.NoError(t, err)
		require.Empty(t, links)

		require.NoError(t, s.PutBrokerLink(ctx, link("u2", "live", "v1.k.two", t0)))
		require.NoError(t, s.PutBrokerLink(ctx, link("u1", "demo", "v1.k.one", t0)))
		got, err := s.BrokerLink(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, link("u1", "demo", "v1.k.one", t0), got)

		later := t0.Add(time.Hour)
		require.NoError(t, s.UpdateBrokerSealed(ctx, "u1", "v1.k.session", later))
		got, err = s.BrokerLink(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, store.BrokerLink{UserID: "u1", Env: "demo", Method: "apikey", Sealed: "v1.k.session", LinkedAt: t0, UpdatedAt: later}, got,
			"an update keeps LinkedAt")

		relinked := store.BrokerLink{UserID: "u1", Env: "live", Method: "oauth", Sealed: "v1.k.new", LinkedAt: later.Add(time.Minute), UpdatedAt: later.Add(time.Minute)}
		require.NoError(t, s.PutBrokerLink(ctx, relinked))
		got, err = s.BrokerLink(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, relinked, got, "a relink replaces the link whole")

		require.NoError(t, s.Close())
		s = b.open(t)
		links, err = s.ListBrokerLinks(ctx)
		require.NoError(t, err)
		require.Equal(t, []store.BrokerLink{relinked, link("u2", "live", "v1.k.two", t0)}, links, "by user id, durable")
	})
}

func TestBrokerLinkErrors(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.withUsers(t, "u1")
		for _, tc := range []struct {
			name string
			err  error
			want error
		}{
			{"put for an unknown user", s.PutBrokerLink(ctx, link("nobody", "demo", "v1.k.x", t0)), store.ErrNotFound},
			{"update without a link", s.UpdateBrokerSealed(ctx, "u1", "v1.k.x", t0), store.ErrNotFound},
			{"swap without a link", s.SwapBrokerSealed(ctx, "u1", "", "v1.k.x", t0), store.ErrNotFound},
			{"state of an unknown user", s.PutBrokerState(ctx, "nobody", "b", "k", []byte("v")), store.ErrNotFound},
			{"write of an unknown user", s.BeginBrokerWrite(ctx, "nobody", "w1", [32]byte{}, t0), store.ErrNotFound},
			{"finish of an unknown write", s.FinishBrokerWrite(ctx, "u1", "w1", nil, "x", "y"), store.ErrNotFound},
		} {
			require.ErrorIs(t, tc.err, tc.want, tc.name)
		}
		require.Error(t, s.PutBrokerLink(ctx, link("u1", "demo", "", t0)), "a link needs its secrets")
		_, err := s.BrokerLink(ctx, "u1")
		require.ErrorIs(t, err, store.ErrNotFound, "nothing was stored")
	})
}

// SwapBrokerSealed writes only over the value the caller read: a
// concurrent change wins and the swap reports a conflict.
func TestSwapBrokerSealed(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.withUsers(t, "u1")
		require.NoError(t, s.PutBrokerLink(ctx, link("u1", "demo", "A", t0)))

		require.NoError(t, s.SwapBrokerSealed(ctx, "u1", "A", "B", t0.Add(time.Second)))
		err := s.SwapBrokerSealed(ctx, "u1", "A", "C", t0.Add(2*time.Second))
		require.ErrorIs(t, err, store.ErrVersionConflict)
		got, err := s.BrokerLink(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, "B", got.Sealed)
		require.Equal(t, t0.Add(time.Second), got.UpdatedAt)

		// Of many swaps from the same value at once, exactly one wins.
		var wg sync.WaitGroup
		errs := make([]error, 10)
		for i := range errs {
			wg.Go(func() { errs[i] = s.SwapBrokerSealed(ctx, "u1", "B", "from-"+string(rune('a'+i)), t0) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
				continue
			}
			require.ErrorIs(t, err, store.ErrVersionConflict)
		}
		require.Equal(t, 1, won)
	})
}

// Deleting a link removes its state and journal, and only the user's.
func TestDeleteBrokerLink(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.withUsers(t, "u1", "u2")
		for _, u := range []string{"u1", "u2"} {
			require.NoError(t, s.PutBrokerLink(ctx, link(u, "demo", "v1.k."+u, t0)))
			require.NoError(t, s.PutBrokerState(ctx, u, "ops.tags", "k", []byte("v")))
			require.NoError(t, s.BeginBrokerWrite(ctx, u, "w1", [32]byte{1}, t0))
		}

		had, err := s.DeleteBrokerLink(ctx, "u1")
		require.NoError(t, err)
		require.True(t, had)
		_, err = s.BrokerLink(ctx, "u1")
		require.ErrorIs(t, err, store.ErrNotFound)
		st, err := s.LoadBrokerState(ctx, "u1", "ops.tags")
		require.NoError(t, err)
		require.Empty(t, st)
		ws, err := s.LoadBrokerWrites(ctx, "u1", time.Time{})
		require.NoError(t, err)
		require.Empty(t, ws)

		st, err = s.LoadBrokerState(ctx, "u2", "ops.tags")
		require.NoError(t, err)
		require.Equal(t, map[string][]byte{"k": []byte("v")}, st, "another user's state stays")
		ws, err = s.LoadBrokerWrites(ctx, "u2", time.Time{})
		require.NoError(t, err)
		require.Len(t, ws, 1)

		had, err = s.DeleteBrokerLink(ctx, "u1")
		require.NoError(t, err)
		require.False(t, had, "nothing to delete")
		require.NoError(t, s.BeginBrokerWrite(ctx, "u1", "w1", [32]byte{1}, t0), "the id is free again")
	})
}

func TestBrokerState(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.withUsers(t, "u1", "u2")

		st, err := s.LoadBrokerState(ctx, "u1", "ops.tags")
		require.NoError(t, err)
		require.NotNil(t, st, "an empty map, not nil")
		require.Empty(t, st)

		require.NoError(t, s.PutBrokerState(ctx, "u1", "ops.tags", "a", []byte("1")))
		require.NoError(t, s.PutBrokerState(ctx, "u1", "ops.tags", "b", []byte("2")))
		require.NoError(t, s.PutBrokerState(ctx, "u1", "ops.tags", "a", []byte("3")), "a put replaces")
		require.NoError(t, s.PutBrokerState(ctx, "u1", "orders", "a", []byte("other bucket")))
		require.NoError(t, s.PutBrokerState(ctx, "u2", "ops.tags", "a", []byte("other user")))
		require.NoError(t, s.PutBrokerState(ctx, "u1", "ops.tags", "empty", nil))
		require.NoError(t, s.DeleteBrokerState(ctx, "u1", "ops.tags", "b"))
		require.NoError(t, s.DeleteBrokerState(ctx, "u1", "ops.tags", "missing"), "deleting a missing key is no error")

		require.NoError(t, s.Close())
		s = b.open(t)
		st, err = s.LoadBrokerState(ctx, "u1", "ops.tags")
		require.NoError(t, err)
		require.Equal(t, map[string][]byte{"a": []byte("3"), "empty": {}}, st)
		st, err = s.LoadBrokerState(ctx, "u1", "orders")
		require.NoError(t, err)
		require.Equal(t, map[string][]byte{"a": []byte("other bucket")}, st)
	})
}

func TestBrokerWrites(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.withUsers(t, "u1", "u2")
		fp := func(s string) [32]byte { return sha256.Sum256([]byte(s)) }

		// Begun out of order in time; loaded oldest first.
		require.NoError(t, s.BeginBrokerWrite(ctx, "u1", "w2", fp("w2"), t0.Add(2*time.Second)))
		require.NoError(t, s.BeginBrokerWrite(ctx, "u1", "w1", fp("w1"), t0.Add(time.Second)))
		require.NoError(t, s.BeginBrokerWrite(ctx, "u1", "w3", fp("w3"), t0.Add(3*time.Second)))
		require.NoError(t, s.BeginBrokerWrite(ctx, "u2", "w1", fp("u2"), t0), "ids are per user")
		require.ErrorIs(t, s.BeginBrokerWrite(ctx, "u1", "w1", fp("again"), t0), store.ErrConflict)

		require.NoError(t, s.FinishBrokerWrite(ctx, "u1", "w1", []byte(`{"orderId":"1"}`), "", ""))
		require.NoError(t, s.FinishBrokerWrite(ctx, "u1", "w2", nil, "order_rejected", "the broker refused the order"))

		require.NoError(t, s.Close())
		s = b.open(t)
		ws, err := s.LoadBrokerWrites(ctx, "u1", time.Time{})
		require.NoError(t, err)
		require.Equal(t, []store.BrokerWrite{
			{ID: "w1", Fingerprint: fp("w1"), At: t0.Add(time.Second), Done: true, Result: []byte(`{"orderId":"1"}`)},
			{ID: "w2", Fingerprint: fp("w2"), At: t0.Add(2 * time.Second), Done: true, ErrCode: "order_rejected", ErrDetail: "the broker refused the order"},
			{ID: "w3", Fingerprint: fp("w3"), At: t0.Add(3 * time.Second)},
		}, ws, "durable, oldest first, the unfinished one not done")

		ws, err = s.LoadBrokerWrites(ctx, "u1", t0.Add(2*time.Second))
		require.NoError(t, err)
		require.Len(t, ws, 2, "since is inclusive")
		require.Equal(t, "w2", ws[0].ID)

		require.NoError(t, s.PruneBrokerWrites(ctx, "u1", t0.Add(2*time.Second)))
		ws, err = s.LoadBrokerWrites(ctx, "u1", time.Time{})
		require.NoError(t, err)
		require.Len(t, ws, 2, "pruned before, exclusive")
		require.Equal(t, []string{"w2", "w3"}, []string{ws[0].ID, ws[1].ID})
		ws, err = s.LoadBrokerWrites(ctx, "u2", time.Time{})
		require.NoError(t, err)
		require.Len(t, ws, 1, "another user's journal is not pruned")
		require.NoError(t, s.BeginBrokerWrite(ctx, "u1", "w1", fp("w1"), t0), "a pruned id is free")
	})
}

// A database of schema 4 (before the broker links) migrates: its users
// and their management state stay, and they can be linked.
func TestMigrateFromSchema4(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s := withUsers(t, dir, "u1")
	_, err := s.WriteResources(ctx, "u1", true, create("copier", "c1", `{}`, t0))
	require.NoError(t, err)
	want, err := s.ManagedState(ctx, "u1")
	require.NoError(t, err)
	require.NoError(t, s.Close())

	db, err := sql.Open("sqlite", filepath.Join(dir, store.FileName))
	require.NoError(t, err)
	for _, q := range []string{
		"DROP TABLE password_resets", "DROP TABLE sessions", "DROP INDEX users_email",
		"ALTER TABLE users DROP COLUMN email", "ALTER TABLE users DROP COLUMN password_hash", "ALTER TABLE tokens DROP COLUMN name", "ALTER TABLE tokens DROP COLUMN scope",
		"DROP TABLE webhook_alerts", "DROP TABLE webhooks", "DROP TABLE alert_deliveries", "DROP TABLE activity", "DROP TABLE pairing_codes", "DROP TABLE oauth_states", "DROP TABLE broker_leases",
		"DROP TABLE support_grants", "DROP TABLE support_tokens", "DROP TABLE agent_sessions",
		"DROP TABLE broker_links", "DROP TABLE broker_state", "DROP TABLE broker_writes", "PRAGMA user_version = 4",
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	require.NoError(t, db.Close())

	s2 := open(t, dir)
	v, err := s2.SchemaVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, 14, v)
	got, err := s2.ManagedState(ctx, "u1")
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.NoError(t, s2.PutBrokerLink(ctx, link("u1", "demo", "v1.k.x", t0)))
	require.NoError(t, s2.BeginBrokerWrite(ctx, "u1", "w1", [32]byte{}, t0))
}
