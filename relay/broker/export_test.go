package broker

import (
	"net/http"

	"tradebridge/relay/auth"
)

// ServeOAuthStart and ServeOAuthCallback expose the OAuth link's handlers
// to the tests, without the admission Register puts before them.
func (m *Manager) ServeOAuthStart(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	m.serveOAuthStart(w, r, p)
}

func (m *Manager) ServeOAuthCallback(w http.ResponseWriter, r *http.Request) {
	m.serveOAuthCallback(w, r)
}

// OAuthStateHash is oauthStateHash, for the tests.
func OAuthStateHash(state string) string { return oauthStateHash(state) }

// FnPrefix is fnPrefix, for the tests.
const FnPrefix = fnPrefix
