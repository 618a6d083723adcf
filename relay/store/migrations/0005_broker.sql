-- The broker links (issue 15): a user's login at a broker the relay trades
-- on server-side (Tradovate), sealed by package relay/sealed before it is
-- stored (the key file is not in the database); what the operations
-- running over that login remember (strategy-tag ownership, the broker
-- order-id map: Put/Delete/Load buckets); and the dispatcher's journal of
-- trading writes, so that a write is answered once across restarts.
CREATE TABLE broker_links (
    user_id    TEXT PRIMARY KEY REFERENCES users(id),
    env        TEXT NOT NULL,    -- demo or live
    method     TEXT NOT NULL,    -- apikey or oauth
    sealed     TEXT NOT NULL,    -- the login's secrets and session, sealed
    linked_at  INTEGER NOT NULL, -- unix milliseconds of the last link
    updated_at INTEGER NOT NULL  -- unix milliseconds of the last change (session saved, rekeyed)
);

CREATE TABLE broker_state (
    user_id TEXT NOT NULL REFERENCES users(id),
    bucket  TEXT NOT NULL,
    key     TEXT NOT NULL,
    value   BLOB NOT NULL,
    PRIMARY KEY (user_id, bucket, key)
);

CREATE TABLE broker_writes (
    user_id     TEXT NOT NULL REFERENCES users(id),
    id          TEXT NOT NULL,              -- the write's id
    fingerprint BLOB NOT NULL,              -- SHA-256 of its function and arguments
    at          INTEGER NOT NULL,           -- unix milliseconds it began
    done        INTEGER NOT NULL DEFAULT 0, -- 1 once its outcome is recorded
    result      BLOB,                       -- the encoded result, NULL if none
    err_code    TEXT NOT NULL DEFAULT '',
    err_detail  TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (user_id, id)
);

CREATE INDEX broker_writes_at ON broker_writes(user_id, at);
