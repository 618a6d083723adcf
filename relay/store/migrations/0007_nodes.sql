-- Many relay nodes sharing one store (issue 17).
--
-- agent_sessions.node names the relay node that held the tunnel, so that
-- a node closes at its start only the sessions its own previous run left
-- open; '' on a relay that runs alone.
ALTER TABLE agent_sessions ADD COLUMN node TEXT NOT NULL DEFAULT '';

CREATE INDEX agent_sessions_open ON agent_sessions(node) WHERE disconnected_at IS NULL;

-- The lease that lets one node run a user's broker instance: taken or
-- renewed by its holder, taken over by another node once it expired.
CREATE TABLE broker_leases (
    user_id    TEXT PRIMARY KEY,
    node       TEXT NOT NULL,
    expires_at INTEGER NOT NULL -- unix milliseconds, by the store's clock
);

-- OAuth broker links under way: the hex SHA-256 of the one-time state,
-- the user and broker environment it is bound to, and until when it is
-- accepted. A state is taken (read and deleted) once, by whichever node
-- the broker's callback reaches.
CREATE TABLE oauth_states (
    hash       TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id),
    env        TEXT NOT NULL,
    expires_at INTEGER NOT NULL -- unix milliseconds
);

CREATE INDEX oauth_states_user ON oauth_states(user_id, expires_at);
