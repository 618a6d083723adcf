package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"go.uber.org/zap"

	"tradebridge/relay/profile"
	"tradebridge/relay/store"
)

// Errors of Authenticate.
var (
	// ErrUnauthorized reports a token that is malformed, unknown, revoked,
	// of the wrong kind, or whose user is disabled. Callers answer 401 and
	// never say which.
	ErrUnauthorized = errors.New("auth: unauthorized")
	// ErrStoreUnavailable reports that the token could not be checked.
	ErrStoreUnavailable = errors.New("auth: store unavailable")
)

// Principal is the authenticated caller of a request or the owner of a
// tunnel.
type Principal struct {
	UserID   string
	UserName string
	Plan     Plan
	Kind     Kind
	// Profile is the response profile of an API token: how trading
	// results are shaped for this caller.
	Profile profile.Profile
	// Scope is an API token's scope (Allows); "" for other kinds.
	Scope Scope
	// TokenHash identifies the token (its stored hash) without revealing
	// it.
	TokenHash string
	// ManagementClosed reports that the Management API is closed for the
	// user (403 not_available), from the user's row.
	ManagementClosed bool
	// Withheld are the features withheld from the user's plan (403
	// plan_required), from the user's row: names of Features. Nil when
	// none. Cached principals share it: callers must not change it.
	Withheld []string
	// Grants are, for a support token, the ids of the users whose agent
	// diagnostics and connection history it may read, sorted; nil for
	// other kinds. Cached principals share it: callers must not change
	// it.
	Grants []string
}

// Granted reports whether the principal is a support token granted
// reading userID's agent diagnostics and connection history.
func (p Principal) Granted(userID string) bool {
	if p.Kind != KindSupport {
		return false
	}
	_, ok := slices.BinarySearch(p.Grants, userID)
	return ok
}

// SupportUserPrefix prefixes the UserID of a support token's Principal:
// "support:" and the token's id. No user id has it (they start "usr_").
const SupportUserPrefix = "support:"

// TokenID is the short id of a token by its hash (the first 12 hex
// digits): what `relay tokens list` and `relay support tokens` show, and
// what the logs name, never the token.
func TokenID(hash string) string { return hash[:min(12, len(hash))] }

// Withholds reports whether the feature (one of Features) is withheld
// from the principal's plan.
func (p Principal) Withholds(feature string) bool {
	return slices.Contains(p.Withheld, feature)
}

// Features are the names of what may be withheld from a user's plan: the
// families of the Management API and its kinds of resource.
var Features = []string{
	"desktop", "tv",
	"copier", "monitor", "account-group", "atm-template", "controls", "news-lockout", "connection-settings",
}

// ErrUnknownFeature refuses a withheld feature that is not one of
// Features.
var ErrUnknownFeature = errors.New("auth: unknown feature")

// SetUserAccess opens or closes the Management API for a user and sets the
// features withheld from the user's plan (each one of Features; kept
// sorted, each once). A running relay applies it within its cache TTL.
// store.ErrNotFound if there is no such user.
func SetUserAccess(ctx context.Context, st store.Store, userID string, managementClosed bool, withheld []string) error {
	for _, f := range withheld {
		if !slices.Contains(Features, f) {
			return fmt.Errorf("%w (the features are %s)", ErrUnknownFeature, strings.Join(Features, ", "))
		}
	}
	ws := slices.Compact(slices.Sorted(slices.Values(withheld)))
	return st.SetUserAccess(ctx, userID, managementClosed, ws)
}

// Options configures an Authenticator.
type Options struct {
	// Store holds users and tokens. Required.
	Store store.Store
	// CacheTTL bounds how long a verdict is reused, and so how long a
	// revoked token keeps working. Zero means 2s; negative disables the
	// cache.
	CacheTTL time.Duration
	// CacheSize bounds the number of cached verdicts of each kind: at
	// most CacheSize tokens that were accepted and CacheSize that were
	// refused. When one kind is full, its least recently used verdict is
	// evicted, one at a time. The two kinds never evict each other, so a
	// flood of made-up tokens cannot push out honest callers' verdicts.
	// Zero means 10000.
	CacheSize int
	// Logger receives store failures. Nil means no logging.
	Logger *zap.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// SessionIdle is how long a dashboard session (KindSession) may go
	// unused before it is refused. Zero means DefaultSessionIdle.
	SessionIdle time.Duration
}

// DefaultSessionIdle is Options.SessionIdle's default: 7 days.
const DefaultSessionIdle = 7 * 24 * time.Hour

// SessionTouchEvery is how often, at most, a session's last-seen time is
// written: a request within a minute of the last write writes nothing.
const SessionTouchEvery = time.Minute

// Authenticator checks tokens against the store. It is safe for concurrent
// use and starts no goroutines.
type Authenticator struct {
	opts Options
	log  *zap.Logger

	mu sync.Mutex
	// accepted and refused hold verdicts by token hash, each its own
	// least-recently-used cache (see Options.CacheSize).
	accepted *simplelru.LRU[string, verdict]
	refused  *simplelru.LRU[string, verdict]
}

type verdict struct {
	p       Principal
	ok      bool
	expires time.Time
}

// New returns an Authenticator.
func New(opts Options) (*Authenticator, error) {
	if opts.Store == nil {
		return nil, errors.New("auth: Options.Store is required")
	}
	if opts.CacheTTL == 0 {
		opts.CacheTTL = 2 * time.Second
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = 10000
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.SessionIdle <= 0 {
		opts.SessionIdle = DefaultSessionIdle
	}
	accepted, err := simplelru.NewLRU[string, verdict](opts.CacheSize, nil)
	if err != nil {
		return nil, fmt.Errorf("auth: cache: %w", err)
	}
	refused, err := simplelru.NewLRU[string, verdict](opts.CacheSize, nil)
	if err != nil {
		return nil, fmt.Errorf("auth: cache: %w", err)
	}
	return &Authenticator{opts: opts, log: opts.Logger, accepted: accepted, refused: refused}, nil
}

// Authenticate returns the principal of a token of the wanted kind, or
// ErrUnauthorized, or ErrStoreUnavailable.
func (a *Authenticator) Authenticate(ctx context.Context, token string, want Kind) (Principal, error) {
	if k, ok := ParseKind(token); !ok || k != want {
		return Principal{}, ErrUnauthorized
	}
	hash := Hash(token)
	now := a.opts.Now()
	if want == KindSession {
		return a.lookupSession(ctx, hash, now)
	}
	if v, hit := a.cached(hash, now); hit {
		if !v.ok {
			return Principal{}, ErrUnauthorized
		}
		return v.p, nil
	}
	p, err := a.lookup(ctx, hash, want)
	if err != nil && !errors.Is(err, ErrUnauthorized) {
		return Principal{}, err
	}
	a.remember(hash, verdict{p: p, ok: err == nil, expires: now.Add(a.opts.CacheTTL)})
	return p, err
}

func (a *Authenticator) lookup(ctx context.Context, hash string, want Kind) (Principal, error) {
	if want == KindSupport {
		return a.lookupSupport(ctx, hash)
	}
	t, u, err := a.opts.Store.LookupToken(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Principal{}, ErrUnauthorized
	case err != nil:
		a.log.Warn("token lookup failed", zap.Error(err))
		return Principal{}, fmt.Errorf("%w: %v", ErrStoreUnavailable, err)
	case t.Revoked(), u.Disabled, Kind(t.Kind) != want:
		return Principal{}, ErrUnauthorized
	}
	prof, err := profile.Parse(t.Profile)
	if err != nil {
		a.log.Warn("token has an unknown response profile; using standard", zap.String("user", u.ID))
		prof = profile.Standard
	}
	var scope Scope
	if want == KindAPI {
		if scope, err = ParseScope(t.Scope); err != nil {
			// Fail closed: a scope this relay does not know changes nothing.
			a.log.Warn("token has an unknown scope; using read", zap.String("user", u.ID))
			scope = ScopeRead
		}
	}
	return Principal{UserID: u.ID, UserName: u.Name, Plan: Plan(u.Plan), Kind: want, Profile: prof, Scope: scope, TokenHash: hash,
		ManagementClosed: u.ManagementClosed, Withheld: u.Withheld}, nil
}

// lookupSession returns the principal of a dashboard session, read from
// the store every time (never cached: a sign-out holds at once on every
// node), and records its last-seen time when the last record is a minute
// old or more.
func (a *Authenticator) lookupSession(ctx context.Context, hash string, now time.Time) (Principal, error) {
	s, u, err := a.opts.Store.LookupSession(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Principal{}, ErrUnauthorized
	case err != nil:
		a.log.Warn("session lookup failed", zap.Error(err))
		return Principal{}, fmt.Errorf("%w: %v", ErrStoreUnavailable, err)
	case u.Disabled, !now.Before(s.Expires), now.Sub(s.LastSeenAt) > a.opts.SessionIdle:
		return Principal{}, ErrUnauthorized
	}
	if now.Sub(s.LastSeenAt) >= SessionTouchEvery {
		if err := a.opts.Store.TouchSession(ctx, hash, now); err != nil && !errors.Is(err, store.ErrNotFound) {
			// The session is valid; its idle clock is only late.
			a.log.Warn("recording a session's last use failed", zap.Error(err))
		}
	}
	return Principal{UserID: u.ID, UserName: u.Name, Plan: Plan(u.Plan), Kind: KindSession, Profile: profile.Standard,
		TokenHash: hash, ManagementClosed: u.ManagementClosed, Withheld: u.Withheld}, nil
}

// lookupSupport returns the principal of a support token.
func (a *Authenticator) lookupSupport(ctx context.Context, hash string) (Principal, error) {
	t, err := a.opts.Store.SupportToken(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Principal{}, ErrUnauthorized
	case err != nil:
		a.log.Warn("support token lookup failed", zap.Error(err))
		return Principal{}, fmt.Errorf("%w: %v", ErrStoreUnavailable, err)
	case t.Revoked():
		return Principal{}, ErrUnauthorized
	}
	grants := slices.Sorted(slices.Values(t.Grants))
	return Principal{UserID: SupportUserPrefix + TokenID(hash), UserName: t.Name, Kind: KindSupport, TokenHash: hash,
		Grants: slices.Compact(grants)}, nil
}

// cached returns the verdict on the token of hash when one younger than
// CacheTTL is cached. An older one is dropped: the token is looked up
// again.
func (a *Authenticator) cached(hash string, now time.Time) (verdict, bool) {
	if a.opts.CacheTTL <= 0 {
		return verdict{}, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range []*simplelru.LRU[string, verdict]{a.accepted, a.refused} {
		v, hit := c.Get(hash)
		if !hit {
			continue
		}
		if now.Before(v.expires) {
			return v, true
		}
		c.Remove(hash)
	}
	return verdict{}, false
}

// remember caches v, the verdict on the token of hash, in the cache of its
// kind, evicting that cache's least recently used verdict when it is full.
// A verdict of the other kind on the same token is dropped.
func (a *Authenticator) remember(hash string, v verdict) {
	if a.opts.CacheTTL <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	into, other := a.accepted, a.refused
	if !v.ok {
		into, other = a.refused, a.accepted
	}
	other.Remove(hash)
	into.Add(hash, v)
}

// Credentials are a new user's id and first tokens, shown once.
type Credentials struct {
	UserID     string `json:"userId"`
	APIToken   string `json:"apiToken"`
	AgentToken string `json:"agentToken"`
}

// MaxUserName bounds a user's name, in bytes.
const MaxUserName = 100

// CreateUser creates a user with one API token and one agent token.
func CreateUser(ctx context.Context, st store.Store, name string, plan Plan, now time.Time) (Credentials, error) {
	return CreateUserWithLogin(ctx, st, name, plan, "", "", now)
}

// CreateUserWithLogin is CreateUser for a user with an email (normalized
// as store.NormalizeEmail; "" for none) and a password hash (package
// relay/account's; "" for none), all or nothing: store.ErrConflict when
// another user has the email.
func CreateUserWithLogin(ctx context.Context, st store.Store, name string, plan Plan, email, passwordHash string, now time.Time) (Credentials, error) {
	if name == "" || len(name) > MaxUserName {
		return Credentials{}, fmt.Errorf("auth: a user name must have 1 to %d bytes", MaxUserName)
	}
	if _, err := ParsePlan(string(plan)); err != nil {
		return Credentials{}, err
	}
	id, err := NewUserID()
	if err != nil {
		return Credentials{}, err
	}
	apiTok, err := NewToken(KindAPI)
	if err != nil {
		return Credentials{}, err
	}
	agentTok, err := NewToken(KindAgent)
	if err != nil {
		return Credentials{}, err
	}
	now = now.UTC().Truncate(time.Millisecond)
	err = st.CreateUser(ctx, store.User{ID: id, Name: name, Plan: string(plan), CreatedAt: now, Email: email, PasswordHash: passwordHash},
		store.Token{Hash: Hash(apiTok), UserID: id, Kind: string(KindAPI), CreatedAt: now},
		store.Token{Hash: Hash(agentTok), UserID: id, Kind: string(KindAgent), CreatedAt: now})
	if err != nil {
		return Credentials{}, err
	}
	return Credentials{UserID: id, APIToken: apiTok, AgentToken: agentTok}, nil
}

// IssueToken issues another token of the kind to an existing user, with
// the response profile prof (API tokens only; "" is the standard one);
// store.ErrNotFound if there is no such user.
func IssueToken(ctx context.Context, st store.Store, userID string, k Kind, prof profile.Profile, now time.Time) (string, error) {
	return IssueNamedToken(ctx, st, userID, k, prof, "", now)
}

// MaxTokenName bounds a token's name, in characters.
const MaxTokenName = 100

// ErrTokenName refuses a token name that is too long or holds control
// characters.
var ErrTokenName = fmt.Errorf("auth: a token's name has at most %d characters and no control characters", MaxTokenName)

// IssueNamedToken is IssueToken with a name for the token (what the user
// calls it on the dashboard's tokens page; "" for none), trimmed.
// ErrTokenName for a name too long or with control characters.
func IssueNamedToken(ctx context.Context, st store.Store, userID string, k Kind, prof profile.Profile, name string, now time.Time) (string, error) {
	return IssueTokenWith(ctx, st, userID, k, TokenOptions{Profile: prof, Name: name}, now)
}

// TokenOptions are the options of a user's token (IssueTokenWith).
type TokenOptions struct {
	// Profile is an API token's response profile; "" is the standard
	// one. Other kinds take the standard one alone (ErrProfileAPIOnly).
	Profile profile.Profile
	// Name is what the user calls the token (the dashboard's tokens
	// page); "" for none. Trimmed; ErrTokenName for a name too long or
	// with control characters.
	Name string
	// Scope is an API token's scope; "" is ScopeTrade. Other kinds take
	// ScopeTrade or "" alone (ErrScopeAPIOnly).
	Scope Scope
}

// IssueTokenWith issues a token of the kind to an existing user with the
// options o; store.ErrNotFound if there is no such user.
func IssueTokenWith(ctx context.Context, st store.Store, userID string, k Kind, o TokenOptions, now time.Time) (string, error) {
	name := strings.TrimSpace(o.Name)
	if utf8.RuneCountInString(name) > MaxTokenName || !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl) {
		return "", ErrTokenName
	}
	if !k.Valid() {
		return "", fmt.Errorf("auth: unknown token kind %q", k)
	}
	if k == KindSupport {
		return "", ErrSupportTokenNoUser
	}
	prof := o.Profile
	if prof == "" {
		prof = profile.Standard
	}
	if _, err := profile.Parse(string(prof)); err != nil {
		return "", err
	}
	if k != KindAPI && prof != profile.Standard {
		return "", ErrProfileAPIOnly
	}
	scope, err := ParseScope(string(o.Scope))
	if err != nil {
		return "", err
	}
	if k != KindAPI && scope != ScopeTrade {
		return "", ErrScopeAPIOnly
	}
	tok, err := NewToken(k)
	if err != nil {
		return "", err
	}
	err = st.AddToken(ctx, store.Token{Hash: Hash(tok), UserID: userID, Kind: string(k), Profile: string(prof), Name: name,
		Scope: string(scope), CreatedAt: now.UTC()})
	if err != nil {
		return "", err
	}
	return tok, nil
}

// ErrSupportTokenNoUser refuses a support token where a user's token is
// meant: support tokens belong to no user (IssueSupportToken).
var ErrSupportTokenNoUser = errors.New("auth: support tokens belong to no user")

// ErrProfileAPIOnly refuses a response profile for an agent token: only
// API tokens receive trading results.
var ErrProfileAPIOnly = errors.New("auth: response profiles apply to API tokens only")

// ErrScopeAPIOnly refuses a read scope for a token other than an API
// token: an agent's token is kept to its tunnel by its kind.
var ErrScopeAPIOnly = errors.New("auth: scopes apply to API tokens only")

// SetTokenProfile changes the response profile of an API token; a running
// relay applies it within its cache TTL. store.ErrNotFound if the token was
// never issued.
func SetTokenProfile(ctx context.Context, st store.Store, token string, prof profile.Profile) error {
	if _, err := profile.Parse(string(prof)); err != nil || prof == "" {
		return profile.ErrUnknown
	}
	k, ok := ParseKind(token)
	if !ok {
		return fmt.Errorf("auth: malformed token: %w", store.ErrNotFound)
	}
	if k != KindAPI {
		return ErrProfileAPIOnly
	}
	return st.SetTokenProfile(ctx, Hash(token), string(prof))
}

// TokenInfo describes an issued token without revealing it: its kind,
// response profile and scope, when it was issued and revoked, and the
// first 12 hex digits of its hash, which `relay tokens list` shows to tell
// tokens apart.
type TokenInfo struct {
	ID   string `json:"id"`
	Kind Kind   `json:"kind"`
	// Name is what the user called the token; "" when unnamed.
	Name    string `json:"name,omitempty"`
	Profile string `json:"profile,omitempty"`
	// Scope is an API token's scope; "" for other kinds.
	Scope     Scope  `json:"scope,omitempty"`
	CreatedAt string `json:"createdAt"`
	RevokedAt string `json:"revokedAt,omitempty"`
}

// ListTokens describes a user's tokens, oldest first; store.ErrNotFound if
// there is no such user.
func ListTokens(ctx context.Context, st store.Store, userID string) ([]TokenInfo, error) {
	ts, err := st.ListTokens(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]TokenInfo, 0, len(ts))
	for _, t := range ts {
		ti := TokenInfo{ID: TokenID(t.Hash), Kind: Kind(t.Kind), Name: t.Name, CreatedAt: t.CreatedAt.UTC().Format(time.RFC3339)}
		if ti.Kind == KindAPI {
			ti.Profile = t.Profile
			ti.Scope = Scope(t.Scope)
			if ti.Scope == "" {
				ti.Scope = ScopeTrade
			}
		}
		if t.Revoked() {
			ti.RevokedAt = t.RevokedAt.UTC().Format(time.RFC3339)
		}
		out = append(out, ti)
	}
	return out, nil
}

// RevokeToken revokes a token of any kind, support tokens included (a
// session is ended); store.ErrNotFound if it was never issued. A running
// relay stops accepting it within its cache TTL (a session at once).
func RevokeToken(ctx context.Context, st store.Store, token string, now time.Time) error {
	k, ok := ParseKind(token)
	if !ok {
		return fmt.Errorf("auth: malformed token: %w", store.ErrNotFound)
	}
	switch k {
	case KindSupport:
		return st.RevokeSupportToken(ctx, Hash(token), now.UTC())
	case KindSession:
		if _, _, err := st.LookupSession(ctx, Hash(token)); err != nil {
			return err
		}
		return st.DeleteSession(ctx, Hash(token))
	}
	return st.RevokeToken(ctx, Hash(token), now.UTC())
}

// ErrNoSuchToken refuses RevokeUserToken an id that is none of the
// user's tokens: it matches store.ErrNotFound too, and says nothing of
// whose the id might be.
var ErrNoSuchToken = fmt.Errorf("auth: no such token: %w", store.ErrNotFound)

// RevokeUserToken revokes the user's token whose id (TokenID) is id;
// revoking a revoked token changes nothing. ErrNoSuchToken when the user
// has no token of that id (another user's token included), or the user
// does not exist. A running relay stops accepting it within its cache
// TTL.
func RevokeUserToken(ctx context.Context, st store.Store, userID, id string, now time.Time) error {
	if len(id) != 12 {
		return ErrNoSuchToken
	}
	ts, err := st.ListTokens(ctx, userID)
	if errors.Is(err, store.ErrNotFound) {
		return ErrNoSuchToken
	}
	if err != nil {
		return err
	}
	for _, t := range ts {
		if TokenID(t.Hash) == id {
			return st.RevokeToken(ctx, t.Hash, now.UTC())
		}
	}
	return ErrNoSuchToken
}

// RevokeUserTokens revokes a user's valid tokens of the kind (all kinds when
// k is empty) and returns how many it revoked.
func RevokeUserTokens(ctx context.Context, st store.Store, userID string, k Kind, now time.Time) (int, error) {
	if k != "" && !k.Valid() {
		return 0, fmt.Errorf("auth: unknown token kind %q", k)
	}
	if k == KindSupport {
		return 0, ErrSupportTokenNoUser
	}
	return st.RevokeUserTokens(ctx, userID, string(k), now.UTC())
}

// NewUserID returns a fresh random user id: "usr_" and 9 random bytes in
// unpadded base64url.
func NewUserID() (string, error) {
	var b [9]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("auth: random: %w", err)
	}
	return "usr_" + base64.RawURLEncoding.EncodeToString(b[:]), nil
}
