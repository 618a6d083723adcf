package tradeapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"tradebridge/relay/errcode"
	"tradebridge/relay/profile"
)

// The document describes the kill switch: its body (flattenOnKill
// optional, nothing else), its answer with applied, its error codes.
func TestOpenAPIKillSwitch(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t, profile.Standard)
	item := doc.Paths.Value("/v1/api/manage/controls/kill-switch")
	require.NotNil(t, item)
	op := item.Put
	require.NotNil(t, op)
	require.Equal(t, "manage", op.Extensions["x-route"])
	require.Contains(t, op.Description, "trading_blocked")
	codes, _ := op.Responses.Status(http.StatusUnprocessableEntity).Value.Extensions["x-error-codes"].([]any)
	require.Contains(t, codes, errcode.ValidationFailed)

	visit := func(s *openapi3.Schema, body string) error {
		var v any
		require.NoError(t, json.Unmarshal([]byte(body), &v))
		return s.VisitJSON(v, openapi3.EnableJSONSchema2020())
	}
	body := op.RequestBody.Value.Content.Get("application/json").Schema.Value
	for _, tc := range []struct {
		body string
		ok   bool
	}{
		{`{"enabled":true}`, true},
		{`{"enabled":false,"flattenOnKill":true}`, true},
		{`{}`, false},
		{`{"enabled":"yes"}`, false},
		{`{"enabled":true,"blockAllSignals":true}`, false},
	} {
		err := visit(body, tc.body)
		if tc.ok {
			require.NoError(t, err, tc.body)
		} else {
			require.Error(t, err, tc.body)
		}
	}
	answer := op.Responses.Status(http.StatusOK).Value.Content.Get("application/json").Schema.Value
	require.NoError(t, visit(answer, `{"success":true,"data":{"id":"ctl_1","createdAt":"2026-11-18T15:00:00Z","updatedAt":"2026-11-18T15:00:00Z",`+
		`"killSwitch":true,"flattenOnKill":true,"blockAllSignals":false},"meta":{"etag":"\"2\""},"changed":true,"applied":false}`))
	require.Error(t, visit(answer, `{"success":true,"data":{"id":"ctl_1","killSwitch":true,"flattenOnKill":true,"blockAllSignals":false},"meta":{"etag":"\"2\""},"changed":true}`),
		"applied is always there")
}
