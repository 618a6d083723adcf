-- Alert deliveries: one row per activity entry and alert destination
-- that asked for its kind (or per test, or per summary of a flood), with
-- the exact body every attempt sends, its state and its next attempt.
-- A node sends a delivery only while it holds the row's lease
-- (lease_node, lease_until), so that each alert is sent by one node.
CREATE TABLE alert_deliveries (
    id             TEXT PRIMARY KEY, -- "dlv_…", the X-Tradebridge-Delivery header
    user_id        TEXT NOT NULL REFERENCES users(id),
    destination_id TEXT NOT NULL,
    entry_seq      INTEGER NOT NULL DEFAULT 0, -- the activity entry; 0 for a test or a summary
    kind           TEXT NOT NULL,              -- the entry's kind (or "alert.test", "alert.summary")
    body           TEXT NOT NULL,              -- the JSON payload, fixed at creation
    state          TEXT NOT NULL,              -- pending, sent, failed, cancelled
    attempts       INTEGER NOT NULL DEFAULT 0,
    next_at        INTEGER NOT NULL,           -- unix milliseconds
    lease_node     TEXT NOT NULL DEFAULT '',
    lease_until    INTEGER NOT NULL DEFAULT 0, -- unix milliseconds
    last_error     TEXT NOT NULL DEFAULT '',
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
);

CREATE UNIQUE INDEX alert_deliveries_entry ON alert_deliveries(destination_id, entry_seq) WHERE entry_seq > 0;
CREATE INDEX alert_deliveries_due ON alert_deliveries(state, next_at);
CREATE INDEX alert_deliveries_user ON alert_deliveries(user_id, destination_id, created_at);
