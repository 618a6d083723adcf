package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/broker"
	"tradebridge/relay/sealed"
	"tradebridge/relay/store"
)

var linkT0 = time.Date(2026, 11, 2, 14, 30, 0, 0, time.UTC)

// linkClock is a clock that moves one second per reading.
type linkClock struct{ n atomic.Int64 }

func (c *linkClock) now() time.Time { return linkT0.Add(time.Duration(c.n.Add(1)) * time.Second) }

// linkStore opens a store in a temporary directory with the users.
func linkStore(t *testing.T, users ...string) *store.SQLite {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	for _, u := range users {
		require.NoError(t, st.CreateUser(context.Background(), store.User{ID: u, Name: u, Plan: "elite", CreatedAt: linkT0}))
	}
	return st
}

// keyLine returns a key file line with a fresh key.
func keyLine(t *testing.T, id string) string {
	t.Helper()
	line, err := sealed.NewKeyLine(id)
	require.NoError(t, err)
	return line
}

// parseKeys returns the ring of the key file lines.
func parseKeys(t *testing.T, lines ...string) *sealed.Keyring {
	t.Helper()
	k, err := sealed.Parse([]byte(strings.Join(lines, "\n")))
	require.NoError(t, err)
	return k
}

// keyring returns a ring of fresh keys.
func keyring(t *testing.T, ids ...string) *sealed.Keyring {
	t.Helper()
	var lines []string
	for _, id := range ids {
		lines = append(lines, keyLine(t, id))
	}
	return parseKeys(t, lines...)
}

func newLinks(t *testing.T, db broker.LinkDB, keys *sealed.Keyring) (*broker.Links, *linkClock) {
	t.Helper()
	c := &linkClock{}
	l, err := broker.NewLinks(broker.LinkOptions{Store: db, Keys: keys, Now: c.now})
	require.NoError(t, err)
	return l, c
}

// apiKeySecrets are a complete API-key login.
func apiKeySecrets() broker.Secrets {
	return broker.Secrets{Username: "dana", Password: "pw-hunter2", AppID: "tradebridge", AppVersion: "1.0",
		CID: 8, Sec: "sec-f00dfeed"}
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNewLinksValidates(t *testing.T) {
	t.Parallel()
	_, err := broker.NewLinks(broker.LinkOptions{Keys: keyring(t, "k1")})
	require.Error(t, err)
	_, err = broker.NewLinks(broker.LinkOptions{Store: linkStore(t)})
	require.Error(t, err)
}

// A link is stored sealed, read back opened, with a device id made for
// it; the store holds none of its secrets in clear.
func TestLinkPutGet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := linkStore(t, "u1")
	l, _ := newLinks(t, st, keyring(t, "k1"))

	_, err := l.Get(ctx, "u1")
	require.ErrorIs(t, err, broker.ErrNotLinked)

	put, err := l.Put(ctx, "u1", broker.EnvDemo, broker.MethodAPIKey, apiKeySecrets())
	require.NoError(t, err)
	require.Regexp(t, uuidV4, put.Secrets.DeviceID)
	want := apiKeySecrets()
	want.DeviceID = put.Secrets.DeviceID
	require.Equal(t, broker.Link{UserID: "u1", Env: "demo", Method: "apikey", Secrets: want,
		LinkedAt: linkT0.Add(time.Second), UpdatedAt: linkT0.Add(time.Second)}, put)

	got, err := l.Get(ctx, "u1")
	require.NoError(t, err)
	require.Equal(t, put, got)

	stored, err := st.BrokerLink(ctx, "u1")
	require.NoError(t, err)
	require.Equal(t, "k1", keyring(t, "x").SealedWith(stored.Sealed))
	for _, secret := range []string{"dana", "pw-hunter2", "sec-f00dfeed", "tradebridge", put.Secrets.DeviceID} {
		require.NotContains(t, stored.Sealed, secret)
	}

	// A device id given is kept.
	s := apiKeySecrets()
	s.DeviceID = "my-device"
	put, err = l.Put(ctx, "u1", broker.EnvDemo, broker.MethodAPIKey, s)
	require.NoError(t, err)
	require.Equal(t, "my-device", put.Secrets.DeviceID)

	_, err = l.Put(ctx, "nobody", broker.EnvDemo, broker.MethodAPIKey, apiKeySecrets())
	require.ErrorIs(t, err, store.ErrNotFound)
}

// What Put refuses, named by field, never repeating a value; nothing is
// stored.
func TestLinkValidation(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 4097)
	with := func(f func(*broker.Secrets)) broker.Secrets {
		s := apiKeySecrets()
		f(&s)
		return s
	}
	oauth := broker.Secrets{AccessToken: "tok-secret", Expires: linkT0.Add(time.Hour)}
	for _, tc := range []struct {
		name         string
		user         string
		env, method  string
		secrets      broker.Secrets
		fields       []string
		wantAccepted bool
	}{
		{"complete API key", "u1", "demo", "apikey", apiKeySecrets(), nil, true},
		{"complete OAuth", "u1", "live", "oauth", oauth, nil, true},
		{"no user", "", "demo", "apikey", apiKeySecrets(), []string{"userId"}, false},
		{"unknown env", "u1", "paper", "apikey", apiKeySecrets(), []string{"env"}, false},
		{"unknown method", "u1", "demo", "password", apiKeySecrets(), []string{"method"}, false},
		{"empty API key", "u1", "demo", "apikey", broker.Secrets{},
			[]string{"username", "password", "appId", "appVersion", "cid", "sec"}, false},
		{"no password", "u1", "demo", "apikey", with(func(s *broker.Secrets) { s.Password = "" }), []string{"password"}, false},
		{"negative cid", "u1", "demo", "apikey", with(func(s *broker.Secrets) { s.CID = -1 }), []string{"cid"}, false},
		{"long sec", "u1", "demo", "apikey", with(func(s *broker.Secrets) { s.Sec = long }), []string{"sec"}, false},
		{"long device id", "u1", "demo", "apikey", with(func(s *broker.Secrets) { s.DeviceID = long }), []string{"deviceId"}, false},
		{"OAuth without token", "u1", "demo", "oauth", broker.Secrets{Expires: linkT0}, []string{"accessToken"}, false},
		{"OAuth without expiry", "u1", "demo", "oauth", broker.Secrets{AccessToken: "tok-secret"}, []string{"expires"}, false},
		{"negative broker user", "u1", "demo", "oauth", broker.Secrets{AccessToken: "tok-secret", Expires: linkT0, BrokerUserID: -1},
			[]string{"brokerUserId"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := linkStore(t, "u1")
			l, _ := newLinks(t, st, keyring(t, "k1"))
			_, err := l.Put(ctx, tc.user, tc.env, tc.method, tc.secrets)
			if tc.wantAccepted {
				require.NoError(t, err)
				return
			}
			var verr *broker.ValidationError
			require.ErrorAs(t, err, &verr)
			require.Equal(t, tc.fields, verr.Fields)
			for _, v := range []string{"pw-hunter2", "sec-f00dfeed", "tok-secret", "paper", long} {
				require.NotContains(t, err.Error(), v)
			}
			_, err = st.BrokerLink(ctx, "u1")
			require.ErrorIs(t, err, store.ErrNotFound, "nothing stored")
		})
	}
}

// A relink replaces the secrets whole (the old session is gone) and keeps
// the device id only for the same login.
func TestRelink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := linkStore(t, "u1")
	l, _ := newLinks(t, st, keyring(t, "k1"))
	first, err := l.Put(ctx, "u1", broker.EnvDemo, broker.MethodAPIKey, apiKeySecrets())
	require.NoError(t, err)
	require.NoError(t, l.SaveSession(ctx, "u1", "acc-1", "md-1", linkT0.Add(time.Hour), 42))

	s := apiKeySecrets()
	s.Password = "new-password"
	again, err := l.Put(ctx, "u1", broker.EnvDemo, broker.MethodAPIKey, s)
	require.NoError(t, err)
	require.Equal(t, first.Secrets.DeviceID, again.Secrets.DeviceID, "the same login keeps its device id")
	got, err := l.Get(ctx, "u1")
	require.NoError(t, err)
	require.Equal(t, "new-password", got.Secrets.Password)
	require.Empty(t, got.Secrets.AccessToken, "the old session is gone")
	require.Zero(t, got.Secrets.BrokerUserID)
	require.True(t, got.LinkedAt.After(first.LinkedAt))

	for _, tc := range []struct {
		name, env, username string
	}{
		{"another environment", broker.EnvLive, "dana"},
		{"another username", broker.EnvDemo, "erin"},
	} {
		s := apiKeySecrets()
		s.Username = tc.username
		other, err := l.Put(ctx, "u1", tc.env, broker.MethodAPIKey, s)
		require.NoError(t, err)
		require.NotEqual(t, first.Secrets.DeviceID, other.Secrets.DeviceID, tc.name)
		require.Regexp(t, uuidV4, other.Secrets.DeviceID)
		// Back to the first login for the next case: a new device id.
		_, err = l.Put(ctx, "u1", broker.EnvDemo, broker.MethodAPIKey, apiKeySecrets())
		require.NoError(t, err)
	}
}

// SaveSession keeps the session with the secrets and leaves the login
// as it was.
func TestSaveSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := linkStore(t, "u1")
	l, _ := newLinks(t, st, keyring(t, "k1"))
	require.ErrorIs(t, l.SaveSession(ctx, "u1", "acc", "md", linkT0, 1), broker.ErrNotLinked)
	put, err := l.Put(ctx, "u1", broker.EnvDemo, broker.MethodAPIKey, apiKeySecrets())
	require.NoError(t, err)

	expires := time.Date(2026, 11, 2, 16, 0, 0, 123456789, time.UTC)
	require.NoError(t, l.SaveSession(ctx, "u1", "acc-secret", "md-secret", expires, 42))
	got, err := l.Get(ctx, "u1")
	require.NoError(t, err)
	want := put.Secrets
	want.AccessToken, want.MDAccessToken, want.Expires, want.BrokerUserID = "acc-secret", "md-secret", expires, 42
	require.Equal(t, want, got.Secrets)
	require.Equal(t, put.LinkedAt, got.LinkedAt)
	require.True(t, got.UpdatedAt.After(put.UpdatedAt))
	stored, err := st.BrokerLink(ctx, "u1")
	require.NoError(t, err)
	require.NotContains(t, stored.Sealed, "acc-secret")
}

// interferingDB runs change once, just before the first SwapBrokerSealed,
// as another relay process would.
type interferingDB struct {
	broker.LinkDB
	once   sync.Once
	change func()
}

func (d *interferingDB) SwapBrokerSealed(ctx context.Context, userID, old, sealed string, at time.Time) error {
	d.once.Do(d.change)
	return d.LinkDB.SwapBrokerSealed(ctx, userID, old, sealed, at)
}

// A session saved while the link changes neither undoes the change nor
// lands on a login it does not belong to.
func TestSaveSessionRacesAChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("a relink wins and keeps no session", func(t *testing.T) {
		t.Parallel()
		st := linkStore(t, "u1")
		keys := keyring(t, "k1")
		other, _ := newLinks(t, st, keys)
		db := &interferingDB{LinkDB: st}
		relinked := apiKeySecrets()
		relinked.Password = "relinked"
		db.change = func() {
			_, err := other.Put(ctx, "u1", broker.EnvDemo, broker.MethodAPIKey, relinked)
			require.NoError(t, err)
		}
		l, _ := newLinks(t, db, keys)
		_, err := l.Put(ctx, "u1", broker.EnvDemo, broker.MethodAPIKey, apiKeySecrets())
		require.NoError(t, err)

		require.NoError(t, l.SaveSession(ctx, "u1", "acc-old-login", "md", linkT0, 1))
		got, err := l.Get(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, "relinked", got.Secrets.Password, "the relink stays")
		require.Empty(t, got.Secrets.AccessToken, "the old login's session is not saved on the new one")
	})

	t.Run("a concurrent session save is not undone", func(t *testing.T) {
		t.Parallel()
		st := linkStore(t, "u1")
		keys := keyring(t, "k1")
		other, _ := newLinks(t, st, keys)
		db := &interferingDB{LinkDB: st}
		db.change = func() {
			require.NoError(t, other.SaveSession(ctx, "u1", "acc-other", "md-other", linkT0, 7))
		}
		l, _ := newLinks(t, db, keys)
		put, err := l.Put(ctx, "u1", broker.EnvDemo, broker.MethodAPIKey, apiKeySecrets())
		require.NoError(t, err)

		require.NoError(t, l.SaveSession(ctx, "u1", "acc-mine", "md-mine", linkT0.Add(time.Hour), 42))
		got, err := l.Get(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, "acc-mine", got.Secrets.AccessToken, "the later save is applied over the change")
		require.Equal(t, put.Secrets.Password, got.Secrets.Password)
	})

	t.Run("many at once", func(t *testing.T) {
		t.Parallel()
		st := linkStore(t, "u1")
		l, _ := newLinks(t, st, keyring(t, "k1"))
		_, err := l.Put(ctx, "u1", broker.EnvDemo, broker.MethodAPIKey, apiKeySecrets())
		require.NoError(t, err)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() { errs[i] = l.SaveSession(ctx, "u1", fmt.Sprintf("acc-%d", i), "md", linkT0, int64(i)) })
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		got, err := l.Get(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("acc-%d", got.Secrets.BrokerUserID), got.Secrets.AccessToken, "one save, whole")
		require.Equal(t, "pw-hunter2", got.Secrets.Password)
	})
}

// Sealed secrets are bound to their user and environment: copied to
// another link they do not open.
func TestLinkSecretsAreBoundToTheirPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := linkStore(t, "u1", "u2")
	l, _ := newLinks(t, st, keyring(t, "k1"))
	_, err := l.Put(ctx, "u1", broker.EnvDemo, broker.MethodAPIKey, apiKeySecrets())
	require.NoError(t, err)
	u1, err := st.BrokerLink(ctx, "u1")
	require.NoError(t, err)

	for _, moved := range []store.BrokerLink{
		{UserID: "u2", Env: "demo", Method: "apikey", Sealed: u1.Sealed, LinkedAt: linkT0, UpdatedAt: linkT0},
		{UserID: "u1", Env: "live", Method: "apikey", Sealed: u1.Sealed, LinkedAt: linkT0, UpdatedAt: linkT0},
	} {
		require.NoError(t, st.PutBrokerLink(ctx, moved))
		_, err := l.Get(ctx, moved.UserID)
		require.ErrorIs(t, err, sealed.ErrTampered, moved)
		require.NotContains(t, err.Error(), "hunter2")
	}
}

// Rekey re-seals with the primary key what older keys sealed, and
// reports by user id the links it cannot open.
func TestRekey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := linkStore(t, "u1", "u2", "u3")
	k1, k2, lost := keyLine(t, "k1"), keyLine(t, "k2"), keyLine(t, "lost")
	before, _ := newLinks(t, st, parseKeys(t, k1))
	for _, u := range []string{"u1", "u2"} {
		_, err := before.Put(ctx, u, broker.EnvDemo, broker.MethodAPIKey, apiKeySecrets())
		require.NoError(t, err)
	}
	want, err := before.Get(ctx, "u1")
	require.NoError(t, err)

	rotated, _ := newLinks(t, st, parseKeys(t, k2, k1))
	n, err := rotated.Rekey(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = rotated.Rekey(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left to re-seal")

	retired, _ := newLinks(t, st, parseKeys(t, k2))
	got, err := retired.Get(ctx, "u1")
	require.NoError(t, err, "the old key is no longer needed")
	require.Equal(t, want.Secrets, got.Secrets)
	require.Equal(t, want.LinkedAt, got.LinkedAt)
	_, err = before.Get(ctx, "u2")
	require.ErrorIs(t, err, sealed.ErrUnknownKey, "re-sealed with k2")

	// A link sealed with a key the file lost is reported; the others are
	// re-sealed all the same.
	gone, _ := newLinks(t, st, parseKeys(t, lost))
	_, err = gone.Put(ctx, "u3", broker.EnvDemo, broker.MethodAPIKey, apiKeySecrets())
	require.NoError(t, err)
	back, _ := newLinks(t, st, parseKeys(t, k1, k2))
	n, err = back.Rekey(ctx)
	require.ErrorIs(t, err, sealed.ErrUnknownKey)
	require.ErrorContains(t, err, "user u3")
	require.Equal(t, 2, n)
	for _, u := range []string{"u1", "u2"} {
		_, err := before.Get(ctx, u)
		require.NoError(t, err, "back on k1")
	}
}

// Rekey never undoes a session saved meanwhile.
func TestRekeyRacesASessionSave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := linkStore(t, "u1")
	k1, k2 := keyLine(t, "k1"), keyLine(t, "k2")
	before, _ := newLinks(t, st, parseKeys(t, k1))
	_, err := before.Put(ctx, "u1", broker.EnvDemo, broker.MethodAPIKey, apiKeySecrets())
	require.NoError(t, err)

	db := &interferingDB{LinkDB: st}
	db.change = func() { require.NoError(t, before.SaveSession(ctx, "u1", "acc-new", "md", linkT0, 1)) }
	rotated, _ := newLinks(t, db, parseKeys(t, k2, k1))
	n, err := rotated.Rekey(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	got, err := rotated.Get(ctx, "u1")
	require.NoError(t, err)
	require.Equal(t, "acc-new", got.Secrets.AccessToken, "the session saved meanwhile stays")
	stored, err := st.BrokerLink(ctx, "u1")
	require.NoError(t, err)
	require.Equal(t, "k2", parseKeys(t, k2).SealedWith(stored.Sealed))
}

// Secrets print and encode as nothing.
func TestSecretsAreRedacted(t *testing.T) {
	t.Parallel()
	s := apiKeySecrets()
	s.AccessToken = "acc-secret"
	link := broker.Link{UserID: "u1", Env: "demo", Method: "apikey", Secrets: s}
	b, err := json.Marshal(link)
	require.NoError(t, err)
	for _, out := range []string{
		fmt.Sprintf("%v", s), fmt.Sprintf("%+v", s), fmt.Sprintf("%#v", s), s.String(),
		fmt.Sprintf("%v", link), fmt.Sprintf("%+v", link), fmt.Sprintf("%#v", link), string(b),
	} {
		for _, secret := range []string{"pw-hunter2", "sec-f00dfeed", "acc-secret"} {
			require.NotContains(t, out, secret)
		}
	}
}
