-- The traders' accounts (SQLite's migration 0012): see there.
ALTER TABLE users ADD COLUMN email TEXT;
ALTER TABLE users ADD COLUMN password_hash TEXT;
CREATE UNIQUE INDEX users_email ON users(email) WHERE email IS NOT NULL;

ALTER TABLE tokens ADD COLUMN name TEXT NOT NULL DEFAULT '';

CREATE TABLE sessions (
    hash         TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users(id),
    created_at   BIGINT NOT NULL, -- unix milliseconds
    last_seen_at BIGINT NOT NULL, -- unix milliseconds
    expires_at   BIGINT NOT NULL  -- unix milliseconds: the absolute expiry
);

CREATE INDEX sessions_user ON sessions(user_id);
CREATE INDEX sessions_expires ON sessions(expires_at);
CREATE INDEX sessions_last_seen ON sessions(last_seen_at);

CREATE TABLE password_resets (
    hash       TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id),
    created_at BIGINT NOT NULL, -- unix milliseconds
    expires_at BIGINT NOT NULL  -- unix milliseconds
);

CREATE INDEX password_resets_user ON password_resets(user_id);
