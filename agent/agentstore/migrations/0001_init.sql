-- Buckets of keyed values, each bucket owned by one user of the store (the
-- engines, the operations' strategy tags).
CREATE TABLE kv (
	bucket TEXT NOT NULL,
	key    TEXT NOT NULL,
	value  BLOB NOT NULL,
	PRIMARY KEY (bucket, key)
) WITHOUT ROWID;

-- The last management configuration applied: one row.
CREATE TABLE config (
	id       INTEGER PRIMARY KEY CHECK (id = 1),
	version  INTEGER NOT NULL,
	body     BLOB NOT NULL,
	saved_at INTEGER NOT NULL
);

-- The dispatcher's journal of writes: begun, then finished with a result
-- or an error. seq orders records begun at the same instant.
CREATE TABLE journal (
	seq         INTEGER PRIMARY KEY,
	id          TEXT NOT NULL UNIQUE,
	fingerprint BLOB NOT NULL,
	at          INTEGER NOT NULL,
	done        INTEGER NOT NULL DEFAULT 0,
	result      BLOB,
	err_code    TEXT,
	err_detail  TEXT
);
CREATE INDEX journal_at ON journal (at, seq);
