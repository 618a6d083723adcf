-- Who started an OAuth broker link under way (package relay/broker): the
-- activity log's source kind and id of the request that started it
-- ("dashboard" and the session's id, or "api" and the token's id), so
-- that the broker's callback records the link in that name and a link
-- started in the dashboard ends only in the browser session that started
-- it. Empty for a state stored before.
ALTER TABLE oauth_states ADD COLUMN source_kind TEXT NOT NULL DEFAULT '';
ALTER TABLE oauth_states ADD COLUMN source_id TEXT NOT NULL DEFAULT '';
