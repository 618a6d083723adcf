-- Support staff and the agents' connection history.
--
-- A support token belongs to no trading user: it names the staff member
-- it was issued to (for the audit log) and grants reading the agent
-- diagnostics and connection history of the users listed in
-- support_grants, nothing else. Like every token it is stored only as the
-- hex SHA-256 of its text.
CREATE TABLE support_tokens (
    hash       TEXT PRIMARY KEY,
    name       TEXT NOT NULL,    -- the staff member
    created_at INTEGER NOT NULL, -- unix milliseconds
    revoked_at INTEGER           -- NULL while the token is valid
);

CREATE TABLE support_grants (
    token_hash TEXT NOT NULL REFERENCES support_tokens(hash),
    user_id    TEXT NOT NULL REFERENCES users(id),
    PRIMARY KEY (token_hash, user_id)
);

-- One row per agent tunnel: from its Welcome (connected_at) to its end
-- (disconnected_at, NULL while it is live, and why it ended), and one per
-- refused handshake (session_id NULL, disconnected_at = connected_at).
-- diagnostics is the JSON of the latest protocol.Diagnostics the agent
-- sent during the session, diagnostics_at when the relay received it.
CREATE TABLE agent_sessions (
    id               INTEGER PRIMARY KEY,
    session_id       TEXT UNIQUE,
    user_id          TEXT NOT NULL,
    connected_at     INTEGER NOT NULL,
    disconnected_at  INTEGER,
    reason           TEXT NOT NULL DEFAULT '',
    agent_version    TEXT NOT NULL DEFAULT '',
    protocol_version INTEGER NOT NULL DEFAULT 0,
    platform         TEXT NOT NULL DEFAULT '',
    remote_addr      TEXT NOT NULL DEFAULT '',
    diagnostics      TEXT,
    diagnostics_at   INTEGER
);

CREATE INDEX agent_sessions_user ON agent_sessions(user_id, connected_at);
CREATE INDEX agent_sessions_ended ON agent_sessions(disconnected_at);
