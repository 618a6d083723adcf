package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/store"
)

// withUsers opens a store in dir with the users of the ids.
func withUsers(t *testing.T, dir string, ids ...string) *store.SQLite {
	t.Helper()
	s := open(t, dir)
	for _, id := range ids {
		require.NoError(t, s.CreateUser(context.Background(), store.User{ID: id, Name: id, Plan: "elite", CreatedAt: t0}))
	}
	return s
}

func create(kind, id, body string, at time.Time) store.ResourceWrite {
	return store.ResourceWrite{Kind: kind, ID: id, Body: []byte(body), At: at}
}

func TestResourceLifecycle(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.withUsers(t, "u1")

		v, err := s.WriteResources(ctx, "u1", true, create("copier", "c1", `{"a":1}`, t0))
		require.NoError(t, err)
		require.Equal(t, int64(1), v)
		r, err := s.Resource(ctx, "u1", "copier", "c1")
		require.NoError(t, err)
		require.Equal(t, store.Resource{UserID: "u1", Kind: "copier", ID: "c1", Version: 1, Body: []byte(`{"a":1}`), CreatedAt: t0, UpdatedAt: t0}, r)

		later := t0.Add(time.Minute)
		v, err = s.WriteResources(ctx, "u1", true, store.ResourceWrite{Kind: "copier", ID: "c1", Body: []byte(`{"a":2}`), Version: 1, At: later})
		require.NoError(t, err)
		require.Equal(t, int64(2), v)
		r, err = s.Resource(ctx, "u1", "copier", "c1")
		require.NoError(t, err)
		require.Equal(t, store.Resource{UserID: "u1", Kind: "copier", ID: "c1", Version: 2, Body: []byte(`{"a":2}`), CreatedAt: t0, UpdatedAt: later}, r,
			"an update bumps the version and UpdatedAt and keeps CreatedAt")

		v, err = s.WriteResources(ctx, "u1", true, store.ResourceWrite{Kind: "copier", ID: "c1", Version: 2, At: later})
		require.NoError(t, err, "a nil body deletes")
		require.Equal(t, int64(3), v)
		_, err = s.Resource(ctx, "u1", "copier", "c1")
		require.ErrorIs(t, err, store.ErrNotFound)

		v, err = s.WriteResources(ctx, "u1", true, create("copier", "c1", `{"a":3}`, later))
		require.NoError(t, err, "a deleted id can be created again")
		require.Equal(t, int64(4), v)
		r, err = s.Resource(ctx, "u1", "copier", "c1")
		require.NoError(t, err)
		require.Equal(t, int64(1), r.Version, "a new resource starts at version 1")
	})
}

// Each kind of write is conditional on its Version; a mismatch is
// ErrVersionConflict and changes nothing.
func TestWriteConflicts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		w    store.ResourceWrite
		want error
	}{
		{"create of an existing resource", create("monitor", "m1", `{}`, t0), store.ErrVersionConflict},
		{"update at a stale version", store.ResourceWrite{Kind: "monitor", ID: "m1", Body: []byte(`{"x":1}`), Version: 1, At: t0}, store.ErrVersionConflict},
		{"update at a future version", store.ResourceWrite{Kind: "monitor", ID: "m1", Body: []byte(`{"x":1}`), Version: 3, At: t0}, store.ErrVersionConflict},
		{"update of a missing resource", store.ResourceWrite{Kind: "monitor", ID: "m9", Body: []byte(`{"x":1}`), Version: 1, At: t0}, store.ErrVersionConflict},
		{"update of another kind's id", store.ResourceWrite{Kind: "copier", ID: "m1", Body: []byte(`{"x":1}`), Version: 2, At: t0}, store.ErrVersionConflict},
		{"delete at a stale version", store.ResourceWrite{Kind: "monitor", ID: "m1", Version: 1, At: t0}, store.ErrVersionConflict},
		{"delete of a missing resource", store.ResourceWrite{Kind: "monitor", ID: "m9", Version: 1, At: t0}, store.ErrVersionConflict},
		{"must-not-exist check of an existing resource", store.ResourceWrite{Kind: "monitor", ID: "m1", At: t0}, store.ErrVersionConflict},
		{"must-not-exist check of a missing resource", store.ResourceWrite{Kind: "monitor", ID: "m9", At: t0}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			each(t, []string{"u1"}, func(t *testing.T, s store.Store) { writeConflict(t, s, tc.w, tc.want) })
		})
	}
}

// writeConflict applies w to a monitor m1 at version 2 and checks that
// it fails with want, changing nothing, or succeeds.
func writeConflict(t *testing.T, s store.Store, w store.ResourceWrite, want error) {
	ctx := context.Background()
	_, err := s.WriteResources(ctx, "u1", true, create("monitor", "m1", `{}`, t0))
	require.NoError(t, err)
	_, err = s.WriteResources(ctx, "u1", true, store.ResourceWrite{Kind: "monitor", ID: "m1", Body: []byte(`{"v":2}`), Version: 1, At: t0})
	require.NoError(t, err)
	before, err := s.ManagedState(ctx, "u1")
	require.NoError(t, err)

	v, err := s.WriteResources(ctx, "u1", true, w)
	after, rerr := s.ManagedState(ctx, "u1")
	require.NoError(t, rerr)
	if want != nil {
		require.ErrorIs(t, err, want)
		require.Zero(t, v)
		require.Equal(t, before, after, "a refused write changes nothing, the config version included")
		return
	}
	require.NoError(t, err)
	require.Equal(t, before.ConfigVersion+1, after.ConfigVersion)
	require.Equal(t, before.Resources, after.Resources)
}

// Writes are all or nothing: a conflict in the last write undoes the ones
// before it.
func TestWriteResourcesAllOrNothing(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.withUsers(t, "u1")
		_, err := s.WriteResources(ctx, "u1", true,
			create("copier", "c1", `{"n":1}`, t0), create("monitor", "m1", `{"n":1}`, t0))
		require.NoError(t, err)
		before, err := s.ManagedState(ctx, "u1")
		require.NoError(t, err)
		require.Len(t, before.Resources, 2)

		_, err = s.WriteResources(ctx, "u1", true,
			create("copier", "c2", `{"n":2}`, t0),                                                       // a create
			store.ResourceWrite{Kind: "copier", ID: "c1", Body: []byte(`{"n":2}`), Version: 1, At: t0},  // an update
			store.ResourceWrite{Kind: "monitor", ID: "m1", Version: 1, At: t0},                          // a delete
			store.ResourceWrite{Kind: "monitor", ID: "m2", Body: []byte(`{"n":2}`), Version: 4, At: t0}) // the conflict
		require.ErrorIs(t, err, store.ErrVersionConflict)
		after, err := s.ManagedState(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, before, after)

		// The same writes without the conflict apply together.
		v, err := s.WriteResources(ctx, "u1", true,
			create("copier", "c2", `{"n":2}`, t0),
			store.ResourceWrite{Kind: "copier", ID: "c1", Body: []byte(`{"n":2}`), Version: 1, At: t0},
			store.ResourceWrite{Kind: "monitor", ID: "m1", Version: 1, At: t0})
		require.NoError(t, err)
		require.Equal(t, int64(2), v, "one bump per call, not per write")
		after, err = s.ManagedState(ctx, "u1")
		require.NoError(t, err)
		require.Len(t, after.Resources, 2)

		// Two writes of one resource in one call follow each other.
		_, err = s.WriteResources(ctx, "u1", false,
			store.ResourceWrite{Kind: "copier", ID: "c2", Body: []byte(`{"n":3}`), Version: 1, At: t0},
			store.ResourceWrite{Kind: "copier", ID: "c2", Body: []byte(`{"n":4}`), Version: 2, At: t0})
		require.NoError(t, err)
		r, err := s.Resource(ctx, "u1", "copier", "c2")
		require.NoError(t, err)
		require.Equal(t, int64(3), r.Version)
		require.JSONEq(t, `{"n":4}`, string(r.Body))
	})
}

func TestBumpConfig(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.withUsers(t, "u1", "u2")

		v, err := s.WriteResources(ctx, "u1", false, create("account-group", "g1", `{}`, t0))
		require.NoError(t, err)
		require.Zero(t, v, "a relay-only change does not bump, and a user never bumped is at 0")
		v, err = s.WriteResources(ctx, "u1", true)
		require.NoError(t, err)
		require.Equal(t, int64(1), v, "a bump without writes")
		v, err = s.WriteResources(ctx, "u1", true, create("copier", "c1", `{}`, t0))
		require.NoError(t, err)
		require.Equal(t, int64(2), v)
		v, err = s.WriteResources(ctx, "u1", false, store.ResourceWrite{Kind: "account-group", ID: "g1", Body: []byte(`{"x":1}`), Version: 1, At: t0})
		require.NoError(t, err)
		require.Equal(t, int64(2), v, "without bumpConfig the current version is returned")

		st, err := s.ManagedState(ctx, "u2")
		require.NoError(t, err)
		require.Equal(t, store.ManagedState{}, st, "another user's version is their own")
	})
}

func TestManagedStateOrderAndConnections(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.withUsers(t, "u1", "u2")

		// Written out of order: kind, then CreatedAt, then ID.
		_, err := s.WriteResources(ctx, "u1", true,
			create("monitor", "m-b", `{"i":5}`, t0),
			create("copier", "c-z", `{"i":2}`, t0.Add(time.Second)),
			create("monitor", "m-a", `{"i":4}`, t0),
			create("copier", "c-y", `{"i":1}`, t0),
			create("account-group", "g-1", `{"i":0}`, t0.Add(time.Hour)),
			create("copier", "c-x", `{"i":3}`, t0.Add(2*time.Second)))
		require.NoError(t, err)
		_, err = s.WriteResources(ctx, "u2", true, create("copier", "c-0", `{}`, t0))
		require.NoError(t, err)

		st, err := s.ManagedState(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, int64(1), st.ConfigVersion)
		require.Nil(t, st.Connections)
		var got []string
		for _, r := range st.Resources {
			require.Equal(t, "u1", r.UserID)
			got = append(got, r.Kind+"/"+r.ID)
		}
		require.Equal(t, []string{"account-group/g-1", "copier/c-y", "copier/c-z", "copier/c-x", "monitor/m-a", "monitor/m-b"}, got)

		require.NoError(t, s.SetConnections(ctx, "u1", []byte(`[{"name":"Sim"}]`)))
		st, err = s.ManagedState(ctx, "u1")
		require.NoError(t, err)
		require.JSONEq(t, `[{"name":"Sim"}]`, string(st.Connections))
		require.Equal(t, int64(1), st.ConfigVersion, "recording connections does not bump")
		require.NoError(t, s.SetConnections(ctx, "u1", nil))
		st, err = s.ManagedState(ctx, "u1")
		require.NoError(t, err)
		require.Nil(t, st.Connections, "nil forgets them")

		require.NoError(t, s.SetConnections(ctx, "u2", []byte(`[]`)), "connections before any bump")
		st, err = s.ManagedState(ctx, "u2")
		require.NoError(t, err)
		require.Equal(t, int64(1), st.ConfigVersion)
		require.Len(t, st.Resources, 1)
	})
}

// A user's resources are reached only with that user's id.
func TestResourcesPerUser(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.withUsers(t, "u1", "u2")
		_, err := s.WriteResources(ctx, "u1", true, create("copier", "c1", `{"u":1}`, t0))
		require.NoError(t, err)
		_, err = s.Resource(ctx, "u2", "copier", "c1")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.WriteResources(ctx, "u2", true, store.ResourceWrite{Kind: "copier", ID: "c1", Version: 1, At: t0})
		require.ErrorIs(t, err, store.ErrVersionConflict, "another user's resource cannot be deleted")
		_, err = s.WriteResources(ctx, "u2", true, create("copier", "c1", `{"u":2}`, t0))
		require.NoError(t, err, "ids are per user")
		r, err := s.Resource(ctx, "u1", "copier", "c1")
		require.NoError(t, err)
		require.JSONEq(t, `{"u":1}`, string(r.Body))
	})
}

func TestManageErrors(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.withUsers(t, "u1")

		_, err := s.WriteResources(ctx, "nobody", true, create("copier", "c1", `{}`, t0))
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorIs(t, s.SetConnections(ctx, "nobody", []byte(`[]`)), store.ErrNotFound)
		require.ErrorIs(t, s.SetUserAccess(ctx, "nobody", true, nil), store.ErrNotFound)
		st, err := s.ManagedState(ctx, "nobody")
		require.NoError(t, err)
		require.Equal(t, store.ManagedState{}, st)

		for _, w := range []store.ResourceWrite{
			{ID: "c1", Body: []byte(`{}`)},
			{Kind: "copier", Body: []byte(`{}`)},
			{Kind: "copier", ID: "c1", Body: []byte(`{}`), Version: -1},
			{Kind: "copier", ID: "c1", Body: []byte{}},
		} {
			_, err := s.WriteResources(ctx, "u1", true, w)
			require.Error(t, err)
			require.NotErrorIs(t, err, store.ErrVersionConflict)
		}
		st, err = s.ManagedState(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, store.ManagedState{}, st, "malformed writes store nothing")
	})
}

// Fifty writers with the same version: exactly one wins, the others
// conflict, and the resource moved by one version.
func TestConcurrentWritesOneWins(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.withUsers(t, "u1")
		_, err := s.WriteResources(ctx, "u1", true, create("monitor", "m1", `{"w":-1}`, t0))
		require.NoError(t, err)

		const n = 50
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = s.WriteResources(ctx, "u1", true, store.ResourceWrite{
					Kind: "monitor", ID: "m1", Body: []byte(fmt.Sprintf(`{"w":%d}`, i)), Version: 1, At: t0})
			}()
		}
		close(start)
		wg.Wait()

		winner := -1
		for i, err := range errs {
			if err == nil {
				require.Equal(t, -1, winner, "a second writer won")
				winner = i
				continue
			}
			require.ErrorIs(t, err, store.ErrVersionConflict)
		}
		require.NotEqual(t, -1, winner, "nobody won")
		r, err := s.Resource(ctx, "u1", "monitor", "m1")
		require.NoError(t, err)
		require.Equal(t, int64(2), r.Version)
		require.JSONEq(t, fmt.Sprintf(`{"w":%d}`, winner), string(r.Body))
		st, err := s.ManagedState(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, int64(2), st.ConfigVersion, "only the winner bumped")
	})
}

func TestUserAccess(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.open(t)
		require.NoError(t, s.CreateUser(ctx, store.User{ID: "u1", Name: "a", Plan: "elite", CreatedAt: t0},
			store.Token{Hash: "h1", UserID: "u1", Kind: "api", CreatedAt: t0}))
		u, err := s.User(ctx, "u1")
		require.NoError(t, err)
		require.False(t, u.ManagementClosed, "open by default")
		require.Nil(t, u.Withheld)

		require.NoError(t, s.SetUserAccess(ctx, "u1", true, []string{"tv", "copier"}))
		u, err = s.User(ctx, "u1")
		require.NoError(t, err)
		require.True(t, u.ManagementClosed)
		require.Equal(t, []string{"tv", "copier"}, u.Withheld)
		_, owner, err := s.LookupToken(ctx, "h1")
		require.NoError(t, err)
		require.Equal(t, u, owner, "a token's user carries the access")

		require.NoError(t, s.SetUserAccess(ctx, "u1", false, nil))
		u, err = s.User(ctx, "u1")
		require.NoError(t, err)
		require.False(t, u.ManagementClosed)
		require.Nil(t, u.Withheld)

		require.NoError(t, s.CreateUser(ctx, store.User{ID: "u2", Name: "b", Plan: "elite", CreatedAt: t0,
			ManagementClosed: true, Withheld: []string{"monitor"}}))
		u, err = s.User(ctx, "u2")
		require.NoError(t, err)
		require.True(t, u.ManagementClosed, "CreateUser stores the access")
		require.Equal(t, []string{"monitor"}, u.Withheld)
	})
}

// Everything of the management state is on disk when the write returns:
// a reopened store has it all.
func TestManagedStateSurvivesReopen(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.withUsers(t, "u1")
		_, err := s.WriteResources(ctx, "u1", true, create("copier", "c1", `{"a":1}`, t0), create("monitor", "m1", `{"b":1}`, t0))
		require.NoError(t, err)
		_, err = s.WriteResources(ctx, "u1", true, store.ResourceWrite{Kind: "copier", ID: "c1", Body: []byte(`{"a":2}`), Version: 1, At: t0.Add(time.Minute)})
		require.NoError(t, err)
		require.NoError(t, s.SetConnections(ctx, "u1", []byte(`[{"name":"Sim"}]`)))
		require.NoError(t, s.SetUserAccess(ctx, "u1", true, []string{"news-lockout"}))
		want, err := s.ManagedState(ctx, "u1")
		require.NoError(t, err)
		require.NoError(t, s.Close())

		s2 := b.open(t)
		got, err := s2.ManagedState(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, want, got)
		require.Equal(t, int64(2), got.ConfigVersion)
		u, err := s2.User(ctx, "u1")
		require.NoError(t, err)
		require.True(t, u.ManagementClosed)
		require.Equal(t, []string{"news-lockout"}, u.Withheld)
	})
}

// A database of schema 3 (before the Management API) migrates: its users
// keep everything and get the API open with nothing withheld.
func TestMigrateFromSchema3(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s := withUsers(t, dir, "u1")
	require.NoError(t, s.Close())

	db, err := sql.Open("sqlite", filepath.Join(dir, store.FileName))
	require.NoError(t, err)
	for _, q := range []string{
		"DROP TABLE password_resets", "DROP TABLE sessions", "DROP INDEX users_email",
		"ALTER TABLE users DROP COLUMN email", "ALTER TABLE users DROP COLUMN password_hash", "ALTER TABLE tokens DROP COLUMN name", "ALTER TABLE tokens DROP COLUMN scope",
		"DROP TABLE webhook_alerts", "DROP TABLE webhooks", "DROP TABLE alert_deliveries", "DROP TABLE activity", "DROP TABLE pairing_codes", "DROP TABLE oauth_states", "DROP TABLE broker_leases",
		"DROP TABLE support_grants", "DROP TABLE support_tokens", "DROP TABLE agent_sessions",
		"DROP TABLE broker_links", "DROP TABLE broker_state", "DROP TABLE broker_writes",
		"DROP TABLE manage_resources", "DROP TABLE manage_config",
		"ALTER TABLE users DROP COLUMN management_closed", "ALTER TABLE users DROP COLUMN withheld_features",
		"PRAGMA user_version = 3",
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	require.NoError(t, db.Close())

	s2 := open(t, dir)
	v, err := s2.SchemaVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, 14, v)
	u, err := s2.User(ctx, "u1")
	require.NoError(t, err)
	require.Equal(t, store.User{ID: "u1", Name: "u1", Plan: "elite", CreatedAt: t0}, u)
	_, err = s2.WriteResources(ctx, "u1", true, create("copier", "c1", `{}`, t0))
	require.NoError(t, err)
}
