package authtest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/auth/authtest"
	"tradebridge/relay/hub"
	"tradebridge/relay/stream"
	"tradebridge/relay/tradeapi"
)

// Auth serves every package that consumes an authenticator.
var (
	_ admit.Authenticator    = (*authtest.Auth)(nil)
	_ hub.Authenticator      = (*authtest.Auth)(nil)
	_ stream.Authenticator   = (*authtest.Auth)(nil)
	_ tradeapi.Authenticator = (*authtest.Auth)(nil)
)

func TestAuth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := auth.Principal{UserID: "usr_alice", Plan: auth.PlanPro, Kind: auth.KindAPI}
	a := authtest.New(map[string]auth.Principal{"api": alice})

	p, err := a.Authenticate(ctx, "api", auth.KindAPI)
	require.NoError(t, err)
	require.Equal(t, alice, p)
	_, err = a.Authenticate(ctx, "api", auth.KindAgent)
	require.ErrorIs(t, err, auth.ErrUnauthorized, "the wrong kind")
	_, err = a.Authenticate(ctx, "nonsense", auth.KindAPI)
	require.ErrorIs(t, err, auth.ErrUnauthorized)

	a.Add("agent", auth.Principal{UserID: "usr_alice", Kind: auth.KindAgent})
	_, err = a.Authenticate(ctx, "agent", auth.KindAgent)
	require.NoError(t, err)
	a.Revoke("api")
	_, err = a.Authenticate(ctx, "api", auth.KindAPI)
	require.ErrorIs(t, err, auth.ErrUnauthorized, "revoked")

	down := errors.New("store down")
	a.Fail("broken", down)
	_, err = a.Authenticate(ctx, "broken", auth.KindAPI)
	require.ErrorIs(t, err, down)
	require.Equal(t, 6, a.Calls())
}
