-- Pairing codes: the one-time codes that pair a PC's agent with a user
-- (POST /v1/agent/pair exchanges one for a new agent token). A code is
-- stored only as the hex SHA-256 of its normalized text, with its user and
-- until when it is accepted; it is taken (read and deleted) once.
CREATE TABLE pairing_codes (
    hash       TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id),
    created_at INTEGER NOT NULL, -- unix milliseconds
    expires_at INTEGER NOT NULL  -- unix milliseconds
);

CREATE INDEX pairing_codes_user ON pairing_codes(user_id, expires_at);
