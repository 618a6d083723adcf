package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/store"
)

// A support token is stored with its grants, all or nothing, read back
// with them, listed, and revoked once.
func TestSupportTokens(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.withUsers(t, "u1", "u2", "u3")

		require.NoError(t, s.CreateSupportToken(ctx, store.SupportToken{Hash: "h-s1", Name: "sam", Grants: []string{"u2", "u1"}, CreatedAt: t0}))
		require.NoError(t, s.CreateSupportToken(ctx, store.SupportToken{Hash: "h-s2", Name: "sue", Grants: []string{"u3"}, CreatedAt: t0.Add(time.Minute)}))
		got, err := s.SupportToken(ctx, "h-s1")
		require.NoError(t, err)
		require.Equal(t, store.SupportToken{Hash: "h-s1", Name: "sam", Grants: []string{"u1", "u2"}, CreatedAt: t0}, got, "grants sorted")
		require.False(t, got.Revoked())

		for _, tc := range []struct {
			name string
			tok  store.SupportToken
			want error
		}{
			{"unknown user", store.SupportToken{Hash: "h-s3", Name: "sid", Grants: []string{"u1", "nobody"}, CreatedAt: t0}, store.ErrNotFound},
			{"hash taken", store.SupportToken{Hash: "h-s1", Name: "sid", Grants: []string{"u1"}, CreatedAt: t0}, store.ErrConflict},
		} {
			require.ErrorIs(t, s.CreateSupportToken(ctx, tc.tok), tc.want, tc.name)
		}
		_, err = s.SupportToken(ctx, "h-s3")
		require.ErrorIs(t, err, store.ErrNotFound, "a refused token leaves nothing, not even its row")
		require.Error(t, s.CreateSupportToken(ctx, store.SupportToken{Hash: "h-s4", Grants: []string{"u1"}}), "a name is required")

		// The trading tokens' table knows nothing of it, and the other way
		// round.
		_, _, err = s.LookupToken(ctx, "h-s1")
		require.ErrorIs(t, err, store.ErrNotFound)

		require.NoError(t, s.RevokeSupportToken(ctx, "h-s1", t0.Add(time.Hour)))
		require.NoError(t, s.RevokeSupportToken(ctx, "h-s1", t0.Add(2*time.Hour)), "revoking twice changes nothing")
		require.ErrorIs(t, s.RevokeSupportToken(ctx, "h-nope", t0), store.ErrNotFound)

		require.NoError(t, s.Close())
		s2 := b.open(t)
		all, err := s2.ListSupportTokens(ctx)
		require.NoError(t, err)
		require.Equal(t, []store.SupportToken{
			{Hash: "h-s1", Name: "sam", Grants: []string{"u1", "u2"}, CreatedAt: t0, RevokedAt: t0.Add(time.Hour)},
			{Hash: "h-s2", Name: "sue", Grants: []string{"u3"}, CreatedAt: t0.Add(time.Minute)},
		}, all, "durable, oldest first, the first revocation time kept")
	})
}

func session(id, user string, at time.Time) store.AgentSession {
	return store.AgentSession{SessionID: id, UserID: user, ConnectedAt: at, AgentVersion: "1.2.0", ProtocolVersion: 5,
		Platform: "sim", RemoteAddr: "192.0.2.7"}
}

// Sessions start open, end once, carry their latest diagnostics, and are
// listed newest first within the window; refused handshakes have no
// session.
func TestAgentSessions(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.withUsers(t, "u1", "u2")

		require.NoError(t, s.AddAgentSession(ctx, session("tun_1", "u1", t0)))
		require.ErrorIs(t, s.AddAgentSession(ctx, session("tun_1", "u1", t0)), store.ErrConflict)
		require.NoError(t, s.EndAgentSession(ctx, "tun_1", t0.Add(time.Hour), "replaced"))
		require.NoError(t, s.EndAgentSession(ctx, "tun_1", t0.Add(2*time.Hour), "agent_closed"), "a second end changes nothing")
		require.ErrorIs(t, s.EndAgentSession(ctx, "tun_nope", t0, "agent_closed"), store.ErrNotFound)
		require.NoError(t, s.AddAgentSession(ctx, session("tun_2", "u1", t0.Add(time.Hour))))
		refused := store.AgentSession{UserID: "u1", ConnectedAt: t0.Add(2 * time.Hour), DisconnectedAt: t0.Add(2 * time.Hour),
			Reason: "version_unsupported", ProtocolVersion: 9, RemoteAddr: "192.0.2.7"}
		require.NoError(t, s.AddAgentSession(ctx, refused))
		require.NoError(t, s.AddAgentSession(ctx, refused), "refused handshakes have no session id to collide")
		require.NoError(t, s.AddAgentSession(ctx, session("tun_3", "u2", t0)))

		_, err := s.LatestAgentDiagnostics(ctx, "u1")
		require.ErrorIs(t, err, store.ErrNotFound)
		require.NoError(t, s.SetAgentSessionDiagnostics(ctx, "tun_1", []byte(`{"agentVersion":"old"}`), t0.Add(time.Minute)))
		require.NoError(t, s.SetAgentSessionDiagnostics(ctx, "tun_2", []byte(`{"agentVersion":"1.2.0"}`), t0.Add(61*time.Minute)))
		require.ErrorIs(t, s.SetAgentSessionDiagnostics(ctx, "tun_nope", []byte(`{}`), t0), store.ErrNotFound)
		d, err := s.LatestAgentDiagnostics(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, store.StoredDiagnostics{SessionID: "tun_2", JSON: []byte(`{"agentVersion":"1.2.0"}`), At: t0.Add(61 * time.Minute)}, d)
		_, err = s.LatestAgentDiagnostics(ctx, "u2")
		require.ErrorIs(t, err, store.ErrNotFound, "another user's are not")

		got, err := s.AgentSessions(ctx, "u1", t0.Add(-time.Hour), 10)
		require.NoError(t, err)
		ended := session("tun_1", "u1", t0)
		ended.DisconnectedAt, ended.Reason = t0.Add(time.Hour), "replaced"
		refused.SessionID = ""
		require.Equal(t, []store.AgentSession{refused, refused, session("tun_2", "u1", t0.Add(time.Hour)), ended}, got)

		got, err = s.AgentSessions(ctx, "u1", t0.Add(-time.Hour), 2)
		require.NoError(t, err)
		require.Len(t, got, 2, "the limit holds")
		got, err = s.AgentSessions(ctx, "u1", t0.Add(90*time.Minute), 10)
		require.NoError(t, err)
		require.Len(t, got, 3, "the session that ended before since is left out; the live one stays")
		got, err = s.AgentSessions(ctx, "nobody", t0, 10)
		require.NoError(t, err)
		require.Empty(t, got)
	})
}

// At a relay node's start the sessions its previous run left open are
// closed, and no other node's; pruning forgets the sessions that ended
// before the cut and keeps the live ones, however old.
func TestCloseOpenAndPruneAgentSessions(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := b.withUsers(t, "u1")
		old := t0.Add(-40 * 24 * time.Hour)
		require.NoError(t, s.AddAgentSession(ctx, session("tun_old_ended", "u1", old)))
		require.NoError(t, s.EndAgentSession(ctx, "tun_old_ended", old.Add(time.Hour), "agent_closed"))
		require.NoError(t, s.AddAgentSession(ctx, session("tun_old_live", "u1", old)))
		require.NoError(t, s.AddAgentSession(ctx, session("tun_recent", "u1", t0.Add(-time.Hour))))
		require.NoError(t, s.EndAgentSession(ctx, "tun_recent", t0.Add(-time.Minute), "connection_lost"))
		require.NoError(t, s.AddAgentSession(ctx, session("tun_live", "u1", t0.Add(-time.Minute))))
		other := session("tun_other_node", "u1", t0.Add(-2*time.Minute))
		other.Node = "node-b"
		require.NoError(t, s.AddAgentSession(ctx, other))

		n, err := s.PruneAgentSessions(ctx, t0.Add(-30*24*time.Hour))
		require.NoError(t, err)
		require.Equal(t, 1, n)
		got, err := s.AgentSessions(ctx, "u1", old.Add(-time.Hour), 10)
		require.NoError(t, err)
		ids := []string{}
		for _, a := range got {
			ids = append(ids, a.SessionID)
		}
		require.Equal(t, []string{"tun_live", "tun_other_node", "tun_recent", "tun_old_live"}, ids)

		n, err = s.CloseOpenAgentSessions(ctx, "", t0, "relay_stopped")
		require.NoError(t, err)
		require.Equal(t, 2, n)
		got, err = s.AgentSessions(ctx, "u1", old.Add(-time.Hour), 10)
		require.NoError(t, err)
		for _, a := range got {
			require.Equal(t, a.SessionID == "tun_other_node", a.DisconnectedAt.IsZero(), a.SessionID)
		}
		require.Equal(t, "relay_stopped", got[0].Reason)
		require.Equal(t, t0, got[0].DisconnectedAt)
		require.Equal(t, other, got[1], "another node's session is left alone, and lists its node")
		require.Equal(t, "connection_lost", got[2].Reason, "ended sessions keep their reason")
		n, err = s.CloseOpenAgentSessions(ctx, "", t0, "relay_stopped")
		require.NoError(t, err)
		require.Zero(t, n)

		n, err = s.CloseOpenAgentSessions(ctx, "node-b", t0.Add(-time.Hour), "relay_stopped")
		require.NoError(t, err)
		require.Equal(t, 1, n)
		got, err = s.AgentSessions(ctx, "u1", old.Add(-time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, "tun_other_node", got[1].SessionID)
		require.Equal(t, t0.Add(-2*time.Minute), got[1].DisconnectedAt, "closed at its start, which is later than at")
	})
}

// A database of schema 6 (one relay node) migrates: its sessions belong
// to the node without a name, which closes them at its start.
func TestMigrateFromSchema6(t *testing.T) {
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
		"DROP TABLE webhook_alerts", "DROP TABLE webhooks", "DROP TABLE alert_deliveries", "DROP TABLE activity", "DROP TABLE pairing_codes", "DROP TABLE oauth_states", "DROP TABLE broker_leases", "DROP INDEX agent_sessions_open",
		"ALTER TABLE agent_sessions DROP COLUMN node", "PRAGMA user_version = 6",
		"INSERT INTO agent_sessions (session_id, user_id, connected_at) VALUES ('tun_1', 'u1', 1000)",
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	require.NoError(t, db.Close())

	s2 := open(t, dir)
	v, err := s2.SchemaVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, 14, v)
	n, err := s2.CloseOpenAgentSessions(ctx, "", t0, "relay_stopped")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	ok, err := s2.AcquireBrokerLease(ctx, "u1", "node-a", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
}
