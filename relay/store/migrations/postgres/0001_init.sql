-- The relay's store on PostgreSQL: the schema of SQLite's migrations
-- 0001 to 0007 in one step. Times are unix milliseconds in BIGINT columns,
-- as in SQLite, so that they round-trip exactly; flags are BOOLEAN; blobs
-- BYTEA. Tokens are stored only as the hex SHA-256 of their text.

CREATE TABLE users (
    id                TEXT PRIMARY KEY,
    name              TEXT NOT NULL,
    plan              TEXT NOT NULL,
    disabled          BOOLEAN NOT NULL DEFAULT false,
    created_at        BIGINT NOT NULL,
    management_closed BOOLEAN NOT NULL DEFAULT false,
    withheld_features TEXT NOT NULL DEFAULT '[]' -- a JSON array of feature names
);

CREATE TABLE tokens (
    hash       TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id),
    kind       TEXT NOT NULL,
    profile    TEXT NOT NULL DEFAULT 'standard',
    created_at BIGINT NOT NULL,
    revoked_at BIGINT -- NULL while the token is valid
);

CREATE INDEX tokens_user ON tokens(user_id, kind);

-- Outcomes of trading writes by idempotency key, kept 24 hours.
CREATE TABLE idempotency (
    user_id     TEXT NOT NULL REFERENCES users(id),
    key         TEXT NOT NULL,
    fingerprint TEXT NOT NULL, -- hex SHA-256 of method, route and body
    state       TEXT NOT NULL, -- running, done, unknown
    status      INTEGER NOT NULL DEFAULT 0,
    body        BYTEA,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (user_id, key)
);

CREATE INDEX idempotency_created ON idempotency(created_at);

-- The Management API's resources, with a version for conditional writes
-- and ETags, and the pushed configuration's version.
CREATE TABLE manage_resources (
    user_id    TEXT NOT NULL REFERENCES users(id),
    kind       TEXT NOT NULL,
    id         TEXT NOT NULL,
    version    BIGINT NOT NULL, -- 1 after the create, +1 per write
    body       BYTEA NOT NULL,  -- the resource's JSON
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, kind, id)
);

CREATE TABLE manage_config (
    user_id     TEXT PRIMARY KEY REFERENCES users(id),
    version     BIGINT NOT NULL DEFAULT 0, -- bumped by every configuration change
    connections BYTEA,                     -- the agent's platform connections (JSON), NULL if none
    updated_at  BIGINT NOT NULL
);

-- The broker links, sealed by package relay/sealed; the state of the
-- operations running over them; the dispatcher's journal of writes.
CREATE TABLE broker_links (
    user_id    TEXT PRIMARY KEY REFERENCES users(id),
    env        TEXT NOT NULL,
    method     TEXT NOT NULL,
    sealed     TEXT NOT NULL,
    linked_at  BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE broker_state (
    user_id TEXT NOT NULL REFERENCES users(id),
    bucket  TEXT NOT NULL,
    key     TEXT NOT NULL,
    value   BYTEA NOT NULL,
    PRIMARY KEY (user_id, bucket, key)
);

CREATE TABLE broker_writes (
    user_id     TEXT NOT NULL REFERENCES users(id),
    id          TEXT NOT NULL,
    seq         BIGINT GENERATED ALWAYS AS IDENTITY, -- the journal's order among equal times
    fingerprint BYTEA NOT NULL,
    at          BIGINT NOT NULL,
    done        BOOLEAN NOT NULL DEFAULT false,
    result      BYTEA,
    err_code    TEXT NOT NULL DEFAULT '',
    err_detail  TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (user_id, id)
);

CREATE INDEX broker_writes_at ON broker_writes(user_id, at);

-- Support staff's tokens and what they grant.
CREATE TABLE support_tokens (
    hash       TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);

CREATE TABLE support_grants (
    token_hash TEXT NOT NULL REFERENCES support_tokens(hash),
    user_id    TEXT NOT NULL REFERENCES users(id),
    PRIMARY KEY (token_hash, user_id)
);

-- One row per agent tunnel and per refused handshake (session_id NULL),
-- with the relay node that held it.
CREATE TABLE agent_sessions (
    id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id       TEXT UNIQUE,
    user_id          TEXT NOT NULL,
    connected_at     BIGINT NOT NULL,
    disconnected_at  BIGINT,
    reason           TEXT NOT NULL DEFAULT '',
    agent_version    TEXT NOT NULL DEFAULT '',
    protocol_version INTEGER NOT NULL DEFAULT 0,
    platform         TEXT NOT NULL DEFAULT '',
    remote_addr      TEXT NOT NULL DEFAULT '',
    diagnostics      BYTEA,
    diagnostics_at   BIGINT,
    node             TEXT NOT NULL DEFAULT ''
);

CREATE INDEX agent_sessions_user ON agent_sessions(user_id, connected_at);
CREATE INDEX agent_sessions_ended ON agent_sessions(disconnected_at);
CREATE INDEX agent_sessions_open ON agent_sessions(node) WHERE disconnected_at IS NULL;

-- The lease that places a user's broker instance on one node; expires_at
-- is by the database's clock.
CREATE TABLE broker_leases (
    user_id    TEXT PRIMARY KEY,
    node       TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);

-- OAuth broker links under way, taken once by whichever node the
-- broker's callback reaches.
CREATE TABLE oauth_states (
    hash       TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id),
    env        TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);

CREATE INDEX oauth_states_user ON oauth_states(user_id, expires_at);
