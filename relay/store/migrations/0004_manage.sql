-- The Management API (issue 12). Per user: whether the API is open, the
-- features withheld from the plan, the management resources (one row per
-- resource, its JSON as the manage package wrote it, with a version for
-- conditional writes and ETags), and the pushed configuration's version
-- with the agent's platform connections last recorded.
ALTER TABLE users ADD COLUMN management_closed INTEGER NOT NULL DEFAULT 0;
-- A JSON array of feature names ("tv", "copier", …).
ALTER TABLE users ADD COLUMN withheld_features TEXT NOT NULL DEFAULT '[]';

CREATE TABLE manage_resources (
    user_id    TEXT NOT NULL REFERENCES users(id),
    kind       TEXT NOT NULL,
    id         TEXT NOT NULL,
    version    INTEGER NOT NULL,  -- 1 after the create, +1 per write
    body       BLOB NOT NULL,     -- the resource's JSON
    created_at INTEGER NOT NULL,  -- unix milliseconds
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, kind, id)
);

CREATE TABLE manage_config (
    user_id     TEXT PRIMARY KEY REFERENCES users(id),
    version     INTEGER NOT NULL DEFAULT 0, -- bumped by every configuration change
    connections BLOB,                       -- the agent's platform connections (JSON), NULL if none
    updated_at  INTEGER NOT NULL            -- unix milliseconds of the row's last change
);
