package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"
)

// Support tokens (support_tokens, support_grants) and the agents'
// connection history (agent_sessions).

var (
	qCreateSupportToken = sqlConst("INSERT INTO support_tokens (hash, name, created_at) VALUES (?, ?, ?)")
	qGrant              = sqlConst("INSERT INTO support_grants (token_hash, user_id) VALUES (?, ?) ON CONFLICT DO NOTHING")
	qSupportToken       = sqlConst("SELECT name, created_at, revoked_at FROM support_tokens WHERE hash = ?")
	qTokenGrants        = sqlConst("SELECT user_id FROM support_grants WHERE token_hash = ? ORDER BY user_id")
	qGrants             = sqlConst("SELECT token_hash, user_id FROM support_grants ORDER BY token_hash, user_id")
	qSupportTokens      = sqlConst("SELECT hash, name, created_at, revoked_at FROM support_tokens ORDER BY created_at, hash")
	qRevokeSupportToken = sqlConst("UPDATE support_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE hash = ?")
	qAddAgentSession    = sqlConst(`INSERT INTO agent_sessions (session_id, user_id, connected_at, disconnected_at, reason,
		agent_version, protocol_version, platform, remote_addr, node) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	qEndAgentSession = sqlConst(`UPDATE agent_sessions SET disconnected_at = ?, reason = ?
		WHERE session_id = ? AND disconnected_at IS NULL`)
	qAgentSessionExists = sqlConst("SELECT 1 FROM agent_sessions WHERE session_id = ?")
	qSetDiagnostics     = sqlConst("UPDATE agent_sessions SET diagnostics = ?, diagnostics_at = ? WHERE session_id = ?")
	qCloseOpenSessions  = sqlConst(`UPDATE agent_sessions
		SET disconnected_at = CASE WHEN connected_at > ? THEN connected_at ELSE ? END, reason = ?
		WHERE disconnected_at IS NULL AND node = ?`)
	qPruneAgentSessions = sqlConst("DELETE FROM agent_sessions WHERE disconnected_at < ?")
	qAgentSessions      = sqlConst(`SELECT session_id, connected_at, disconnected_at, reason, agent_version, protocol_version,
		platform, remote_addr, node FROM agent_sessions WHERE user_id = ? AND (disconnected_at IS NULL OR disconnected_at >= ?)
		ORDER BY connected_at DESC, id DESC LIMIT ?`)
	qLatestDiagnostics = sqlConst(`SELECT session_id, diagnostics, diagnostics_at FROM agent_sessions
		WHERE user_id = ? AND diagnostics IS NOT NULL ORDER BY diagnostics_at DESC, id DESC LIMIT 1`)
)

// CreateSupportToken implements Store.
func (s *sqlStore) CreateSupportToken(ctx context.Context, t SupportToken) error {
	if t.Hash == "" || t.Name == "" {
		return errors.New("store: create support token: a support token needs a hash and a name")
	}
	err := s.tx(ctx, func(tx conn) error {
		if _, err := tx.exec(ctx, qCreateSupportToken, t.Hash, t.Name, millis(t.CreatedAt)); err != nil {
			return tx.d.conflict(err)
		}
		for _, u := range t.Grants {
			if err := userExists(ctx, tx, u); err != nil {
				return err
			}
			if _, err := tx.exec(ctx, qGrant, t.Hash, u); err != nil {
				return tx.d.noUser(err)
			}
		}
		return nil
	})
	return wrap("create support token", err)
}

// SupportToken implements Store.
func (s *sqlStore) SupportToken(ctx context.Context, hash string) (SupportToken, error) {
	t := SupportToken{Hash: hash}
	var created int64
	var revoked sql.NullInt64
	err := s.row(ctx, qSupportToken, hash).Scan(&t.Name, &created, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return SupportToken{}, wrap("read support token", err)
	}
	t.CreatedAt, t.RevokedAt = fromMS(created), fromMillis(revoked)
	if t.Grants, err = all(ctx, s.conn, scanString, qTokenGrants, hash); err != nil {
		return SupportToken{}, wrap("read support token", err)
	}
	return t, nil
}

func scanString(row scanner) (string, error) {
	var v string
	err := row.Scan(&v)
	return v, err
}

// ListSupportTokens implements Store. The grants are read first, all of
// them: the table holds a few rows per member of the support staff.
func (s *sqlStore) ListSupportTokens(ctx context.Context) ([]SupportToken, error) {
	type grant struct{ hash, user string }
	granted, err := all(ctx, s.conn, func(row scanner) (grant, error) {
		var g grant
		err := row.Scan(&g.hash, &g.user)
		return g, err
	}, qGrants)
	if err != nil {
		return nil, wrap("list support tokens", err)
	}
	grants := map[string][]string{}
	for _, g := range granted {
		grants[g.hash] = append(grants[g.hash], g.user)
	}
	out, err := all(ctx, s.conn, func(row scanner) (SupportToken, error) {
		var t SupportToken
		var created int64
		var revoked sql.NullInt64
		err := row.Scan(&t.Hash, &t.Name, &created, &revoked)
		t.CreatedAt, t.RevokedAt = fromMS(created), fromMillis(revoked)
		t.Grants = slices.Clone(grants[t.Hash])
		return t, err
	}, qSupportTokens)
	return out, wrap("list support tokens", err)
}

// RevokeSupportToken implements Store.
func (s *sqlStore) RevokeSupportToken(ctx context.Context, hash string, at time.Time) error {
	return wrap("revoke support token", affected(s.exec(ctx, qRevokeSupportToken, millis(at), hash)))
}

// AddAgentSession implements Store.
func (s *sqlStore) AddAgentSession(ctx context.Context, a AgentSession) error {
	if a.UserID == "" {
		return errors.New("store: add agent session: an agent session needs a user")
	}
	var ended sql.NullInt64
	if !a.DisconnectedAt.IsZero() {
		ended = sql.NullInt64{Int64: millis(a.DisconnectedAt), Valid: true}
	}
	_, err := s.exec(ctx, qAddAgentSession, nullable(a.SessionID), a.UserID, millis(a.ConnectedAt), ended, a.Reason,
		a.AgentVersion, a.ProtocolVersion, a.Platform, a.RemoteAddr, a.Node)
	return wrap("add agent session", s.d.conflict(err))
}

// EndAgentSession implements Store.
func (s *sqlStore) EndAgentSession(ctx context.Context, sessionID string, at time.Time, reason string) error {
	err := affected(s.exec(ctx, qEndAgentSession, millis(at), reason, sessionID))
	if errors.Is(err, ErrNotFound) {
		// Ended already (the first end stays), or never recorded.
		var one int
		err = s.row(ctx, qAgentSessionExists, sessionID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			err = ErrNotFound
		}
	}
	return wrap("end agent session", err)
}

// SetAgentSessionDiagnostics implements Store.
func (s *sqlStore) SetAgentSessionDiagnostics(ctx context.Context, sessionID string, diagnostics []byte, at time.Time) error {
	res, err := s.exec(ctx, qSetDiagnostics, s.d.textBytes(diagnostics), millis(at), sessionID)
	return wrap("set agent session diagnostics", affected(res, err))
}

// CloseOpenAgentSessions implements Store.
func (s *sqlStore) CloseOpenAgentSessions(ctx context.Context, node string, at time.Time, reason string) (int, error) {
	n, err := changed(s.exec(ctx, qCloseOpenSessions, millis(at), millis(at), reason, node))
	return n, wrap("close open agent sessions", err)
}

// PruneAgentSessions implements Store.
func (s *sqlStore) PruneAgentSessions(ctx context.Context, before time.Time) (int, error) {
	n, err := changed(s.exec(ctx, qPruneAgentSessions, millis(before)))
	return n, wrap("prune agent sessions", err)
}

// AgentSessions implements Store.
func (s *sqlStore) AgentSessions(ctx context.Context, userID string, since time.Time, limit int) ([]AgentSession, error) {
	if limit <= 0 {
		return nil, nil
	}
	out, err := all(ctx, s.conn, func(row scanner) (AgentSession, error) {
		a := AgentSession{UserID: userID}
		var sid sql.NullString
		var connected int64
		var ended sql.NullInt64
		err := row.Scan(&sid, &connected, &ended, &a.Reason, &a.AgentVersion, &a.ProtocolVersion, &a.Platform, &a.RemoteAddr, &a.Node)
		a.SessionID = sid.String
		a.ConnectedAt, a.DisconnectedAt = fromMS(connected), fromMillis(ended)
		return a, err
	}, qAgentSessions, userID, millis(since), limit)
	return out, wrap("list agent sessions", err)
}

// LatestAgentDiagnostics implements Store.
func (s *sqlStore) LatestAgentDiagnostics(ctx context.Context, userID string) (StoredDiagnostics, error) {
	var d StoredDiagnostics
	var sid sql.NullString
	var at sql.NullInt64
	err := s.row(ctx, qLatestDiagnostics, userID).Scan(&sid, &d.JSON, &at)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return StoredDiagnostics{}, wrap("read agent diagnostics", err)
	}
	d.SessionID, d.At = sid.String, fromMillis(at)
	return d, nil
}
