package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"tradebridge/protocol"
	"tradebridge/relay/store"
	"tradebridge/trading/dispatch"
)

// StateDB is the part of the relay's store that keeps what the
// operations, the engines and the platform of a broker link remember:
// named buckets of values, and the dispatcher's journal of writes, per
// user. *store.SQLite implements it.
type StateDB interface {
	PutBrokerState(ctx context.Context, userID, bucket, key string, value []byte) error
	DeleteBrokerState(ctx context.Context, userID, bucket, key string) error
	LoadBrokerState(ctx context.Context, userID, bucket string) (map[string][]byte, error)
	BeginBrokerWrite(ctx context.Context, userID, id string, fp [32]byte, at time.Time) error
	FinishBrokerWrite(ctx context.Context, userID, id string, result []byte, errCode, errDetail string) error
	LoadBrokerWrites(ctx context.Context, userID string, since time.Time) ([]store.BrokerWrite, error)
	PruneBrokerWrites(ctx context.Context, userID string, before time.Time) error
}

// LeaseDB is the part of the relay's store that tells which relay node
// runs a user's instance, and keeps the OAuth links under way, so that
// several relay nodes share one store. *store.SQLite implements it.
type LeaseDB interface {
	AcquireBrokerLease(ctx context.Context, userID, node string, ttl time.Duration) (bool, error)
	ReleaseBrokerLease(ctx context.Context, userID, node string) error
	PutOAuthState(ctx context.Context, s store.OAuthState, keepPerUser int) error
	TakeOAuthState(ctx context.Context, hash string, now time.Time) (store.OAuthState, error)
}

// Store is everything the broker family keeps in the relay's store.
type Store interface {
	LinkDB
	StateDB
	LeaseDB
}

// stateTimeout bounds one store call made for the operations, whose
// interfaces (ops.Persist, engine.Store, dispatch.Journal) carry no
// context.
const stateTimeout = 10 * time.Second

// userState is one user's part of the store, as the agent's state file
// looks to the operations and engines: ops.Persist, engine.Store,
// tradovate's Persist and dispatch.Journal. Every write is durable when
// it returns.
type userState struct {
	db     StateDB
	userID string
}

func (u userState) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), stateTimeout)
}

// Put implements ops.Persist and engine.Store.
func (u userState) Put(bucket, key string, value []byte) error {
	ctx, cancel := u.ctx()
	defer cancel()
	return u.db.PutBrokerState(ctx, u.userID, bucket, key, value)
}

// Delete implements ops.Persist and engine.Store.
func (u userState) Delete(bucket, key string) error {
	ctx, cancel := u.ctx()
	defer cancel()
	return u.db.DeleteBrokerState(ctx, u.userID, bucket, key)
}

// Load implements ops.Persist and engine.Store.
func (u userState) Load(bucket string) (map[string][]byte, error) {
	ctx, cancel := u.ctx()
	defer cancel()
	return u.db.LoadBrokerState(ctx, u.userID, bucket)
}

// BeginWrite implements dispatch.Journal.
func (u userState) BeginWrite(id string, fp [32]byte, at time.Time) error {
	ctx, cancel := u.ctx()
	defer cancel()
	err := u.db.BeginBrokerWrite(ctx, u.userID, id, fp, at)
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("broker: write %w", dispatch.ErrJournaled)
	}
	return err
}

// FinishWrite implements dispatch.Journal.
func (u userState) FinishWrite(id string, result json.RawMessage, perr *protocol.Error) error {
	ctx, cancel := u.ctx()
	defer cancel()
	var code, detail string
	if perr != nil {
		code, detail = perr.Code, perr.Detail
	}
	return u.db.FinishBrokerWrite(ctx, u.userID, id, result, code, detail)
}

// LoadWrites implements dispatch.Journal.
func (u userState) LoadWrites(since time.Time) ([]dispatch.JournalRecord, error) {
	ctx, cancel := u.ctx()
	defer cancel()
	ws, err := u.db.LoadBrokerWrites(ctx, u.userID, since)
	if err != nil {
		return nil, err
	}
	out := make([]dispatch.JournalRecord, 0, len(ws))
	for _, w := range ws {
		rec := dispatch.JournalRecord{ID: w.ID, Fingerprint: w.Fingerprint, At: w.At, Done: w.Done}
		if w.Done {
			if w.ErrCode != "" {
				rec.Err = protocol.NewError(w.ErrCode, w.ErrDetail)
			} else {
				rec.Result = json.RawMessage(w.Result)
			}
		}
		out = append(out, rec)
	}
	return out, nil
}

// PruneWrites implements dispatch.Journal.
func (u userState) PruneWrites(before time.Time) error {
	ctx, cancel := u.ctx()
	defer cancel()
	return u.db.PruneBrokerWrites(ctx, u.userID, before)
}

// Buckets of the broker family's own memory in the store.
const (
	// accountsBucket keeps the accounts of the login as last seen, under
	// accountsKey, so that the Management API knows them while the broker
	// is away.
	accountsBucket = "broker.accounts"
	accountsKey    = "list"
)

// saveAccounts keeps the login's accounts.
func (u userState) saveAccounts(accounts []string) error {
	b, err := json.Marshal(accounts)
	if err != nil {
		return err
	}
	return u.Put(accountsBucket, accountsKey, b)
}

// loadAccounts returns the login's accounts as last seen; none when never
// seen.
func (u userState) loadAccounts(ctx context.Context) ([]string, error) {
	m, err := u.db.LoadBrokerState(ctx, u.userID, accountsBucket)
	if err != nil {
		return nil, err
	}
	b, ok := m[accountsKey]
	if !ok {
		return []string{}, nil
	}
	var out []string
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("broker: reading the login's accounts: %w", err)
	}
	return out, nil
}
