-- An API token's scope (SQLite's migration 0013): see there.
ALTER TABLE tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'trade';
