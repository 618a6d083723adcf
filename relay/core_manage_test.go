package relay_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/relay"
	"tradebridge/relay/errcode"
	"tradebridge/relay/manage"
)

// The Management API's paths on the relay: an unknown path under the
// prefix is 404 not_found, a wrong method 405 method_not_allowed with
// Allow, both before any token is looked at.
func TestManageRoutesNotFoundAndNotAllowed(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	for _, tc := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodGet, "/v1/api/manage/desktop/nothing", 404, ""},
		{http.MethodGet, "/v1/api/manage/", 404, ""},
		{http.MethodGet, "/v1/api/manage/desktop/copiers/cop_00000000000000000000/stop", 404, ""},
		{http.MethodPost, "/v1/api/manage/desktop/copiers/cop_00000000000000000000/restart", 404, ""},
		{http.MethodDelete, "/v1/api/manage/controls", 405, "GET, PATCH"},
		{http.MethodPost, "/v1/api/manage/desktop/copiers/cop_00000000000000000000", 405, "GET, PATCH, DELETE"},
		{http.MethodGet, "/v1/api/manage/controls/kill-switch", 405, "PUT"},
		{http.MethodPut, "/v1/api/manage/desktop/copiers", 405, "GET, POST"},
		{http.MethodDelete, "/v1/api/manage/news-lockout", 405, "GET, PUT, PATCH"},
		{http.MethodGet, "/v1/api/manage/desktop/monitors/mon_00000000000000000000/restart", 405, "POST"},
		{http.MethodPost, "/v1/api/manage", 405, "GET"},
	} {
		r := s.Do(tc.method, tc.path, "", "")
		require.Equal(t, tc.status, r.Status, "%s %s: %s", tc.method, tc.path, r.Raw)
		if tc.status == 404 {
			require.Equal(t, errcode.NotFound, r.Error)
			continue
		}
		require.Equal(t, errcode.MethodNotAllowed, r.Error)
		require.Equal(t, tc.allow, r.Header.Get("Allow"), tc.path)
	}
}

// The Management API through the real relay, store, tunnel and agent:
// an elite user's change is stored and applied by the agent; a pro
// user's is refused; the trading budget is not touched.
func TestManageEndToEnd(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ra := s.StartAgent("bob")
	tok := s.Users["bob"].APIToken

	r := s.Do(http.MethodGet, "/v1/api/manage", tok, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = s.Do(http.MethodGet, "/v1/api/manage/controls", s.Users["alice"].APIToken, "")
	require.Equal(t, http.StatusForbidden, r.Status)
	require.Equal(t, errcode.EliteRequired, r.Error)

	r = s.Do(http.MethodPatch, "/v1/api/manage/controls", tok, `{"flattenOnKill":true}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, `"1"`, r.Header.Get("ETag"))
	cfg := ra.Agent.Config().Current()
	require.NotNil(t, cfg, "the agent applied the configuration before the answer")
	require.True(t, cfg.Controls.FlattenOnKill)

	r = s.Do(http.MethodPost, "/v1/api/manage/desktop/monitors", tok, `{"account":"Sim101","lossLimit":{"enabled":true,"amount":500}}`,
		"Content-Type", "application/json")
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	var m protocol.Monitor
	require.NoError(t, json.Unmarshal(r.Data, &m))
	require.Len(t, ra.Agent.Config().Current().Monitors, 1)

	r = s.Do(http.MethodPost, "/v1/api/manage/desktop/monitors/"+m.ID+"/restart", tok, "")
	require.Equal(t, http.StatusConflict, r.Status)
	require.Equal(t, errcode.MonitorNotStopped, r.Error)

	r = s.Do(http.MethodPut, "/v1/api/manage/controls/kill-switch", tok, `{"enabled":true}`, "Content-Type", "application/json")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.True(t, ra.Agent.Config().Current().Controls.KillSwitch)

	// A new agent process gets the configuration on connect.
	ra.Stop()
	ra2 := s.StartAgent("bob")
	require.Eventually(t, func() bool {
		c := ra2.Agent.Config().Current()
		return c != nil && c.Controls.KillSwitch && len(c.Monitors) == 1
	}, testkit.Medium, testkit.Tick)

	// The new agent's platform reported its connections (on the
	// NinjaTrader bridge they come after the handshake, which may carry
	// none yet).
	require.Eventually(t, func() bool {
		names, ok := s.shownConnections(tok)
		return ok && len(names) > 0
	}, testkit.Medium, 200*time.Millisecond)

	// With the agent gone, changes that need it are refused; reads work.
	ra2.Stop()
	// Wait until the relay saw the tunnel go (a trading read answers 408
	// at once then), without spending the management budgets.
	require.Eventually(t, func() bool {
		r, err := s.Request(http.MethodGet, "/v1/api/accounts", tok, "")
		return err == nil && r.Error == errcode.AddonDisconnected
	}, testkit.Long, testkit.Tick, "the relay sees the agent gone")
	r = s.Do(http.MethodPatch, "/v1/api/manage/controls", tok, `{"blockAllSignals":true}`, "Content-Type", "application/json")
	require.Equal(t, errcode.AddonDisconnected, r.Error, "the last answer: %d %s", r.Status, r.Raw)
	// The agent's last report is stored from the user's queue of the
	// event spine, moments after it came.
	require.Eventually(t, func() bool {
		ms, err := s.Store.ManagedState(t.Context(), s.Users["bob"].UserID)
		return err == nil && strings.Contains(string(ms.Connections), "Sim101")
	}, testkit.Medium, testkit.Tick, "the relay stored the connections the agent last reported")
	r = s.Do(http.MethodGet, "/v1/api/manage/desktop/connection-settings", tok, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Contains(t, string(r.Data), "Sim101", "the connections the agent last reported")
}

// The service modes on the operator's listener: PUT changes them live
// for the public routes, GET reads them.
func TestManageModesOnOperatorListener(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	modes, err := manage.NewModes(manage.ModeState{})
	require.NoError(t, err)
	r, err := relay.New(relay.Options{Store: s.Store, Manage: manage.Options{Modes: modes}})
	require.NoError(t, err)
	defer r.Close()
	op := func(method, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, manage.OperatorModesPath, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		w := httptest.NewRecorder()
		r.OperatorHandler().ServeHTTP(w, req)
		return w
	}
	w := op(http.MethodPut, `{"management":"read_only","families":{"tv":"unavailable"}}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, manage.ModeReadOnly, modes.Get().Management)
	w = op(http.MethodGet, "")
	require.JSONEq(t, `{"success":true,"data":{"management":"read_only","families":{"desktop":"normal","tv":"unavailable"}}}`, w.Body.String())
	require.Equal(t, http.StatusMethodNotAllowed, op(http.MethodDelete, "").Code)

	req := httptest.NewRequest(http.MethodPatch, "/v1/api/manage/controls", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+s.Users["bob"].APIToken)
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = "192.0.2.7:1"
	pw := httptest.NewRecorder()
	r.Handler().ServeHTTP(pw, req)
	require.Equal(t, http.StatusServiceUnavailable, pw.Code, pw.Body.String())
	require.Contains(t, pw.Body.String(), errcode.ManagementReadOnly)
}
