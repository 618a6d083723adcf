package webhook

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"

	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/events"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
)

// SendPath is the pattern of the alerts' route; the webhook's id fills
// {webhookId}.
const SendPath = "/v1/send/{webhookId}"

// sendPrefix begins every webhook's URL.
const sendPrefix = "/v1/send/"

// Info is what a user pastes into TradingView: the webhook's URL (a path
// on the relay's address) and its key, which every alert's body carries
// (key=<key>;).
type Info struct {
	URL string `json:"url"`
	Key string `json:"key"`
}

// KeyStore is the part of store.Store the webhooks' keys use.
type KeyStore interface {
	CreateWebhook(ctx context.Context, w store.Webhook) (store.Webhook, bool, error)
	Webhook(ctx context.Context, userID string) (store.Webhook, error)
	RotateWebhook(ctx context.Context, userID, keyHash, keySealed string, at time.Time) (store.Webhook, error)
}

// ErrNoKeys refuses to make or show a webhook without the relay's key
// ring, which seals the keys.
var ErrNoKeys = errors.New("webhook: no key ring to seal the webhook's key")

// lowerBase32 encodes the ids and keys: lowercase, no padding.
var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// idPrefix and keyPrefix begin webhook ids and keys.
const (
	idPrefix  = "wh_"
	keyPrefix = "whk_"
	idChars   = 24 // 15 random bytes
	keyChars  = 32 // 20 random bytes
)

// newID returns a fresh webhook id: "wh_" and 24 lowercase base32
// characters.
func newID() string {
	var b [15]byte
	_, _ = rand.Read(b[:])
	return idPrefix + lowerBase32.EncodeToString(b[:])
}

// newKey returns a fresh key: "whk_" and 32 lowercase base32 characters.
func newKey() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return keyPrefix + lowerBase32.EncodeToString(b[:])
}

// ValidID reports whether id has the form of a webhook id.
func ValidID(id string) bool {
	rest, ok := strings.CutPrefix(id, idPrefix)
	if !ok || len(rest) != idChars {
		return false
	}
	for _, c := range rest {
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// keyMatches compares key with a stored hash in constant time (of the
// digests: the key's length says nothing).
func keyMatches(key, stored string) bool {
	return subtle.ConstantTimeCompare([]byte(auth.Hash(key)), []byte(stored)) == 1
}

// aad binds a sealed key to its user.
func aad(userID string) []byte { return []byte("webhook:" + userID) }

// Show returns the user's webhook, made on first use.
// store.ErrNotFound when the user does not exist.
func Show(ctx context.Context, st KeyStore, keys *sealed.Keyring, userID string, now time.Time) (Info, error) {
	if keys == nil {
		return Info{}, ErrNoKeys
	}
	w, err := st.Webhook(ctx, userID)
	if errors.Is(err, store.ErrNotFound) {
		w, err = create(ctx, st, keys, userID, now)
	}
	if err != nil {
		return Info{}, err
	}
	return open(keys, w)
}

// Rotate issues a new key for the user's webhook (made if the user has
// none) and returns it: the old key is refused from the next alert on.
// store.ErrNotFound when the user does not exist.
func Rotate(ctx context.Context, st KeyStore, keys *sealed.Keyring, userID string, now time.Time) (Info, error) {
	if keys == nil {
		return Info{}, ErrNoKeys
	}
	key := newKey()
	s, err := keys.Seal([]byte(key), aad(userID))
	if err != nil {
		return Info{}, fmt.Errorf("webhook: seal the key: %w", err)
	}
	w, err := st.RotateWebhook(ctx, userID, auth.Hash(key), s, now.UTC())
	if errors.Is(err, store.ErrNotFound) {
		if w, err = create(ctx, st, keys, userID, now); err != nil {
			return Info{}, err
		}
		return open(keys, w)
	}
	if err != nil {
		return Info{}, err
	}
	return Info{URL: sendPrefix + w.ID, Key: key}, nil
}

// Show returns the user's webhook (Show), made on first use.
func (s *Server) Show(ctx context.Context, userID string) (Info, error) {
	return Show(ctx, s.opts.Store, s.opts.Keys, userID, s.opts.Clock())
}

// Rotate issues a new key for the user's webhook (Rotate): the old key is
// refused from the next alert on. It records the rotation in the user's
// activity log (config.changed, resource webhook, as the operator's
// relay webhook rotate does) with by as its source.
func (s *Server) Rotate(ctx context.Context, userID string, by protocol.ActivitySource) (Info, error) {
	in, err := Rotate(ctx, s.opts.Store, s.opts.Keys, userID, s.opts.Clock())
	if err != nil {
		return Info{}, err
	}
	if s.opts.Events != nil {
		who := "by the " + by.Kind
		if by.Kind == protocol.SourceDashboard {
			who = "from the dashboard"
		}
		s.opts.Events.Publish(events.Activity(userID, "", protocol.ActivityEntry{
			At:      s.opts.Clock().UTC().Truncate(time.Millisecond),
			Kind:    protocol.ActivityConfigChanged,
			Source:  by,
			Summary: "TradingView webhook key rotated " + who,
			Detail: mustJSON(map[string]any{"resource": "webhook", "id": strings.TrimPrefix(in.URL, sendPrefix), "op": "rotate",
				"changes": []map[string]any{{"field": "key", "changed": true}}}),
		}))
	}
	return in, nil
}

// create makes the user's webhook, or returns the one another caller
// made at the same time.
func create(ctx context.Context, st KeyStore, keys *sealed.Keyring, userID string, now time.Time) (store.Webhook, error) {
	for range 3 {
		key := newKey()
		s, err := keys.Seal([]byte(key), aad(userID))
		if err != nil {
			return store.Webhook{}, fmt.Errorf("webhook: seal the key: %w", err)
		}
		w, _, err := st.CreateWebhook(ctx, store.Webhook{UserID: userID, ID: newID(), KeyHash: auth.Hash(key), KeySealed: s,
			CreatedAt: now.UTC()})
		if errors.Is(err, store.ErrConflict) {
			continue // an id drawn twice: draw again
		}
		return w, err
	}
	return store.Webhook{}, errors.New("webhook: no free webhook id")
}

// open returns the Info of a stored webhook.
func open(keys *sealed.Keyring, w store.Webhook) (Info, error) {
	key, err := keys.Open(w.KeySealed, aad(w.UserID))
	if err != nil {
		return Info{}, fmt.Errorf("webhook: open the key: %w", err)
	}
	return Info{URL: sendPrefix + w.ID, Key: string(key)}, nil
}

// Lookup is the part of store.Store the door's key check uses.
type Lookup interface {
	LookupWebhook(ctx context.Context, webhookID string) (store.Webhook, store.User, error)
}

// authenticator checks an alert's webhook and key for admit: the token
// is the webhook's id and the key, joined by tokenSep (Server.token).
type authenticator struct{ st Lookup }

// tokenSep joins the id and the key of the door's token.
const tokenSep = "\x00"

// Authenticate implements admit.Authenticator. The principal is the
// webhook's user's, of kind API (the trading budget's refusals are
// recorded as an API token's are); its TokenHash is the webhook's id,
// which names the source of what the alert does.
func (a authenticator) Authenticate(ctx context.Context, token string, want auth.Kind) (auth.Principal, error) {
	id, key, ok := strings.Cut(token, tokenSep)
	rs := stateOf(ctx)
	if !ok || key == "" {
		rs.setRefusal(outcomeWrongKey)
		return auth.Principal{}, auth.ErrUnauthorized
	}
	w, u, err := a.st.LookupWebhook(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		rs.setRefusal(outcomeUnknownWebhook)
		return auth.Principal{}, auth.ErrUnauthorized
	case err != nil:
		rs.setRefusal(outcomeUnavailable)
		return auth.Principal{}, fmt.Errorf("%w: %v", auth.ErrStoreUnavailable, err)
	case !keyMatches(key, w.KeyHash):
		rs.setRefusal(outcomeWrongKey)
		return auth.Principal{}, auth.ErrUnauthorized
	case u.Disabled:
		rs.setRefusal(outcomeUnknownWebhook)
		return auth.Principal{}, auth.ErrUnauthorized
	}
	return auth.Principal{UserID: u.ID, UserName: u.Name, Plan: auth.Plan(u.Plan), Kind: want, TokenHash: w.ID,
		ManagementClosed: u.ManagementClosed, Withheld: u.Withheld}, nil
}
