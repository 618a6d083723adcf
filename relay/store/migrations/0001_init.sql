-- Users and their tokens. Tokens are stored only as the hex SHA-256 of the
-- token text; the text itself is shown once, when it is issued.
CREATE TABLE users (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    plan       TEXT NOT NULL,
    disabled   INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL -- unix milliseconds
);

CREATE TABLE tokens (
    hash       TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id),
    kind       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER          -- NULL while the token is valid
);

CREATE INDEX tokens_user ON tokens(user_id, kind);
