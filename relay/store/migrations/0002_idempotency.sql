-- Outcomes of trading writes by idempotency key (the caller's
-- Idempotency-Key header or orderId), kept 24 hours, so that a repeated
-- write answers with the first response and places nothing.
CREATE TABLE idempotency (
    user_id     TEXT NOT NULL REFERENCES users(id),
    key         TEXT NOT NULL,
    fingerprint TEXT NOT NULL,   -- hex SHA-256 of method, route and body
    state       TEXT NOT NULL,   -- running, done, unknown
    status      INTEGER NOT NULL DEFAULT 0,
    body        BLOB,
    created_at  INTEGER NOT NULL, -- unix milliseconds
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (user_id, key)
);

CREATE INDEX idempotency_created ON idempotency(created_at);
