-- The TradingView webhooks: one per user, named by a random id in its
-- URL (/v1/send/<webhook_id>) and checked by a secret key the alert's
-- body carries: its SHA-256 (key_hash) for the check, and the key sealed
-- by the relay's key ring (key_sealed) so that it can be shown again.
CREATE TABLE webhooks (
    user_id    TEXT PRIMARY KEY REFERENCES users(id),
    webhook_id TEXT NOT NULL UNIQUE, -- "wh_" and 24 lowercase base32 characters
    key_hash   TEXT NOT NULL,        -- hex SHA-256 of the key
    key_sealed TEXT NOT NULL,
    created_at INTEGER NOT NULL,     -- unix milliseconds
    rotated_at INTEGER NOT NULL
);

-- The alerts received with the right key, newest last by seq ("tva_<seq>"
-- is an alert's id): the text without its key, what was asked, the
-- status (executed, scheduled, running, blocked, failed), why, and each
-- account's result. rate_id is the alert's id= when its rate limit let it
-- through (the count of rate_limit=); due_at is a delayed alert's due
-- time.
CREATE TABLE webhook_alerts (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id     TEXT NOT NULL REFERENCES users(id),
    received_at INTEGER NOT NULL, -- unix milliseconds
    text        TEXT NOT NULL,
    command     TEXT NOT NULL DEFAULT '',
    accounts    TEXT NOT NULL,    -- a JSON array
    destination TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL,
    reason      TEXT NOT NULL DEFAULT '',
    results     TEXT NOT NULL,    -- a JSON array
    rate_id     TEXT NOT NULL DEFAULT '',
    due_at      INTEGER NOT NULL DEFAULT 0,
    updated_at  INTEGER NOT NULL
);

CREATE INDEX webhook_alerts_user ON webhook_alerts(user_id, seq);
CREATE INDEX webhook_alerts_rate ON webhook_alerts(user_id, rate_id, received_at) WHERE rate_id <> '';
CREATE INDEX webhook_alerts_due ON webhook_alerts(status, due_at) WHERE status = 'scheduled';
CREATE INDEX webhook_alerts_running ON webhook_alerts(updated_at) WHERE status = 'running';
