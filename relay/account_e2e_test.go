package relay_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay"
	"tradebridge/relay/account"
)

// The relay builds the traders' accounts with its options: sign-up as
// relay serve --signup says, reset mails only with the alerts' SMTP
// server, sessions in the relay's store.
func TestRelayAccounts(t *testing.T) {
	t.Parallel()
	s := newSystemWith(t, func(o *relay.Options) {
		o.Account.Signup = account.SignupOpen
		o.Account.Argon2 = account.Argon2Params{Memory: 64, Time: 1, Threads: 1}
	})
	a := s.Relay().Account()
	require.Equal(t, account.SignupOpen, a.Signup())
	require.False(t, a.ResetByEmail(), "no --smtp-url")
	ctx := context.Background()
	sess, err := a.SignUp(ctx, "trader@example.com", "a long password", "192.0.2.1")
	require.NoError(t, err)
	u, err := s.Store.User(ctx, sess.UserID)
	require.NoError(t, err)
	require.Equal(t, "trader@example.com", u.Email)
	_, err = a.SignIn(ctx, "trader@example.com", "a long password", "192.0.2.1")
	require.NoError(t, err)
	require.ErrorIs(t, a.RequestReset(ctx, "trader@example.com", "192.0.2.1", "http://127.0.0.1"), account.ErrResetUnavailable)
}
