package browser_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/systemtest"
	"tradebridge/relay"
	"tradebridge/relay/account"
)

// openSignup opens sign-up on the relay (relay serve --signup open), with
// passwords hashed cheaply: the tests sign in often, under the race
// detector.
func openSignup(o *relay.Options) {
	o.Account.Signup = account.SignupOpen
	o.Account.Argon2 = account.Argon2Params{Memory: 1024, Time: 1, Threads: 1}
}

// setPassword gives systemtest's user an email and a password, as relay
// users add --email --password-stdin does, and returns them.
func setPassword(t *testing.T, s *systemtest.System, user string) (email, password string) {
	t.Helper()
	email, password = user+"@example.com", "the passphrase of "+user
	id := s.Users[user].UserID
	require.NoError(t, s.Relay().Account().SetEmail(context.Background(), id, email))
	require.NoError(t, s.Relay().Account().SetPassword(context.Background(), id, password))
	return email, password
}
