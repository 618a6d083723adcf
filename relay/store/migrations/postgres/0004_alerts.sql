-- Alert deliveries (SQLite's migration 0010): see there.
CREATE TABLE alert_deliveries (
    id             TEXT PRIMARY KEY,
    user_id        TEXT NOT NULL REFERENCES users(id),
    destination_id TEXT NOT NULL,
    entry_seq      BIGINT NOT NULL DEFAULT 0,
    kind           TEXT NOT NULL,
    body           TEXT NOT NULL,
    state          TEXT NOT NULL,
    attempts       INTEGER NOT NULL DEFAULT 0,
    next_at        BIGINT NOT NULL,
    lease_node     TEXT NOT NULL DEFAULT '',
    lease_until    BIGINT NOT NULL DEFAULT 0,
    last_error     TEXT NOT NULL DEFAULT '',
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);

CREATE UNIQUE INDEX alert_deliveries_entry ON alert_deliveries(destination_id, entry_seq) WHERE entry_seq > 0;
CREATE INDEX alert_deliveries_due ON alert_deliveries(state, next_at);
CREATE INDEX alert_deliveries_user ON alert_deliveries(user_id, destination_id, created_at);
