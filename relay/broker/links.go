package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
)

// Link methods and environments.
const (
	// MethodAPIKey logs in with the user's name and password and the
	// user's API key (app id, app version, cid, sec).
	MethodAPIKey = "apikey"
	// MethodOAuth uses an access token the broker granted through its
	// OAuth page.
	MethodOAuth = "oauth"
	// EnvDemo is the broker's simulated environment.
	EnvDemo = "demo"
	// EnvLive is the broker's live environment.
	EnvLive = "live"
)

// ErrNotLinked reports a user without a broker login linked.
var ErrNotLinked = errors.New("broker: no broker login linked")

// Secrets are a link's secrets: what logs in, and the current session.
// They are sealed whole before they reach the store, bound to the link's
// user and environment. String, GoString and MarshalJSON print nothing of
// them, so a log line or a response that takes a Secrets by mistake leaks
// nothing.
type Secrets struct {
	// The API-key login.
	Username, Password, AppID, AppVersion string
	CID                                   int
	Sec                                   string
	// DeviceID identifies the relay to the broker as the device of the
	// login; generated when the link is made, stable for the link.
	DeviceID string

	// The OAuth login, and the current session of either method (saved
	// after each login and renewal).
	AccessToken, MDAccessToken, RefreshToken string
	// Expires is when AccessToken expires.
	Expires time.Time
	// BrokerUserID is the broker's id of the login's user (for
	// user/syncrequest).
	BrokerUserID int64
}

// String implements fmt.Stringer without revealing anything.
func (Secrets) String() string { return "broker.Secrets{redacted}" }

// GoString implements fmt.GoStringer without revealing anything.
func (Secrets) GoString() string { return "broker.Secrets{redacted}" }

// MarshalJSON answers a placeholder: Secrets are never encoded in clear
// (sealing uses its own encoding).
func (Secrets) MarshalJSON() ([]byte, error) { return []byte(`"redacted"`), nil }

// sealedSecrets is the encoding of Secrets that is sealed.
type sealedSecrets struct {
	Username      string    `json:"username,omitempty"`
	Password      string    `json:"password,omitempty"`
	AppID         string    `json:"appId,omitempty"`
	AppVersion    string    `json:"appVersion,omitempty"`
	CID           int       `json:"cid,omitempty"`
	Sec           string    `json:"sec,omitempty"`
	DeviceID      string    `json:"deviceId,omitempty"`
	AccessToken   string    `json:"accessToken,omitempty"`
	MDAccessToken string    `json:"mdAccessToken,omitempty"`
	RefreshToken  string    `json:"refreshToken,omitempty"`
	Expires       time.Time `json:"expires,omitzero"`
	BrokerUserID  int64     `json:"brokerUserId,omitempty"`
	// Gen is random, new with each Put: a session saved meanwhile sees a
	// relink by it.
	Gen string `json:"gen,omitempty"`
}

func toSealed(s Secrets, gen string) sealedSecrets {
	return sealedSecrets{Username: s.Username, Password: s.Password, AppID: s.AppID, AppVersion: s.AppVersion,
		CID: s.CID, Sec: s.Sec, DeviceID: s.DeviceID, AccessToken: s.AccessToken, MDAccessToken: s.MDAccessToken,
		RefreshToken: s.RefreshToken, Expires: s.Expires, BrokerUserID: s.BrokerUserID, Gen: gen}
}

func (s sealedSecrets) secrets() Secrets {
	return Secrets{Username: s.Username, Password: s.Password, AppID: s.AppID, AppVersion: s.AppVersion,
		CID: s.CID, Sec: s.Sec, DeviceID: s.DeviceID, AccessToken: s.AccessToken, MDAccessToken: s.MDAccessToken,
		RefreshToken: s.RefreshToken, Expires: s.Expires, BrokerUserID: s.BrokerUserID}
}

// Link is a user's broker login, its secrets opened.
type Link struct {
	UserID string
	// Env is EnvDemo or EnvLive; Method is MethodAPIKey or MethodOAuth.
	Env, Method string
	Secrets     Secrets
	// LinkedAt is when the login was linked; UpdatedAt when the link last
	// changed (a session saved, the secrets re-sealed).
	LinkedAt, UpdatedAt time.Time
}

// ValidationError reports a link that cannot be made: the fields missing
// or invalid, by their names in the link route's JSON, never their
// values.
type ValidationError struct {
	Fields []string
}

func (e *ValidationError) Error() string {
	return "broker: a link needs valid " + strings.Join(e.Fields, ", ")
}

// LinkDB is the part of the relay's store that keeps links.
// *store.SQLite implements it.
type LinkDB interface {
	PutBrokerLink(ctx context.Context, l store.BrokerLink) error
	BrokerLink(ctx context.Context, userID string) (store.BrokerLink, error)
	ListBrokerLinks(ctx context.Context) ([]store.BrokerLink, error)
	SwapBrokerSealed(ctx context.Context, userID, old, sealed string, at time.Time) error
	DeleteBrokerLink(ctx context.Context, userID string) (bool, error)
}

// LinkOptions configures NewLinks.
type LinkOptions struct {
	// Store keeps the sealed links. Required.
	Store LinkDB
	// Keys seal and open the secrets. Required.
	Keys *sealed.Keyring
	// Now is the clock of LinkedAt and UpdatedAt; time.Now when nil.
	Now func() time.Time
}

// Links reads and writes the broker links, sealing their secrets: the
// relay's link routes and the relay broker command use it. It is safe for
// concurrent use, also by several processes on one store: a session saved
// or a re-seal never undoes a change made meanwhile.
type Links struct {
	opts LinkOptions
}

// NewLinks returns the links of opts.Store.
func NewLinks(opts LinkOptions) (*Links, error) {
	if opts.Store == nil {
		return nil, errors.New("broker: LinkOptions.Store is required")
	}
	if opts.Keys == nil {
		return nil, errors.New("broker: LinkOptions.Keys is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Links{opts: opts}, nil
}

// linkFieldMax bounds every text field of Secrets.
const linkFieldMax = 4096

// linkSwapAttempts bounds the retries of a conditional write that lost to
// concurrent ones.
const linkSwapAttempts = 8

// linkAAD binds a link's sealed secrets to its user and environment.
func linkAAD(userID, env string) []byte {
	return []byte("tradebridge/broker-link\x00" + userID + "\x00" + env)
}

// now is the clock, at the store's precision.
func (l *Links) now() time.Time { return l.opts.Now().UTC().Truncate(time.Millisecond) }

// validateLink names the fields of a link that are missing or invalid.
func validateLink(userID, env, method string, s Secrets) error {
	var bad []string
	if userID == "" || len(userID) > linkFieldMax {
		bad = append(bad, "userId")
	}
	if env != EnvDemo && env != EnvLive {
		bad = append(bad, "env")
	}
	if method != MethodAPIKey && method != MethodOAuth {
		bad = append(bad, "method")
	}
	bad = append(bad, s.invalidFields(method)...)
	if bad != nil {
		return &ValidationError{Fields: bad}
	}
	return nil
}

// validateAPIKey checks the secrets of an API-key login, before a login
// with them: a *ValidationError names what is missing or invalid.
func (s Secrets) validateAPIKey() error {
	if bad := s.invalidFields(MethodAPIKey); bad != nil {
		return &ValidationError{Fields: bad}
	}
	return nil
}

// invalidFields names the fields of s missing or invalid for the method.
func (s Secrets) invalidFields(method string) []string {
	var bad []string
	check := func(name string, ok bool) {
		if !ok {
			bad = append(bad, name)
		}
	}
	text := func(name, v string, required bool) {
		check(name, len(v) <= linkFieldMax && (!required || v != ""))
	}
	apiKey, oauth := method == MethodAPIKey, method == MethodOAuth
	text("username", s.Username, apiKey)
	text("password", s.Password, apiKey)
	text("appId", s.AppID, apiKey)
	text("appVersion", s.AppVersion, apiKey)
	check("cid", s.CID > 0 || (!apiKey && s.CID == 0))
	text("sec", s.Sec, apiKey)
	text("deviceId", s.DeviceID, false)
	text("accessToken", s.AccessToken, oauth)
	text("mdAccessToken", s.MDAccessToken, false)
	text("refreshToken", s.RefreshToken, false)
	check("expires", !oauth || !s.Expires.IsZero())
	check("brokerUserId", s.BrokerUserID >= 0)
	return bad
}

// linkDeviceID returns a random device id in the form of a UUID (version
// 4), as the broker's own clients send.
func linkDeviceID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("broker: generate a device id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}

func (l *Links) seal(userID, env string, s sealedSecrets) (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("broker: encode a link's secrets: %w", err)
	}
	out, err := l.opts.Keys.Seal(b, linkAAD(userID, env))
	if err != nil {
		return "", fmt.Errorf("broker: seal a link's secrets: %w", err)
	}
	return out, nil
}

// open returns the link's secrets, opened.
func (l *Links) open(bl store.BrokerLink) (sealedSecrets, error) {
	b, err := l.opts.Keys.Open(bl.Sealed, linkAAD(bl.UserID, bl.Env))
	if err != nil {
		return sealedSecrets{}, fmt.Errorf("broker: opening the link's secrets: %w", err)
	}
	var s sealedSecrets
	if err := json.Unmarshal(b, &s); err != nil {
		return sealedSecrets{}, errors.New("broker: opening the link's secrets: they are not the secrets of a link")
	}
	return s, nil
}

// Put links the user's broker login, replacing any link the user had
// (nothing of its secrets is kept, but its DeviceID when the login is the
// same: same environment and username), durably. It calls no broker:
// the broker judges the login when the relay first uses it.
// A *ValidationError names what is missing or invalid; an error matching
// store.ErrNotFound reports an unknown user.
func (l *Links) Put(ctx context.Context, userID, env, method string, s Secrets) (Link, error) {
	if err := validateLink(userID, env, method, s); err != nil {
		return Link{}, err
	}
	if s.DeviceID == "" {
		if old, err := l.Get(ctx, userID); err == nil && old.Env == env && old.Secrets.Username == s.Username {
			s.DeviceID = old.Secrets.DeviceID
		}
	}
	if s.DeviceID == "" {
		id, err := linkDeviceID()
		if err != nil {
			return Link{}, err
		}
		s.DeviceID = id
	}
	var gen [8]byte
	if _, err := rand.Read(gen[:]); err != nil {
		return Link{}, fmt.Errorf("broker: generate a link: %w", err)
	}
	sealedText, err := l.seal(userID, env, toSealed(s, hex.EncodeToString(gen[:])))
	if err != nil {
		return Link{}, err
	}
	now := l.now()
	bl := store.BrokerLink{UserID: userID, Env: env, Method: method, Sealed: sealedText, LinkedAt: now, UpdatedAt: now}
	if err := l.opts.Store.PutBrokerLink(ctx, bl); err != nil {
		return Link{}, err
	}
	return Link{UserID: userID, Env: env, Method: method, Secrets: s, LinkedAt: now, UpdatedAt: now}, nil
}

// Get returns the user's link with its secrets opened; ErrNotLinked when
// there is none. A link sealed with a key the key file no longer holds
// answers an error matching sealed.ErrUnknownKey.
func (l *Links) Get(ctx context.Context, userID string) (Link, error) {
	bl, err := l.opts.Store.BrokerLink(ctx, userID)
	if errors.Is(err, store.ErrNotFound) {
		return Link{}, ErrNotLinked
	}
	if err != nil {
		return Link{}, err
	}
	s, err := l.open(bl)
	if err != nil {
		return Link{}, err
	}
	return Link{UserID: bl.UserID, Env: bl.Env, Method: bl.Method, Secrets: s.secrets(),
		LinkedAt: bl.LinkedAt, UpdatedAt: bl.UpdatedAt}, nil
}

// SaveSession keeps the session of the user's login (after a login or a
// renewal) with the link's secrets, so that a restarted relay goes on with
// it instead of logging in again. A link relinked (Put) while the session
// is being saved keeps its own: the session belonged to the login it
// replaced, and nothing is saved. ErrNotLinked when there is no link.
func (l *Links) SaveSession(ctx context.Context, userID string, accessToken, mdAccessToken string, expires time.Time, brokerUserID int64) error {
	gen := ""
	for i := range linkSwapAttempts {
		bl, err := l.opts.Store.BrokerLink(ctx, userID)
		if errors.Is(err, store.ErrNotFound) {
			return ErrNotLinked
		}
		if err != nil {
			return err
		}
		s, err := l.open(bl)
		if err != nil {
			return err
		}
		if i > 0 && s.Gen != gen {
			return nil // relinked while this session was being saved
		}
		gen = s.Gen
		s.AccessToken, s.MDAccessToken, s.Expires, s.BrokerUserID = accessToken, mdAccessToken, expires, brokerUserID
		sealedText, err := l.seal(userID, bl.Env, s)
		if err != nil {
			return err
		}
		err = l.opts.Store.SwapBrokerSealed(ctx, userID, bl.Sealed, sealedText, l.now())
		switch {
		case errors.Is(err, store.ErrNotFound):
			return ErrNotLinked
		case errors.Is(err, store.ErrVersionConflict):
			continue // changed meanwhile: apply the session to the change
		}
		return err
	}
	return errors.New("broker: saving the session: the link kept changing")
}

// Delete removes the user's link, with all the broker state and the
// journal of its writes, and reports whether there was one.
func (l *Links) Delete(ctx context.Context, userID string) (bool, error) {
	return l.opts.Store.DeleteBrokerLink(ctx, userID)
}

// Rekey re-seals with the primary key every link sealed with another key,
// and returns how many it re-sealed. A link it cannot open (its key is
// gone from the key file) is left as it is and reported in the error,
// by user id, after the others are done.
func (l *Links) Rekey(ctx context.Context) (int, error) {
	links, err := l.opts.Store.ListBrokerLinks(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, bl := range links {
		done, err := l.rekey(ctx, bl)
		if err != nil {
			errs = append(errs, fmt.Errorf("the link of user %s: %w", bl.UserID, err))
		}
		if done {
			n++
		}
	}
	if len(errs) > 0 {
		return n, fmt.Errorf("broker: rekey: %w", errors.Join(errs...))
	}
	return n, nil
}

// rekey re-seals one link unless the primary key sealed it, retrying on
// a concurrent change; done reports that it re-sealed it.
func (l *Links) rekey(ctx context.Context, bl store.BrokerLink) (done bool, err error) {
	for range linkSwapAttempts {
		if l.opts.Keys.SealedWith(bl.Sealed) == l.opts.Keys.Primary() {
			return false, nil
		}
		plain, err := l.opts.Keys.Open(bl.Sealed, linkAAD(bl.UserID, bl.Env))
		if err != nil {
			return false, err
		}
		resealed, err := l.opts.Keys.Seal(plain, linkAAD(bl.UserID, bl.Env))
		if err != nil {
			return false, err
		}
		err = l.opts.Store.SwapBrokerSealed(ctx, bl.UserID, bl.Sealed, resealed, l.now())
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, store.ErrNotFound):
			return false, nil // unlinked meanwhile
		case !errors.Is(err, store.ErrVersionConflict):
			return false, err
		}
		if bl, err = l.opts.Store.BrokerLink(ctx, bl.UserID); errors.Is(err, store.ErrNotFound) {
			return false, nil
		} else if err != nil {
			return false, err
		}
	}
	return false, errors.New("the link kept changing")
}
