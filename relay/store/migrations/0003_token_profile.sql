-- The response profile of an API token (package relay/profile): standard
-- (the specification's envelope) or compatible (top-level shapes). Agent
-- tokens keep the default, which they never use.
ALTER TABLE tokens ADD COLUMN profile TEXT NOT NULL DEFAULT 'standard';
