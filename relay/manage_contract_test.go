package relay_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/relay"
	"tradebridge/relay/manage"
)

// The Management API's OpenAPI document against its handlers, through the
// real relay, store, tunnel, agent and broker engines: the document is
// served without a token; every route it lists is called, each with its
// documented example body where it has one; every request, status,
// header and body is validated with kin-openapi (an error's code must be
// one its status lists); and every route the document lists was called.
func TestManageContractEndToEnd(t *testing.T) {
	t.Parallel()
	// The Management API's budgets run on a clock each call moves a
	// minute on, so that calling every route stays within them.
	var clock atomic.Int64
	s := newBrokerSystem(t, func(o *relay.Options) { o.Manage.Now = clock.Load })
	s.StartAgent("bob")
	tok := s.Users["bob"].APIToken
	require.Equal(t, http.StatusOK, s.link(tok).Status)
	served := s.Do(http.MethodGet, manage.OpenAPIPath, "", "")
	require.Equal(t, http.StatusOK, served.Status, "served without a token")
	require.Equal(t, "application/json", served.Header.Get("Content-Type"))
	require.Equal(t, "public, max-age=300", served.Header.Get("Cache-Control"))
	c := loadContract(t, s.system, manage.OpenAPIPath)

	covered := map[string]bool{}
	call := func(token, method, path, body string, want int, header ...string) exchange {
		t.Helper()
		clock.Add(int64(time.Minute))
		if body != "" {
			header = append(header, "Content-Type", jsonBody)
		}
		ex := c.check(t, s.system, token, method, manage.Prefix+path, body, header...)
		require.Equal(t, want, ex.status, "%s %s: %s", method, path, ex.raw)
		covered[ex.route] = true
		return ex
	}
	example := func(schema string) string {
		t.Helper()
		ref := c.doc.Components.Schemas[schema]
		require.NotNil(t, ref, schema)
		require.NotEmpty(t, ref.Value.Examples, "%s has an example", schema)
		b, err := json.Marshal(ref.Value.Examples[0])
		require.NoError(t, err)
		// The fake broker's accounts are named as the simulator's.
		return strings.NewReplacer("DEMO100001", "Sim101", "DEMO100002", "Sim102").Replace(string(b))
	}
	etag := func(ex exchange) string {
		meta, _ := ex.body["meta"].(map[string]any)
		tag, _ := meta["etag"].(string)
		require.NotEmpty(t, tag, string(ex.raw))
		return tag
	}

	call(tok, http.MethodGet, "", "", http.StatusOK)
	for _, k := range []struct {
		path, schema string
		actions      map[string]int // action -> status
	}{
		{"/desktop/account-groups", "AccountGroup", nil},
		{"/desktop/atm-templates", "ManagedAtmTemplate", nil},
		{"/desktop/monitors", "Monitor", map[string]int{"restart": http.StatusConflict}},
		{"/desktop/copiers", "Copier", nil},
		{"/tv/monitors", "BrokerMonitor", map[string]int{"restart": http.StatusConflict}},
		{"/tv/copiers", "BrokerCopier", nil},
		{"/alerts", "Destination", map[string]int{"test": http.StatusAccepted, "rotate-secret": http.StatusOK}},
	} {
		call(tok, http.MethodGet, k.path, "", http.StatusOK)
		created := call(tok, http.MethodPost, k.path, example(k.schema+"Create"), http.StatusCreated)
		data, _ := created.body["data"].(map[string]any)
		id, _ := data["id"].(string)
		require.NotEmpty(t, id, string(created.raw))
		one := k.path + "/" + id
		read := call(tok, http.MethodGet, one, "", http.StatusOK)
		require.Equal(t, etag(created), etag(read))
		// A stale ETag is refused and answered with the current one.
		r := call(tok, http.MethodPatch, one, example(k.schema+"Patch"), http.StatusPreconditionFailed, "If-Match", `"999"`)
		require.Equal(t, "precondition_failed", r.body["error"])
		call(tok, http.MethodPatch, one, example(k.schema+"Patch"), http.StatusOK, "If-Match", etag(read))
		for action, status := range k.actions {
			call(tok, http.MethodPost, one+"/"+action, "", status)
		}
		call(tok, http.MethodDelete, one, "", http.StatusOK)
		r = call(tok, http.MethodGet, one, "", http.StatusNotFound)
		require.Equal(t, "not_found", r.body["error"])
	}
	for _, k := range []struct{ path, schema string }{
		{"/controls", "Controls"},
		{"/news-lockout", "NewsLockout"},
		{"/desktop/connection-settings", "ConnectionSettings"},
	} {
		read := call(tok, http.MethodGet, k.path, "", http.StatusOK)
		call(tok, http.MethodPatch, k.path, example(k.schema+"Patch"), http.StatusOK, "If-Match", etag(read))
	}
	call(tok, http.MethodPut, "/news-lockout", example("NewsLockoutPut"), http.StatusOK)
	r := call(tok, http.MethodPut, "/controls/kill-switch", example("KillSwitchChange"), http.StatusOK)
	require.Equal(t, true, r.body["applied"], string(r.raw))
	call(tok, http.MethodPut, "/controls/kill-switch", `{"enabled":false}`, http.StatusOK)

	// Documented refusals, validated as the successes are.
	for _, f := range []struct {
		token, method, path, body string
		status                    int
		code                      string
	}{
		{"", http.MethodGet, "/desktop/copiers", "", http.StatusUnauthorized, "unauthorized"},
		{s.Users["alice"].APIToken, http.MethodGet, "/desktop/copiers", "", http.StatusForbidden, "elite_required"},
		{tok, http.MethodGet, "/desktop/copiers?x=1", "", http.StatusBadRequest, "unknown_parameter"},
		{tok, http.MethodGet, "/desktop/copiers/nope", "", http.StatusBadRequest, "invalid_path"},
		{tok, http.MethodPost, "/desktop/copiers", `{"leader":"Sim101","followers":[{"account":"Sim102"}],"sizing":{"ratio":0.3}}`, http.StatusUnprocessableEntity, "validation_failed"},
		{tok, http.MethodPost, "/desktop/copiers", `{"leader":"Nope","followers":[{"account":"Sim102"}]}`, http.StatusNotFound, "account_not_found"},
		{tok, http.MethodPost, "/desktop/monitors", `{"account":"Sim101","state":"stopped"}`, http.StatusUnprocessableEntity, "field_read_only"},
		{tok, http.MethodPatch, "/controls", `{"killSwitch":true}`, http.StatusUnprocessableEntity, "use_kill_switch_endpoint"},
	} {
		r := call(f.token, f.method, f.path, f.body, f.status)
		require.Equal(t, f.code, r.body["error"], "%s %s: %s", f.method, f.path, r.raw)
	}

	for path, item := range c.doc.Paths.Map() {
		for method := range item.Operations() {
			require.True(t, covered[method+" "+path], "%s %s was called", method, path)
		}
	}
}
