-- Who started an OAuth broker link under way (SQLite's migration 0014):
-- see there.
ALTER TABLE oauth_states ADD COLUMN source_kind TEXT NOT NULL DEFAULT '';
ALTER TABLE oauth_states ADD COLUMN source_id TEXT NOT NULL DEFAULT '';
