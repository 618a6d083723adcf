-- The activity log (SQLite's migration 0009): see there.
CREATE TABLE activity (
    seq         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id),
    at          BIGINT NOT NULL,
    kind        TEXT NOT NULL,
    class       TEXT NOT NULL,
    account     TEXT NOT NULL DEFAULT '',
    source_kind TEXT NOT NULL,
    source_id   TEXT NOT NULL DEFAULT '',
    source_name TEXT NOT NULL DEFAULT '',
    summary     TEXT NOT NULL,
    detail      TEXT NOT NULL,
    ref         TEXT
);

CREATE UNIQUE INDEX activity_ref ON activity(user_id, ref);
CREATE INDEX activity_user ON activity(user_id, seq);
CREATE INDEX activity_user_class ON activity(user_id, class, seq);
CREATE INDEX activity_at ON activity(at);
