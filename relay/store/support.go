package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"
)

// Support tokens (support_tokens, support_grants) and the agents'
// connection history (agent_sessions). Every write is one statement or
// one transaction, durable on return.

// CreateSupportToken implements Store.
func (s *SQLite) CreateSupportToken(ctx context.Context, t SupportToken) error {
	if t.Hash == "" || t.Name == "" {
		return errors.New("store: create support token: a support token needs a hash and a name")
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO support_tokens (hash, name, created_at) VALUES (?, ?, ?)",
			t.Hash, t.Name, millis(t.CreatedAt))
		if isConstraint(err) {
			return ErrConflict
		}
		if err != nil {
			return err
		}
		for _, u := range t.Grants {
			var one int
			err := tx.QueryRowContext(ctx, "SELECT 1 FROM users WHERE id = ?", u).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return ErrNotFound
			}
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO support_grants (token_hash, user_id) VALUES (?, ?)", t.Hash, u); err != nil {
				return noUser(err)
			}
		}
		return nil
	})
	return wrap("create support token", err)
}

// SupportToken implements Store.
func (s *SQLite) SupportToken(ctx context.Context, hash string) (SupportToken, error) {
	t := SupportToken{Hash: hash}
	var created, revoked sql.NullInt64
	err := s.db.QueryRowContext(ctx, "SELECT name, created_at, revoked_at FROM support_tokens WHERE hash = ?", hash).
		Scan(&t.Name, &created, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return SupportToken{}, wrap("read support token", ErrNotFound)
	}
	if err != nil {
		return SupportToken{}, wrap("read support token", err)
	}
	t.CreatedAt, t.RevokedAt = fromMillis(created), fromMillis(revoked)
	rows, err := s.db.QueryContext(ctx, "SELECT user_id FROM support_grants WHERE token_hash = ? ORDER BY user_id", hash)
	if err != nil {
		return SupportToken{}, wrap("read support token", err)
	}
	defer rows.Close()
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return SupportToken{}, wrap("read support token", err)
		}
		t.Grants = append(t.Grants, u)
	}
	return t, wrap("read support token", rows.Err())
}

// grants returns every support token's grants by token hash, each sorted.
// The table holds a few rows per member of the support staff.
func (s *SQLite) grants(ctx context.Context) (map[string][]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT token_hash, user_id FROM support_grants ORDER BY token_hash, user_id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var h, u string
		if err := rows.Scan(&h, &u); err != nil {
			return nil, err
		}
		out[h] = append(out[h], u)
	}
	return out, rows.Err()
}

// ListSupportTokens implements Store.
func (s *SQLite) ListSupportTokens(ctx context.Context) ([]SupportToken, error) {
	grants, err := s.grants(ctx)
	if err != nil {
		return nil, wrap("list support tokens", err)
	}
	rows, err := s.db.QueryContext(ctx, "SELECT hash, name, created_at, revoked_at FROM support_tokens ORDER BY created_at, hash")
	if err != nil {
		return nil, wrap("list support tokens", err)
	}
	defer rows.Close()
	var out []SupportToken
	for rows.Next() {
		var t SupportToken
		var created, revoked sql.NullInt64
		if err := rows.Scan(&t.Hash, &t.Name, &created, &revoked); err != nil {
			return nil, wrap("list support tokens", err)
		}
		t.CreatedAt, t.RevokedAt = fromMillis(created), fromMillis(revoked)
		t.Grants = slices.Clone(grants[t.Hash])
		out = append(out, t)
	}
	return out, wrap("list support tokens", rows.Err())
}

// RevokeSupportToken implements Store.
func (s *SQLite) RevokeSupportToken(ctx context.Context, hash string, at time.Time) error {
	res, err := s.db.ExecContext(ctx,
		"UPDATE support_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE hash = ?", millis(at), hash)
	return wrap("revoke support token", affected(res, err))
}

// nullable stores "" as NULL.
func nullable(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// AddAgentSession implements Store.
func (s *SQLite) AddAgentSession(ctx context.Context, a AgentSession) error {
	if a.UserID == "" {
		return errors.New("store: add agent session: an agent session needs a user")
	}
	var ended sql.NullInt64
	if !a.DisconnectedAt.IsZero() {
		ended = sql.NullInt64{Int64: millis(a.DisconnectedAt), Valid: true}
	}
	_, err := s.db.ExecContext(ctx,
		`INSERT INTO agent_sessions (session_id, user_id, connected_at, disconnected_at, reason, agent_version,
		   protocol_version, platform, remote_addr, node) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		nullable(a.SessionID), a.UserID, millis(a.ConnectedAt), ended, a.Reason, a.AgentVersion,
		a.ProtocolVersion, a.Platform, a.RemoteAddr, a.Node)
	if isConstraint(err) {
		err = ErrConflict
	}
	return wrap("add agent session", err)
}

// EndAgentSession implements Store.
func (s *SQLite) EndAgentSession(ctx context.Context, sessionID string, at time.Time, reason string) error {
	res, err := s.db.ExecContext(ctx,
		"UPDATE agent_sessions SET disconnected_at = ?, reason = ? WHERE session_id = ? AND disconnected_at IS NULL",
		millis(at), reason, sessionID)
	if err == nil {
		if n, _ := res.RowsAffected(); n == 0 {
			// Ended already (the first end stays), or never recorded.
			var one int
			err = s.db.QueryRowContext(ctx, "SELECT 1 FROM agent_sessions WHERE session_id = ?", sessionID).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				err = ErrNotFound
			}
		}
	}
	return wrap("end agent session", err)
}

// SetAgentSessionDiagnostics implements Store.
func (s *SQLite) SetAgentSessionDiagnostics(ctx context.Context, sessionID string, diagnostics []byte, at time.Time) error {
	res, err := s.db.ExecContext(ctx,
		"UPDATE agent_sessions SET diagnostics = ?, diagnostics_at = ? WHERE session_id = ?",
		string(diagnostics), millis(at), sessionID)
	return wrap("set agent session diagnostics", affected(res, err))
}

// CloseOpenAgentSessions implements Store.
func (s *SQLite) CloseOpenAgentSessions(ctx context.Context, node string, at time.Time, reason string) (int, error) {
	res, err := s.db.ExecContext(ctx,
		"UPDATE agent_sessions SET disconnected_at = MAX(connected_at, ?), reason = ? WHERE disconnected_at IS NULL AND node = ?",
		millis(at), reason, node)
	if err != nil {
		return 0, wrap("close open agent sessions", err)
	}
	n, err := res.RowsAffected()
	return int(n), wrap("close open agent sessions", err)
}

// PruneAgentSessions implements Store.
func (s *SQLite) PruneAgentSessions(ctx context.Context, before time.Time) (int, error) {
	res, err := s.db.ExecContext(ctx, "DELETE FROM agent_sessions WHERE disconnected_at < ?", millis(before))
	if err != nil {
		return 0, wrap("prune agent sessions", err)
	}
	n, err := res.RowsAffected()
	return int(n), wrap("prune agent sessions", err)
}

// AgentSessions implements Store.
func (s *SQLite) AgentSessions(ctx context.Context, userID string, since time.Time, limit int) ([]AgentSession, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx,
		`SELECT session_id, connected_at, disconnected_at, reason, agent_version, protocol_version, platform, remote_addr, node
		 FROM agent_sessions WHERE user_id = ? AND (disconnected_at IS NULL OR disconnected_at >= ?)
		 ORDER BY connected_at DESC, id DESC LIMIT ?`, userID, millis(since), limit)
	if err != nil {
		return nil, wrap("list agent sessions", err)
	}
	defer rows.Close()
	var out []AgentSession
	for rows.Next() {
		a := AgentSession{UserID: userID}
		var sid sql.NullString
		var connected, ended sql.NullInt64
		if err := rows.Scan(&sid, &connected, &ended, &a.Reason, &a.AgentVersion, &a.ProtocolVersion, &a.Platform, &a.RemoteAddr, &a.Node); err != nil {
			return nil, wrap("list agent sessions", err)
		}
		a.SessionID = sid.String
		a.ConnectedAt, a.DisconnectedAt = fromMillis(connected), fromMillis(ended)
		out = append(out, a)
	}
	return out, wrap("list agent sessions", rows.Err())
}

// LatestAgentDiagnostics implements Store.
func (s *SQLite) LatestAgentDiagnostics(ctx context.Context, userID string) (StoredDiagnostics, error) {
	var d StoredDiagnostics
	var sid sql.NullString
	var body string
	var at sql.NullInt64
	err := s.db.QueryRowContext(ctx,
		`SELECT session_id, diagnostics, diagnostics_at FROM agent_sessions
		 WHERE user_id = ? AND diagnostics IS NOT NULL ORDER BY diagnostics_at DESC, id DESC LIMIT 1`, userID).
		Scan(&sid, &body, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return StoredDiagnostics{}, wrap("read agent diagnostics", ErrNotFound)
	}
	if err != nil {
		return StoredDiagnostics{}, wrap("read agent diagnostics", err)
	}
	d.SessionID, d.JSON, d.At = sid.String, []byte(body), fromMillis(at)
	return d, nil
}
