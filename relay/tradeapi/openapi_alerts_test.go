package tradeapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"tradebridge/relay/alerts"
	"tradebridge/relay/errcode"
	"tradebridge/relay/profile"
)

// The document describes the alert destinations: every operation of
// /v1/api/manage/alerts, with its error codes; the create bodies of each
// kind and the webhook's payload validate against their schemas, and the
// signature scheme is described.
func TestOpenAPIAlerts(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t, profile.Standard)
	want := map[string][]string{
		"/v1/api/manage/alerts":                    {http.MethodGet, http.MethodPost},
		"/v1/api/manage/alerts/{id}":               {http.MethodGet, http.MethodPatch, http.MethodDelete},
		"/v1/api/manage/alerts/{id}/test":          {http.MethodPost},
		"/v1/api/manage/alerts/{id}/rotate-secret": {http.MethodPost},
	}
	for path, methods := range want {
		item := doc.Paths.Value(path)
		require.NotNil(t, item, path)
		for _, m := range methods {
			op := item.GetOperation(m)
			require.NotNil(t, op, "%s %s", m, path)
			require.Equal(t, "manage", op.Extensions["x-route"])
			require.Contains(t, op.Description, "X-Tradebridge-Signature")
			for code, r := range op.Responses.Map() {
				if code[0] == '2' {
					continue
				}
				es := r.Value.Content.Get("application/json").Schema.Value
				require.Equal(t, "#/components/schemas/Error", es.AllOf[0].Ref, "%s %s %s", m, path, code)
			}
		}
	}
	create := doc.Paths.Value("/v1/api/manage/alerts").Post
	codes, _ := create.Responses.Status(http.StatusConflict).Value.Extensions["x-error-codes"].([]any)
	require.Contains(t, codes, errcode.EmailUnavailable)
	require.NotNil(t, doc.Paths.Value("/v1/api/manage/alerts/{id}/test").Post.Responses.Status(http.StatusAccepted))

	schema := func(name string) *openapi3.Schema { return doc.Components.Schemas[name].Value }
	visit := func(s *openapi3.Schema, body string) error {
		var v any
		require.NoError(t, json.Unmarshal([]byte(body), &v))
		return s.VisitJSON(v, openapi3.EnableJSONSchema2020())
	}
	for _, ok := range []string{
		`{"kind":"webhook","url":"https://hooks.example.com/tb","events":["monitor.tripped"]}`,
		`{"kind":"discord","url":"https://discord.com/api/webhooks/1/abc","events":["copier.halted"],"name":"ops"}`,
		`{"kind":"telegram","botToken":"123456789:AAbbCCddEEffGGhhIIjjKKllMMnnOOppQQ","chatId":"-100","events":["agent.disconnected"],"graceSeconds":120}`,
		`{"kind":"email","to":"me@example.com","events":["order.refused"],"active":false}`,
	} {
		require.NoError(t, visit(schema("AlertDestinationCreate"), ok), ok)
	}
	for _, bad := range []string{
		`{"kind":"webhook","url":"https://hooks.example.com/tb","events":["alert.sent"]}`,
		`{"kind":"webhook","url":"https://hooks.example.com/tb","events":[]}`,
		`{"kind":"email","to":"me@example.com","events":["order.refused"],"graceSeconds":3601}`,
		`{"kind":"pager","events":["order.refused"]}`,
	} {
		require.Error(t, visit(schema("AlertDestinationCreate"), bad), bad)
	}
	require.NoError(t, visit(schema("AlertPayload"),
		`{"id":"act_1","at":"2026-11-02T15:00:00Z","kind":"monitor.tripped","account":"Sim101","summary":"s","detail":{}}`))
	require.Contains(t, schema("AlertPayload").Description, "HMAC-SHA256")
	kinds := schema("AlertPayload").Properties["kind"].Value.Enum
	for _, k := range alerts.AlertableKinds {
		require.True(t, slices.Contains(kinds, any(k)), k)
	}
	require.Contains(t, kinds, any(alerts.PayloadSummary))
}
