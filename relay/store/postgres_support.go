package store

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgreSQL: support tokens and the agents' connection history.

// CreateSupportToken implements Store.
func (p *Postgres) CreateSupportToken(ctx context.Context, t SupportToken) error {
	if t.Hash == "" || t.Name == "" {
		return errors.New("store: create support token: a support token needs a hash and a name")
	}
	err := p.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO support_tokens (hash, name, created_at) VALUES ($1, $2, $3)",
			t.Hash, t.Name, millis(t.CreatedAt))
		if err != nil {
			return pgConflict(err)
		}
		for _, u := range t.Grants {
			if err := pgUserExists(ctx, tx, u); err != nil {
				return err
			}
			_, err := tx.Exec(ctx,
				"INSERT INTO support_grants (token_hash, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING", t.Hash, u)
			if err != nil {
				return pgNoUser(err)
			}
		}
		return nil
	})
	return wrap("create support token", err)
}

// SupportToken implements Store.
func (p *Postgres) SupportToken(ctx context.Context, hash string) (SupportToken, error) {
	t := SupportToken{Hash: hash}
	var created int64
	var revoked *int64
	err := p.pool.QueryRow(ctx, "SELECT name, created_at, revoked_at FROM support_tokens WHERE hash = $1", hash).
		Scan(&t.Name, &created, &revoked)
	if err != nil {
		return SupportToken{}, wrap("read support token", pgFound(err))
	}
	t.CreatedAt, t.RevokedAt = fromMS(created), optMillis(revoked)
	rows, err := p.pool.Query(ctx, "SELECT user_id FROM support_grants WHERE token_hash = $1 ORDER BY user_id", hash)
	if err != nil {
		return SupportToken{}, wrap("read support token", err)
	}
	t.Grants, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return SupportToken{}, wrap("read support token", err)
	}
	if len(t.Grants) == 0 {
		t.Grants = nil
	}
	return t, nil
}

// ListSupportTokens implements Store.
func (p *Postgres) ListSupportTokens(ctx context.Context) ([]SupportToken, error) {
	grants := map[string][]string{}
	rows, err := p.pool.Query(ctx, "SELECT token_hash, user_id FROM support_grants ORDER BY token_hash, user_id")
	if err != nil {
		return nil, wrap("list support tokens", err)
	}
	var h, u string
	_, err = pgx.ForEachRow(rows, []any{&h, &u}, func() error {
		grants[h] = append(grants[h], u)
		return nil
	})
	if err != nil {
		return nil, wrap("list support tokens", err)
	}
	rows, err = p.pool.Query(ctx, "SELECT hash, name, created_at, revoked_at FROM support_tokens ORDER BY created_at, hash")
	if err != nil {
		return nil, wrap("list support tokens", err)
	}
	defer rows.Close()
	var out []SupportToken
	for rows.Next() {
		var t SupportToken
		var created int64
		var revoked *int64
		if err := rows.Scan(&t.Hash, &t.Name, &created, &revoked); err != nil {
			return nil, wrap("list support tokens", err)
		}
		t.CreatedAt, t.RevokedAt = fromMS(created), optMillis(revoked)
		t.Grants = slices.Clone(grants[t.Hash])
		out = append(out, t)
	}
	return out, wrap("list support tokens", rows.Err())
}

// RevokeSupportToken implements Store.
func (p *Postgres) RevokeSupportToken(ctx context.Context, hash string, at time.Time) error {
	tag, err := p.pool.Exec(ctx,
		"UPDATE support_tokens SET revoked_at = COALESCE(revoked_at, $1) WHERE hash = $2", millis(at), hash)
	return wrap("revoke support token", pgAffected(tag, err))
}

// AddAgentSession implements Store.
func (p *Postgres) AddAgentSession(ctx context.Context, a AgentSession) error {
	if a.UserID == "" {
		return errors.New("store: add agent session: an agent session needs a user")
	}
	var sid *string
	if a.SessionID != "" {
		sid = &a.SessionID
	}
	var ended *int64
	if !a.DisconnectedAt.IsZero() {
		ms := millis(a.DisconnectedAt)
		ended = &ms
	}
	_, err := p.pool.Exec(ctx,
		`INSERT INTO agent_sessions (session_id, user_id, connected_at, disconnected_at, reason, agent_version,
		   protocol_version, platform, remote_addr, node) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		sid, a.UserID, millis(a.ConnectedAt), ended, a.Reason, a.AgentVersion,
		a.ProtocolVersion, a.Platform, a.RemoteAddr, a.Node)
	return wrap("add agent session", pgConflict(err))
}

// EndAgentSession implements Store.
func (p *Postgres) EndAgentSession(ctx context.Context, sessionID string, at time.Time, reason string) error {
	tag, err := p.pool.Exec(ctx,
		"UPDATE agent_sessions SET disconnected_at = $1, reason = $2 WHERE session_id = $3 AND disconnected_at IS NULL",
		millis(at), reason, sessionID)
	if err == nil && tag.RowsAffected() == 0 {
		// Ended already (the first end stays), or never recorded.
		var one int
		err = pgFound(p.pool.QueryRow(ctx, "SELECT 1 FROM agent_sessions WHERE session_id = $1", sessionID).Scan(&one))
	}
	return wrap("end agent session", err)
}

// SetAgentSessionDiagnostics implements Store.
func (p *Postgres) SetAgentSessionDiagnostics(ctx context.Context, sessionID string, diagnostics []byte, at time.Time) error {
	if diagnostics == nil {
		diagnostics = []byte{} // recorded, if empty
	}
	tag, err := p.pool.Exec(ctx,
		"UPDATE agent_sessions SET diagnostics = $1, diagnostics_at = $2 WHERE session_id = $3",
		diagnostics, millis(at), sessionID)
	return wrap("set agent session diagnostics", pgAffected(tag, err))
}

// CloseOpenAgentSessions implements Store.
func (p *Postgres) CloseOpenAgentSessions(ctx context.Context, node string, at time.Time, reason string) (int, error) {
	tag, err := p.pool.Exec(ctx,
		`UPDATE agent_sessions SET disconnected_at = GREATEST(connected_at, $1), reason = $2
		 WHERE disconnected_at IS NULL AND node = $3`,
		millis(at), reason, node)
	if err != nil {
		return 0, wrap("close open agent sessions", err)
	}
	return int(tag.RowsAffected()), nil
}

// PruneAgentSessions implements Store.
func (p *Postgres) PruneAgentSessions(ctx context.Context, before time.Time) (int, error) {
	tag, err := p.pool.Exec(ctx, "DELETE FROM agent_sessions WHERE disconnected_at < $1", millis(before))
	if err != nil {
		return 0, wrap("prune agent sessions", err)
	}
	return int(tag.RowsAffected()), nil
}

// AgentSessions implements Store.
func (p *Postgres) AgentSessions(ctx context.Context, userID string, since time.Time, limit int) ([]AgentSession, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := p.pool.Query(ctx,
		`SELECT session_id, connected_at, disconnected_at, reason, agent_version, protocol_version, platform, remote_addr, node
		 FROM agent_sessions WHERE user_id = $1 AND (disconnected_at IS NULL OR disconnected_at >= $2)
		 ORDER BY connected_at DESC, id DESC LIMIT $3`, userID, millis(since), limit)
	if err != nil {
		return nil, wrap("list agent sessions", err)
	}
	defer rows.Close()
	var out []AgentSession
	for rows.Next() {
		a := AgentSession{UserID: userID}
		var sid *string
		var connected int64
		var ended *int64
		if err := rows.Scan(&sid, &connected, &ended, &a.Reason, &a.AgentVersion, &a.ProtocolVersion, &a.Platform, &a.RemoteAddr, &a.Node); err != nil {
			return nil, wrap("list agent sessions", err)
		}
		if sid != nil {
			a.SessionID = *sid
		}
		a.ConnectedAt, a.DisconnectedAt = fromMS(connected), optMillis(ended)
		out = append(out, a)
	}
	return out, wrap("list agent sessions", rows.Err())
}

// LatestAgentDiagnostics implements Store.
func (p *Postgres) LatestAgentDiagnostics(ctx context.Context, userID string) (StoredDiagnostics, error) {
	var d StoredDiagnostics
	var sid *string
	var at *int64
	err := p.pool.QueryRow(ctx,
		`SELECT session_id, diagnostics, diagnostics_at FROM agent_sessions
		 WHERE user_id = $1 AND diagnostics IS NOT NULL ORDER BY diagnostics_at DESC, id DESC LIMIT 1`, userID).
		Scan(&sid, &d.JSON, &at)
	if err != nil {
		return StoredDiagnostics{}, wrap("read agent diagnostics", pgFound(err))
	}
	if sid != nil {
		d.SessionID = *sid
	}
	d.At = optMillis(at)
	return d, nil
}
