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

-- Two indexes only, so that a busy log costs little to write: the ref's
-- (partial: most entries have none) and the user's entries by seq, which
-- reads, paging and the cap's trim use. The retention's prune walks seq
-- from the oldest (entries are written in about the order they happen).
CREATE UNIQUE INDEX activity_ref ON activity(user_id, ref) WHERE ref IS NOT NULL;
CREATE INDEX activity_user ON activity(user_id, seq);
