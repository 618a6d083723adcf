-- An API token's scope (package relay/auth): "read" tokens read and
-- change nothing; "trade" tokens, every token issued before scopes
-- included, do everything.
ALTER TABLE tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'trade';
