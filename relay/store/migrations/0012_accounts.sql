-- The traders' accounts (package relay/account): a user's email
-- (lowercased; unique among the users that have one) and password (an
-- argon2id PHC string; NULL: no password, no sign-in); a token's optional
-- name; the dashboard's sessions and the password-reset links, each stored
-- only as the hex SHA-256 of its secret.
ALTER TABLE users ADD COLUMN email TEXT;
ALTER TABLE users ADD COLUMN password_hash TEXT;
CREATE UNIQUE INDEX users_email ON users(email) WHERE email IS NOT NULL;

ALTER TABLE tokens ADD COLUMN name TEXT NOT NULL DEFAULT '';

CREATE TABLE sessions (
    hash         TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users(id),
    created_at   INTEGER NOT NULL, -- unix milliseconds
    last_seen_at INTEGER NOT NULL, -- unix milliseconds
    expires_at   INTEGER NOT NULL  -- unix milliseconds: the absolute expiry
);

CREATE INDEX sessions_user ON sessions(user_id);
CREATE INDEX sessions_expires ON sessions(expires_at);
CREATE INDEX sessions_last_seen ON sessions(last_seen_at);

CREATE TABLE password_resets (
    hash       TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id),
    created_at INTEGER NOT NULL, -- unix milliseconds
    expires_at INTEGER NOT NULL  -- unix milliseconds
);

CREATE INDEX password_resets_user ON password_resets(user_id);
