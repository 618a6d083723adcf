-- The activity log: what was done and decided on each user's account, by
-- whom, newest last by seq. class is the per-user cap's class ("trading"
-- for the trading doors' writes and refusals, "account" for the rest), so
-- that a noisy bot trims only its own entries. ref, when set, makes an
-- entry recorded once per user (a report the agent resent, an outcome two
-- nodes saw); NULL refs never collide.
CREATE TABLE activity (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id     TEXT NOT NULL REFERENCES users(id),
    at          INTEGER NOT NULL, -- unix milliseconds
    kind        TEXT NOT NULL,
    class       TEXT NOT NULL,
    account     TEXT NOT NULL DEFAULT '',
    source_kind TEXT NOT NULL,
    source_id   TEXT NOT NULL DEFAULT '',
    source_name TEXT NOT NULL DEFAULT '',
    summary     TEXT NOT NULL,
    detail      TEXT NOT NULL, -- a JSON object
    ref         TEXT
);

-- Two indexes only, so that a busy log costs little to write: the ref's
-- (partial: most entries have none) and the user's entries by seq, which
-- reads, paging and the cap's trim use. The retention's prune walks seq
-- from the oldest (entries are written in about the order they happen).
CREATE UNIQUE INDEX activity_ref ON activity(user_id, ref) WHERE ref IS NOT NULL;
CREATE INDEX activity_user ON activity(user_id, seq);
