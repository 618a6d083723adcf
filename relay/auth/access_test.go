package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/auth"
	"tradebridge/relay/store"
)

// The Management API's access settings of a user reach the principal from
// the user's row, and a change takes effect once the cached verdict
// expires.
func TestPrincipalManagementAccess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	now := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	a, err := auth.New(auth.Options{Store: st, CacheTTL: 2 * time.Second, Now: func() time.Time { return now }})
	require.NoError(t, err)
	creds, err := auth.CreateUser(ctx, st, "alice", auth.PlanElite, now)
	require.NoError(t, err)

	p, err := a.Authenticate(ctx, creds.APIToken, auth.KindAPI)
	require.NoError(t, err)
	require.False(t, p.ManagementClosed, "open by default")
	require.Nil(t, p.Withheld)
	require.False(t, p.Withholds("tv"))

	require.NoError(t, auth.SetUserAccess(ctx, st, creds.UserID, true, []string{"tv", "copier", "tv"}))
	u, err := st.User(ctx, creds.UserID)
	require.NoError(t, err)
	require.Equal(t, []string{"copier", "tv"}, u.Withheld, "stored sorted, each once")

	p, err = a.Authenticate(ctx, creds.APIToken, auth.KindAPI)
	require.NoError(t, err)
	require.False(t, p.ManagementClosed, "the cached verdict holds within the TTL")
	now = now.Add(2 * time.Second)
	p, err = a.Authenticate(ctx, creds.APIToken, auth.KindAPI)
	require.NoError(t, err)
	require.True(t, p.ManagementClosed)
	require.Equal(t, []string{"copier", "tv"}, p.Withheld)
	for _, tc := range []struct {
		feature string
		want    bool
	}{{"tv", true}, {"copier", true}, {"desktop", false}, {"monitor", false}, {"", false}} {
		require.Equal(t, tc.want, p.Withholds(tc.feature), tc.feature)
	}

	agent, err := a.Authenticate(ctx, creds.AgentToken, auth.KindAgent)
	require.NoError(t, err)
	require.True(t, agent.ManagementClosed, "every token of the user carries it")

	require.NoError(t, auth.SetUserAccess(ctx, st, creds.UserID, false, nil))
	now = now.Add(2 * time.Second)
	p, err = a.Authenticate(ctx, creds.APIToken, auth.KindAPI)
	require.NoError(t, err)
	require.False(t, p.ManagementClosed)
	require.Nil(t, p.Withheld)
}

func TestSetUserAccessRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore(t)
	creds, err := auth.CreateUser(ctx, st, "alice", auth.PlanElite, time.Now())
	require.NoError(t, err)
	for _, fs := range [][]string{{"gold"}, {"tv", "Copier"}, {""}} {
		require.ErrorIs(t, auth.SetUserAccess(ctx, st, creds.UserID, false, fs), auth.ErrUnknownFeature, fs)
	}
	require.NoError(t, auth.SetUserAccess(ctx, st, creds.UserID, false, auth.Features), "every feature may be withheld")
	require.ErrorIs(t, auth.SetUserAccess(ctx, st, "usr_nobody", false, nil), store.ErrNotFound)
}
