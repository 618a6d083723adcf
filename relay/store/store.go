// Package store keeps the relay's durable state: users, their plans and
// their tokens. It is the only package that talks to the database; the
// relay's other packages see the Store interface.
//
// The one-machine deployment uses SQLite (pure Go, WAL journal, synchronous
// FULL, so a write is durable before the relay answers 2xx). The schema is
// migrated forward on Open from the numbered files embedded from
// migrations/; a database written by a newer relay is refused with
// ErrSchemaTooNew rather than guessed at.
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
)

// User is an account holder of the service.
type User struct {
	ID        string
	Name      string
	Plan      string
	Disabled  bool
	CreatedAt time.Time
}

// Token is the stored form of an API or agent token: its hash, never its
// text.
type Token struct {
	Hash   string
	UserID string
	Kind   string
	// Profile is an API token's response profile ("standard" or
	// "compatible"); empty means standard.
	Profile   string
	CreatedAt time.Time
	// RevokedAt is the zero time while the token is valid.
	RevokedAt time.Time
}

// Revoked reports whether the token has been revoked.
func (t Token) Revoked() bool { return !t.RevokedAt.IsZero() }

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

// Store is the relay's durable state. Implementations are safe for
// concurrent use; every method that returns nil has made its change durable.
type Store interface {
	// CreateUser stores u with its first tokens, all or nothing.
	// ErrConflict if the id or a token hash exists.
	CreateUser(ctx context.Context, u User, tokens ...Token) error
	// User returns the user with the id; ErrNotFound if there is none.
	User(ctx context.Context, id string) (User, error)
	// SetUserDisabled disables or re-enables a user; ErrNotFound if there
	// is none.
	SetUserDisabled(ctx context.Context, id string, disabled bool) error
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
	// Ping checks that the store answers.
	Ping(ctx context.Context) error
	// Close releases the store. It is idempotent.
	Close() error
}
