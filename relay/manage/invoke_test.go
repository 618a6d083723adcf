package manage

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/events/eventstest"
)

// Invoke runs a route's code after admission for another door: the
// change is made, pushed and recorded with the door's source, whatever
// the user's plan; the route's gate, body checks and class budget still
// hold, and a path that names no route is 404.
func TestInvoke(t *testing.T) {
	t.Parallel()
	var pub eventstest.Collector
	e := newEnv(t, func(o *Options) { o.Events = &pub })
	src := protocol.ActivitySource{Kind: protocol.SourceWebhook, ID: "wh_1"}
	ctx := context.Background()
	u1 := principals[tokElite]

	status, body := e.s.Invoke(ctx, u1, src, http.MethodPut, "controls/kill-switch", []byte(`{"enabled":true}`))
	require.Equal(t, http.StatusOK, status, string(body))
	var doc struct {
		Data struct {
			KillSwitch bool `json:"killSwitch"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &doc))
	assert.True(t, doc.Data.KillSwitch)
	evs := pub.All()
	require.Len(t, evs, 1)
	assert.Equal(t, src, evs[0].Activity.Source)
	assert.Equal(t, "Kill switch turned on", evs[0].Activity.Summary)
	require.NotEmpty(t, e.hub.pushes("u1"), "pushed to the agent")

	status, body = e.s.Invoke(ctx, u1, src, http.MethodPut, Prefix+"/controls/kill-switch", []byte(`{"enabled":false}`))
	require.Equal(t, http.StatusOK, status, string(body), "the whole path too")

	pro := principals[tokPro]
	e.hub.connect("u3", protocol.ProtocolVersion)
	status, body = e.s.Invoke(ctx, pro, src, http.MethodPut, "controls/kill-switch", []byte(`{"enabled":true}`))
	require.Equal(t, http.StatusOK, status, string(body), "the calling door decided the plan")

	for _, tc := range []struct {
		name         string
		tok          string
		method, path string
		body         string
		status       int
		code         string
	}{
		{"no route", tokElite, http.MethodPut, "controls/nothing", `{}`, http.StatusNotFound, errcode.NotFound},
		{"wrong method", tokElite, http.MethodPost, "controls/kill-switch", `{}`, http.StatusNotFound, errcode.NotFound},
		{"bad body", tokElite, http.MethodPut, "controls/kill-switch", `{"enabled":1}`, http.StatusUnprocessableEntity, errcode.ValidationFailed},
		{"withheld", tokNoControl, http.MethodPut, "controls/kill-switch", `{"enabled":true}`, http.StatusForbidden, errcode.PlanRequired},
		{"closed", tokClosed, http.MethodPut, "controls/kill-switch", `{"enabled":true}`, http.StatusForbidden, errcode.NotAvailable},
	} {
		status, body := e.s.Invoke(ctx, principals[tc.tok], src, tc.method, tc.path, []byte(tc.body))
		assert.Equal(t, tc.status, status, tc.name)
		var eb errBody
		require.NoError(t, json.Unmarshal(body, &eb), tc.name)
		assert.Equal(t, tc.code, eb.Error, tc.name)
	}

	// The kill budget holds: 5 at once.
	e2 := newEnv(t, nil)
	codes := map[int]int{}
	for range 8 {
		status, _ := e2.s.Invoke(ctx, u1, src, http.MethodPut, "controls/kill-switch", []byte(`{"enabled":true}`))
		codes[status]++
	}
	assert.Equal(t, map[int]int{http.StatusOK: 5, http.StatusTooManyRequests: 3}, codes)
}

// InvokeIf sends If-Match: a change made against an ETag the resource no
// longer has is 412 with the current one, and nothing changes.
func TestInvokeIfMatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	u1 := principals[tokElite]
	src := protocol.ActivitySource{Kind: protocol.SourceDashboard, ID: "s1"}
	etag := func(body []byte) string {
		var doc struct {
			Meta struct {
				ETag string `json:"etag"`
			} `json:"meta"`
		}
		require.NoError(t, json.Unmarshal(body, &doc), string(body))
		return doc.Meta.ETag
	}
	status, body := e.s.Invoke(ctx, u1, src, http.MethodGet, "controls", nil)
	require.Equal(t, http.StatusOK, status, string(body))
	first := etag(body)
	status, body = e.s.InvokeIf(ctx, u1, src, http.MethodPatch, "controls", first, []byte(`{"blockAllSignals":true}`))
	require.Equal(t, http.StatusOK, status, string(body))
	second := etag(body)
	require.NotEqual(t, first, second)

	status, body = e.s.InvokeIf(ctx, u1, src, http.MethodPatch, "controls", first, []byte(`{"flattenOnKill":true}`))
	require.Equal(t, http.StatusPreconditionFailed, status, string(body))
	var eb errBody
	require.NoError(t, json.Unmarshal(body, &eb))
	assert.Equal(t, errcode.PreconditionFailed, eb.Error)
	status, body = e.s.Invoke(ctx, u1, src, http.MethodGet, "controls", nil)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, second, etag(body), "the refused change changed nothing")
}
