-- Pairing codes (SQLite's migration 0008): the one-time codes that pair a
-- PC's agent with a user, stored only as the hex SHA-256 of their
-- normalized text, taken (read and deleted) once.
CREATE TABLE pairing_codes (
    hash       TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

CREATE INDEX pairing_codes_user ON pairing_codes(user_id, expires_at);
