-- The TradingView webhooks and their alerts (SQLite's migration 0011): see
-- there.
CREATE TABLE webhooks (
    user_id    TEXT PRIMARY KEY REFERENCES users(id),
    webhook_id TEXT NOT NULL UNIQUE,
    key_hash   TEXT NOT NULL,
    key_sealed TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    rotated_at BIGINT NOT NULL
);

CREATE TABLE webhook_alerts (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id),
    received_at BIGINT NOT NULL,
    text        TEXT NOT NULL,
    command     TEXT NOT NULL DEFAULT '',
    accounts    TEXT NOT NULL,
    destination TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL,
    reason      TEXT NOT NULL DEFAULT '',
    results     TEXT NOT NULL,
    rate_id     TEXT NOT NULL DEFAULT '',
    due_at      BIGINT NOT NULL DEFAULT 0,
    updated_at  BIGINT NOT NULL
);

CREATE INDEX webhook_alerts_user ON webhook_alerts(user_id, seq);
CREATE INDEX webhook_alerts_rate ON webhook_alerts(user_id, rate_id, received_at) WHERE rate_id <> '';
CREATE INDEX webhook_alerts_due ON webhook_alerts(status, due_at) WHERE status = 'scheduled';
CREATE INDEX webhook_alerts_running ON webhook_alerts(updated_at) WHERE status = 'running';
