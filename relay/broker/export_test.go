package broker

import (
	"net/http"

	"tradebridge/protocol"
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

// MonitorStatus is the user's monitors as the engine running here runs
// them, for the tests; nil when the user's instance does not run here.
func (m *Manager) MonitorStatus(userID string) []protocol.MonitorStatus {
	in := m.running(userID)
	if in == nil {
		return nil
	}
	return in.stack.Monitors.Status()
}
