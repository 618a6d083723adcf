// Package store keeps the relay's durable state: users, their plans and
// their tokens, the outcomes of trading writes, each user's management
// resources, each user's broker link with the state of the trading the
// relay runs over it, the support staff's tokens and what they grant, and
// the agents' connection history with their latest diagnostics, and the
// one-time codes that pair a PC's agent with a user, each user's
// activity log, and the traders' accounts (a user's email and password
// hash, the dashboard's sessions and password-reset links). It is the
// only package that talks to the database; the relay's other packages see
// the Store interface.
//
// The one-machine deployment uses SQLite (pure Go, WAL journal, synchronous
// FULL, so a write is durable before the relay answers 2xx). A relay that
// runs as several nodes shares one PostgreSQL database (Postgres, with the
// same behaviour); Dial opens the one a URL names. Both are one
// implementation over database/sql (sqlStore), written once in the SQL the
// two databases share; a dialect holds what differs (placeholders, a few
// fragments of SQL, error codes, the schema version and the migrations'
// lock). The schema is migrated forward on Open and OpenPostgres from the
// numbered files embedded from migrations/ (SQLite) and
// migrations/postgres/; a database written by a newer relay is refused
// with ErrSchemaTooNew rather than guessed at.
package store

import (
	"context"
	"errors"
	"time"
)

// Errors reported by every Store.
var (
	// ErrNotFound reports a missing user or token.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict reports a key that already exists.
	ErrConflict = errors.New("store: already exists")
	// ErrSchemaTooNew reports a database migrated by a newer relay.
	ErrSchemaTooNew = errors.New("store: database schema is newer than this relay")
	// ErrVersionConflict reports a ResourceWrite whose Version did not
	// match the stored resource; nothing of its WriteResources was
	// written.
	ErrVersionConflict = errors.New("store: version conflict")
)

// User is an account holder of the service.
type User struct {
	ID        string
	Name      string
	Plan      string
	Disabled  bool
	CreatedAt time.Time
	// ManagementClosed closes the Management API for the user (403
	// not_available) whatever the plan.
	ManagementClosed bool
	// Withheld are the features withheld from the user's plan (403
	// plan_required): the families "desktop" and "tv" and kind names
	// ("copier", "monitor", …). Nil when none.
	Withheld []string
	// Email is the user's email, lowercased (NormalizeEmail); "" when
	// none. No two users have one email.
	Email string
	// PasswordHash is the user's password as package relay/account hashed
	// it (an argon2id PHC string); "" when the user has no password.
	PasswordHash string
}

// Token is the stored form of an API or agent token: its hash, never its
// text.
type Token struct {
	Hash   string
	UserID string
	Kind   string
	// Profile is an API token's response profile ("standard" or
	// "compatible"); empty means standard.
	Profile string
	// Name is what the user called the token (the dashboard's tokens
	// page); "" when unnamed.
	Name string
	// Scope is an API token's scope ("read" or "trade"; package
	// relay/auth); empty means trade, the scope of every token issued
	// before scopes. Agent tokens are stored with "trade".
	Scope     string
	CreatedAt time.Time
	// RevokedAt is the zero time while the token is valid.
	RevokedAt time.Time
}

// Revoked reports whether the token has been revoked.
func (t Token) Revoked() bool { return !t.RevokedAt.IsZero() }

// SupportToken is the stored form of a support staff member's token: its
// hash, never its text. It belongs to no trading user.
type SupportToken struct {
	Hash string
	// Name is the staff member's, for the audit log.
	Name string
	// Grants are the ids of the users whose agent diagnostics and
	// connection history the token may read, sorted.
	Grants    []string
	CreatedAt time.Time
	// RevokedAt is the zero time while the token is valid.
	RevokedAt time.Time
}

// Revoked reports whether the support token has been revoked.
func (t SupportToken) Revoked() bool { return !t.RevokedAt.IsZero() }

// AgentSession is one entry of a user's agent connection history: a
// tunnel from its Welcome to its end, or a refused handshake (no
// SessionID, DisconnectedAt = ConnectedAt).
type AgentSession struct {
	// SessionID is the tunnel's session id; "" for a refused handshake.
	SessionID string
	UserID    string
	// ConnectedAt is when the relay welcomed the agent (or refused it).
	ConnectedAt time.Time
	// DisconnectedAt is the zero time while the tunnel is live.
	DisconnectedAt time.Time
	// Reason is why the tunnel ended or the handshake was refused
	// (package relay/hub lists them); "" while live.
	Reason          string
	AgentVersion    string
	ProtocolVersion int
	Platform        string
	// RemoteAddr is the agent's address as the relay saw it.
	RemoteAddr string
	// Node is the relay node that held the tunnel (or refused it); ""
	// on a relay that runs alone without a node name.
	Node string
}

// OAuthState is an OAuth broker link under way: a one-time state bound to
// a user and a broker environment, stored (as its hash) so that the
// broker's callback may reach any relay node.
type OAuthState struct {
	// Hash is the hex SHA-256 of the state's text.
	Hash   string
	UserID string
	Env    string
	// Expires is when the state stops being accepted.
	Expires time.Time
	// SourceKind and SourceID name who started the link, as the activity
	// log names a source (protocol.ActivitySource): "dashboard" and the
	// session's id, "api" and the token's id; empty for none.
	SourceKind, SourceID string
}

// StoredDiagnostics is the latest protocol.Diagnostics an agent sent, as
// recorded on its session.
type StoredDiagnostics struct {
	SessionID string
	// JSON is the diagnostics as the relay re-encoded them.
	JSON []byte
	// At is when the relay received them.
	At time.Time
}

// States of an idempotency record.
const (
	// IdemRunning: the write was sent and its outcome is awaited.
	IdemRunning = "running"
	// IdemDone: the write finished; Status and Body are its response.
	IdemDone = "done"
	// IdemUnknown: the tunnel dropped after the write was sent; a retry
	// asks the agent, which remembers the outcome by request id.
	IdemUnknown = "unknown"
)

// Idempotent is the record of one write by its idempotency key.
type Idempotent struct {
	UserID      string
	Key         string
	Fingerprint string
	State       string
	Status      int
	Body        []byte
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Resource is one stored management resource of a user.
type Resource struct {
	UserID, Kind, ID string
	// Version counts the resource's changes: 1 after its create, +1 per
	// write.
	Version   int64
	Body      []byte // the resource's JSON (protocol types), as the manage package wrote it
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ResourceWrite is one change of WriteResources.
type ResourceWrite struct {
	Kind, ID string
	// Body is the new JSON; nil deletes the resource.
	Body []byte
	// Version is the version the stored resource must have now: 0 means it
	// must not exist (a create, or the first write of a singleton).
	Version int64
	// At is the write's time (CreatedAt of a create, UpdatedAt always).
	At time.Time
}

// ManagedState is all of a user's management state.
type ManagedState struct {
	// ConfigVersion is bumped by every WriteResources with bumpConfig.
	ConfigVersion int64
	// Resources are every kind's, ordered by kind, then CreatedAt, then ID.
	Resources []Resource
	// Connections is the JSON the relay last recorded with SetConnections
	// (the agent's platform connections), nil if none.
	Connections []byte
}

// BrokerLink is a user's login at a broker the relay trades on
// server-side: its environment and method, and its secrets as package
// relay/sealed sealed them (the store never sees them in clear).
type BrokerLink struct {
	UserID string
	// Env is the broker environment: "demo" or "live".
	Env string
	// Method is how the login authenticates: "apikey" or "oauth".
	Method string
	// Sealed is the login's secrets and session, sealed.
	Sealed string
	// LinkedAt is the time of the last PutBrokerLink; UpdatedAt of the
	// last change of any kind.
	LinkedAt, UpdatedAt time.Time
}

// BrokerWrite is one trading write as the relay's dispatcher journaled it
// for a linked user.
type BrokerWrite struct {
	ID          string
	Fingerprint [32]byte
	// At is when the write began.
	At time.Time
	// Done is true once FinishBrokerWrite recorded the outcome: Result, or
	// ErrCode and ErrDetail.
	Done               bool
	Result             []byte
	ErrCode, ErrDetail string
}

// Store is the relay's durable state. Implementations are safe for
// concurrent use; every method that returns nil has made its change durable.
type Store interface {
	// CreateUser stores u with its first tokens, all or nothing.
	// ErrConflict if the id, the email or a token hash exists.
	CreateUser(ctx context.Context, u User, tokens ...Token) error
	// User returns the user with the id; ErrNotFound if there is none.
	User(ctx context.Context, id string) (User, error)
	// SetUserDisabled disables or re-enables a user; ErrNotFound if there
	// is none.
	SetUserDisabled(ctx context.Context, id string, disabled bool) error
	// SetUserPlan sets the user's plan; ErrNotFound if there is none.
	SetUserPlan(ctx context.Context, id, plan string) error
	// ListUsers returns every user, oldest first (then by id).
	ListUsers(ctx context.Context) ([]User, error)
	// UserByEmail returns the user with the email (compared as
	// NormalizeEmail gives it); ErrNotFound if there is none.
	UserByEmail(ctx context.Context, email string) (User, error)
	// SetUserEmail sets the user's email ("" removes it); ErrConflict if
	// another user has it, ErrNotFound if there is no such user.
	SetUserEmail(ctx context.Context, userID, email string) error
	// SetUserPassword sets the user's password hash ("" removes the
	// password); ErrNotFound if there is no such user.
	SetUserPassword(ctx context.Context, userID, hash string) error

	// CreateSession stores a dashboard session. ErrConflict if the hash
	// exists, ErrNotFound if the user does not.
	CreateSession(ctx context.Context, s Session) error
	// LookupSession returns the session with the hash and its user,
	// expired or not; ErrNotFound if there is none.
	LookupSession(ctx context.Context, hash string) (Session, User, error)
	// TouchSession sets the session's last-seen time; ErrNotFound if
	// there is no such session.
	TouchSession(ctx context.Context, hash string, at time.Time) error
	// DeleteSession forgets the session; a missing one is no error.
	DeleteSession(ctx context.Context, hash string) error
	// DeleteUserSessions forgets every session of the user and returns
	// how many.
	DeleteUserSessions(ctx context.Context, userID string) (int, error)
	// PruneSessions forgets the sessions past their absolute expiry at
	// expiredAt or last seen before idleBefore, and returns how many.
	PruneSessions(ctx context.Context, expiredAt, idleBefore time.Time) (int, error)
	// PutPasswordReset stores a password-reset link, forgetting the
	// user's other links and every link expired at r.CreatedAt first.
	// ErrConflict if the hash exists, ErrNotFound if the user does not.
	PutPasswordReset(ctx context.Context, r PasswordReset) error
	// TakePasswordReset returns the user of the reset link with the hash
	// and forgets the link, in one statement (a link is used once);
	// ErrNotFound if there is none or it expired before now (an expired
	// link is forgotten all the same).
	TakePasswordReset(ctx context.Context, hash string, now time.Time) (userID string, err error)
	// AddToken stores a token for an existing user; ErrNotFound if the user
	// does not exist, ErrConflict if the hash does.
	AddToken(ctx context.Context, t Token) error
	// LookupToken returns the token with the hash and its user, revoked or
	// not; ErrNotFound if there is none.
	LookupToken(ctx context.Context, hash string) (Token, User, error)
	// SetTokenProfile sets the response profile of the token with the
	// hash. ErrNotFound if there is none.
	SetTokenProfile(ctx context.Context, hash, profile string) error
	// ListTokens returns the user's tokens, revoked ones included, oldest
	// first. ErrNotFound if the user does not exist.
	ListTokens(ctx context.Context, userID string) ([]Token, error)
	// RevokeToken revokes the token with the hash at the given time. Revoking
	// a revoked token changes nothing. ErrNotFound if there is none.
	RevokeToken(ctx context.Context, hash string, at time.Time) error
	// RevokeUserTokens revokes the user's valid tokens of the kind (every
	// kind when kind is empty) and returns how many it revoked. ErrNotFound
	// if the user does not exist.
	RevokeUserTokens(ctx context.Context, userID, kind string, at time.Time) (int, error)
	// ClaimIdempotent records a write's idempotency key in state running,
	// or returns the record already there. claimed reports whether the
	// caller now runs the write: the key was new, or its record is in state
	// unknown, or running but last updated before staleBefore (its relay
	// went away); such a record is claimed again, keeping its fingerprint.
	// A record created before expiredBefore counts as absent.
	ClaimIdempotent(ctx context.Context, rec Idempotent, staleBefore, expiredBefore time.Time) (got Idempotent, claimed bool, err error)
	// FinishIdempotent records a claimed write's outcome: state done with
	// the response, or state unknown. ErrNotFound if there is no record.
	FinishIdempotent(ctx context.Context, rec Idempotent) error
	// PurgeIdempotent deletes records created before the time and returns
	// how many.
	PurgeIdempotent(ctx context.Context, before time.Time) (int, error)
	// SetUserAccess opens or closes the Management API for a user (closed:
	// 403 not_available) and sets the features withheld from the user's
	// plan (403 plan_required). ErrNotFound if the user does not exist.
	SetUserAccess(ctx context.Context, userID string, managementClosed bool, withheld []string) error

	// ManagedState returns all of the user's management state, read in
	// one transaction. A user without any is the zero ManagedState.
	ManagedState(ctx context.Context, userID string) (ManagedState, error)
	// Resource returns one management resource; ErrNotFound if there is
	// none.
	Resource(ctx context.Context, userID, kind, id string) (Resource, error)
	// WriteResources applies writes all or nothing, each conditional on
	// its Version (UPDATE … WHERE version = ?; INSERT for Version 0, which
	// fails with ErrVersionConflict when the row exists), durably before
	// it returns; with bumpConfig it also increments the user's config
	// version in the same transaction. It returns the config version after
	// the writes. ErrVersionConflict when any Version does not match
	// (nothing is written); ErrNotFound if the user does not exist.
	WriteResources(ctx context.Context, userID string, bumpConfig bool, writes ...ResourceWrite) (configVersion int64, err error)
	// SetConnections records the agent's platform connections (JSON) for
	// reads while it is offline; nil forgets them. ErrNotFound if the
	// user does not exist.
	SetConnections(ctx context.Context, userID string, connections []byte) error

	// PutBrokerLink stores the user's broker link, replacing the one
	// there whole (relinking keeps nothing of the old secrets).
	// ErrNotFound if the user does not exist.
	PutBrokerLink(ctx context.Context, l BrokerLink) error
	// BrokerLink returns the user's broker link; ErrNotFound if there is
	// none.
	BrokerLink(ctx context.Context, userID string) (BrokerLink, error)
	// ListBrokerLinks returns every broker link, by user id.
	ListBrokerLinks(ctx context.Context) ([]BrokerLink, error)
	// UpdateBrokerSealed replaces the sealed secrets of the user's link and
	// sets its UpdatedAt. ErrNotFound if there is no link.
	UpdateBrokerSealed(ctx context.Context, userID, sealed string, at time.Time) error
	// SwapBrokerSealed replaces the sealed secrets of the user's link with
	// sealed, and sets its UpdatedAt, only if they are old now:
	// ErrVersionConflict if they are not (nothing is written), ErrNotFound
	// if there is no link.
	SwapBrokerSealed(ctx context.Context, userID, old, sealed string, at time.Time) error
	// DeleteBrokerLink removes the user's broker link with all of its
	// broker state and journaled writes, in one transaction, and reports
	// whether there was a link.
	DeleteBrokerLink(ctx context.Context, userID string) (bool, error)
	// PutBrokerState stores value under the bucket's key for the user,
	// replacing any. ErrNotFound if the user does not exist.
	PutBrokerState(ctx context.Context, userID, bucket, key string, value []byte) error
	// DeleteBrokerState removes the bucket's key for the user; a missing
	// key is no error.
	DeleteBrokerState(ctx context.Context, userID, bucket, key string) error
	// LoadBrokerState returns the user's bucket, key to value; an empty
	// map when it holds none.
	LoadBrokerState(ctx context.Context, userID, bucket string) (map[string][]byte, error)
	// BeginBrokerWrite journals that the user's write id, of the
	// fingerprint, began at at. ErrConflict if the id is journaled
	// already, ErrNotFound if the user does not exist.
	BeginBrokerWrite(ctx context.Context, userID, id string, fp [32]byte, at time.Time) error
	// FinishBrokerWrite records a journaled write's outcome: its result,
	// or its error's code and detail. ErrNotFound if the write is not
	// journaled.
	FinishBrokerWrite(ctx context.Context, userID, id string, result []byte, errCode, errDetail string) error
	// LoadBrokerWrites returns the user's writes begun at or after since,
	// oldest first.
	LoadBrokerWrites(ctx context.Context, userID string, since time.Time) ([]BrokerWrite, error)
	// PruneBrokerWrites forgets the user's writes begun before before.
	PruneBrokerWrites(ctx context.Context, userID string, before time.Time) error

	// CreateSupportToken stores a support token with its grants, all or
	// nothing. ErrNotFound if a granted user does not exist, ErrConflict
	// if the hash exists.
	CreateSupportToken(ctx context.Context, t SupportToken) error
	// SupportToken returns the support token with the hash and its
	// grants, revoked or not; ErrNotFound if there is none.
	SupportToken(ctx context.Context, hash string) (SupportToken, error)
	// ListSupportTokens returns every support token with its grants,
	// revoked ones included, oldest first.
	ListSupportTokens(ctx context.Context) ([]SupportToken, error)
	// RevokeSupportToken revokes the support token with the hash.
	// Revoking a revoked token changes nothing. ErrNotFound if there is
	// none.
	RevokeSupportToken(ctx context.Context, hash string, at time.Time) error

	// AddAgentSession records the start of an agent session, or a
	// refused handshake (SessionID "", DisconnectedAt and Reason set).
	// ErrConflict if the session id is recorded already.
	AddAgentSession(ctx context.Context, s AgentSession) error
	// EndAgentSession records when and why a live session ended; a
	// session that ended already keeps its first end. ErrNotFound if the
	// session is not recorded.
	EndAgentSession(ctx context.Context, sessionID string, at time.Time, reason string) error
	// SetAgentSessionDiagnostics records the latest diagnostics (JSON) of
	// a session, received at at. ErrNotFound if the session is not
	// recorded.
	SetAgentSessionDiagnostics(ctx context.Context, sessionID string, diagnostics []byte, at time.Time) error
	// CloseOpenAgentSessions ends every session of the node still live in
	// the store at at (or its start, if later) with reason, and returns
	// how many: at a relay node's start, the sessions its previous run
	// left open. Other nodes' sessions are left alone.
	CloseOpenAgentSessions(ctx context.Context, node string, at time.Time, reason string) (int, error)
	// PruneAgentSessions forgets the sessions that ended before before,
	// and returns how many. Live sessions stay.
	PruneAgentSessions(ctx context.Context, before time.Time) (int, error)
	// AgentSessions returns at most limit of the user's sessions that are
	// live or ended at or after since, newest first (by start). A user
	// without any has none; it is no error.
	AgentSessions(ctx context.Context, userID string, since time.Time, limit int) ([]AgentSession, error)
	// LatestAgentDiagnostics returns the latest diagnostics recorded on
	// any of the user's sessions; ErrNotFound if there are none.
	LatestAgentDiagnostics(ctx context.Context, userID string) (StoredDiagnostics, error)

	// AcquireBrokerLease takes, or renews, the lease that lets node run
	// the user's broker instance, for ttl from the store's own clock (so
	// that the nodes' clocks need not agree). It reports whether node
	// holds the lease now: false when another node holds a lease that has
	// not expired. Nodes run a user's instance only while they hold its
	// lease, so that it runs on one node at a time.
	AcquireBrokerLease(ctx context.Context, userID, node string, ttl time.Duration) (bool, error)
	// ReleaseBrokerLease gives up node's lease on the user's instance, if
	// node holds it; otherwise it changes nothing.
	ReleaseBrokerLease(ctx context.Context, userID, node string) error
	// BrokerLeaseHolder returns the node holding an unexpired lease on
	// the user's instance; ErrNotFound if none does.
	BrokerLeaseHolder(ctx context.Context, userID string) (string, error)

	// PutOAuthState stores an OAuth link under way, forgetting the
	// expired ones and the user's oldest beyond keepPerUser-1 first.
	// ErrConflict if the hash exists; ErrNotFound if the user does not.
	PutOAuthState(ctx context.Context, s OAuthState, keepPerUser int) error
	// TakeOAuthState returns and forgets the state with the hash, in one
	// step (a state is used once, by one node); ErrNotFound if there is
	// none or it expired before now.
	TakeOAuthState(ctx context.Context, hash string, now time.Time) (OAuthState, error)

	// PutPairingCode stores a one-time pairing code, forgetting the codes
	// expired at its CreatedAt and the user's oldest beyond keepPerUser-1
	// first. ErrConflict if the hash exists; ErrNotFound if the user does
	// not.
	PutPairingCode(ctx context.Context, c PairingCode, keepPerUser int) error
	// RedeemPairingCode takes the pairing code with the hash (reads and
	// deletes it: a code is redeemed once) and stores t, a new token, for
	// the code's user (t.UserID is set to it), in one transaction; it
	// returns the code. ErrNotFound if there is no such code, it expired
	// before now, or its user is disabled: no token is stored then, and an
	// expired code is forgotten all the same.
	RedeemPairingCode(ctx context.Context, hash string, now time.Time, t Token) (PairingCode, error)

	// AppendActivity stores an entry of the user's activity log and
	// returns its Seq. With a Ref, an entry of the same user and Ref
	// already stored is not written again: inserted is false and seq is
	// the stored entry's. ErrNotFound if the user does not exist.
	AppendActivity(ctx context.Context, userID string, r ActivityRecord) (seq int64, inserted bool, err error)
	// AppendActivities stores several entries, of any users, in one
	// transaction and in order, each as AppendActivity would (an entry of
	// an unknown user is reported in its ActivityAppended.Err, and the
	// others are written). An error is the transaction's: nothing was
	// written.
	AppendActivities(ctx context.Context, entries []ActivityAppend) ([]ActivityAppended, error)
	// ListActivity returns the user's entries that q selects, newest
	// (greatest Seq) first. A user without any has none; it is no error.
	ListActivity(ctx context.Context, userID string, q ActivityQuery) ([]ActivityRecord, error)
	// LatestActivity returns the user's newest entry of the kind;
	// ErrNotFound if there is none.
	LatestActivity(ctx context.Context, userID, kind string) (ActivityRecord, error)
	// PruneActivity forgets every user's entries that happened before
	// before (the retention), and returns how many.
	PruneActivity(ctx context.Context, before time.Time) (int, error)
	// TrimActivity forgets the user's oldest entries of the class beyond
	// the newest keep (the cap), and returns how many.
	TrimActivity(ctx context.Context, userID, class string, keep int) (int, error)
	// QueueAlertDelivery stores a new delivery (relay/alerts), its
	// Attempts 0, due at d.NextAt, and returns the state it is stored in:
	// AlertPending, or AlertFolded when the destination already has
	// w.Max deliveries created in w's window (then the window's summary
	// is created too, once). ErrConflict, with the stored state, when the
	// destination has a delivery of the entry (d.EntrySeq > 0) already;
	// a row of the same id is left as it is. ErrNotFound if the user does
	// not exist.
	QueueAlertDelivery(ctx context.Context, d AlertDelivery, w AlertWindow) (state string, err error)
	// DueAlertDestinations returns up to limit destinations with a
	// pending delivery due at now whose lease is free, the longest due
	// first.
	DueAlertDestinations(ctx context.Context, now time.Time, limit int) ([]string, error)
	// ClaimAlertDeliveries leases to node, for lease by the store's
	// clock, up to limit pending deliveries of the destination due at
	// now whose lease is free or ended, and returns them, the longest due
	// first. A delivery is claimed by one node at a time.
	ClaimAlertDeliveries(ctx context.Context, destinationID, node string, now time.Time, lease time.Duration, limit int) ([]AlertDelivery, error)
	// FinishAlertAttempt records an attempt of a delivery node holds the
	// lease of (d's State, Attempts, NextAt, LastError, Body, UpdatedAt)
	// and frees the lease; ErrNotFound when node no longer holds it.
	FinishAlertAttempt(ctx context.Context, node string, d AlertDelivery) error
	// AlertDeliveries returns the user's deliveries to a destination,
	// newest first, at most limit.
	AlertDeliveries(ctx context.Context, userID, destinationID string, limit int) ([]AlertDelivery, error)
	// AlertDelivery returns one of the user's deliveries; ErrNotFound if
	// there is none.
	AlertDelivery(ctx context.Context, userID, id string) (AlertDelivery, error)
	// FoldedAlertKinds counts by kind the deliveries to a destination
	// folded into the summary of the window [from, until).
	FoldedAlertKinds(ctx context.Context, destinationID string, from, until time.Time) (map[string]int, error)
	// PruneAlertDeliveries forgets the deliveries that are no longer
	// pending and were last changed before a time; it returns how many.
	PruneAlertDeliveries(ctx context.Context, before time.Time) (int, error)

	// CreateWebhook stores w as the user's webhook unless the user has
	// one, and returns the user's webhook and whether it is w (created).
	// Two callers at once get the same webhook. ErrNotFound if the user
	// does not exist; ErrConflict if w's id is another user's.
	CreateWebhook(ctx context.Context, w Webhook) (got Webhook, created bool, err error)
	// Webhook returns the user's webhook; ErrNotFound if none.
	Webhook(ctx context.Context, userID string) (Webhook, error)
	// LookupWebhook returns the webhook of the id, with its user, in one
	// read; ErrNotFound if none.
	LookupWebhook(ctx context.Context, webhookID string) (Webhook, User, error)
	// RotateWebhook replaces the key of the user's webhook (its hash and
	// sealed form) and returns the webhook; ErrNotFound if none.
	RotateWebhook(ctx context.Context, userID, keyHash, keySealed string, at time.Time) (Webhook, error)
	// AddWebhookAlert stores a received alert and returns its seq.
	// ErrNotFound if the user does not exist.
	AddWebhookAlert(ctx context.Context, a WebhookAlert) (seq int64, err error)
	// UpdateWebhookAlert changes the outcome of the user's alert seq, only
	// while its status is one of from (any status when from is empty),
	// and reports whether it did.
	UpdateWebhookAlert(ctx context.Context, userID string, seq int64, from []string, u WebhookAlertUpdate) (bool, error)
	// ReceiveWebhookAlert, in one transaction, claims an alert's
	// duplicate key as ClaimIdempotent does (never stale; created before
	// expiredBefore counts as absent) and, when claimed, stores the alert
	// a and records the key's State (default IdemRunning), Status and Body
	// as answer gives them for its seq (got has them). Not claimed, it
	// stores nothing and returns the record there.
	ReceiveWebhookAlert(ctx context.Context, claim Idempotent, expiredBefore time.Time, a WebhookAlert,
		answer func(seq int64) Idempotent) (seq int64, got Idempotent, claimed bool, err error)
	// FinishWebhookAlert, in one transaction, is UpdateWebhookAlert and,
	// when dup names a key, FinishIdempotent of dup.
	FinishWebhookAlert(ctx context.Context, userID string, seq int64, from []string, u WebhookAlertUpdate, dup Idempotent) (bool, error)
	// WebhookAlert returns one of the user's alerts; ErrNotFound if none.
	WebhookAlert(ctx context.Context, userID string, seq int64) (WebhookAlert, error)
	// ListWebhookAlerts returns up to limit of the user's alerts whose
	// seq is below before (0: from the newest), newest first.
	ListWebhookAlerts(ctx context.Context, userID string, before int64, limit int) ([]WebhookAlert, error)
	// CountWebhookAlerts counts the user's alerts of the rate id received
	// since a time.
	CountWebhookAlerts(ctx context.Context, userID, rateID string, since time.Time) (int, error)
	// OverdueWebhookAlerts returns up to limit alerts of every user still
	// scheduled with a due time before dueBefore, the oldest due first.
	OverdueWebhookAlerts(ctx context.Context, dueBefore time.Time, limit int) ([]WebhookAlert, error)
	// StaleWebhookAlerts returns up to limit alerts of every user still
	// running since before runningBefore (their last change), the oldest
	// first.
	StaleWebhookAlerts(ctx context.Context, runningBefore time.Time, limit int) ([]WebhookAlert, error)
	// PruneWebhookAlerts forgets the alerts received before a time (but
	// the scheduled ones) and returns how many.
	PruneWebhookAlerts(ctx context.Context, before time.Time) (int, error)

	// Ping checks that the store answers.
	Ping(ctx context.Context) error
	// Close releases the store. It is idempotent.
	Close() error
}
