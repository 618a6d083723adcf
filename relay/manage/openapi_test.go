package manage

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"
)

// loadOpenAPI loads and validates the Management API's document with
// kin-openapi (its examples too), as a client generator would read it.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	raw, err := json.Marshal(OpenAPI())
	require.NoError(t, err)
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background(), openapi3.EnableExamplesValidation()))
	return doc
}

// Every route of the registry is in the document, with a summary, its
// success answer typed, and its errors listed per status; the document has
// no other route.
func TestOpenAPIEveryRoute(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	require.Equal(t, "3.1.0", doc.OpenAPI)
	want := map[string]bool{}
	for _, rt := range routes() {
		p := Prefix
		if rt.path != "" {
			p += "/" + rt.path
		}
		want[rt.method+" "+p] = true
		item := doc.Paths.Find(p)
		require.NotNil(t, item, p)
		op := item.GetOperation(rt.method)
		require.NotNil(t, op, "%s %s", rt.method, p)
		require.NotEmpty(t, op.Summary, "%s %s", rt.method, p)
		require.NotEmpty(t, op.OperationID, "%s %s", rt.method, p)
		var success int
		for code, r := range op.Responses.Map() {
			if strings.HasPrefix(code, "2") {
				success++
				s := r.Value.Content.Get("application/json").Schema.Value
				require.Contains(t, s.Properties, "data", "%s %s", rt.method, p)
				continue
			}
			codes, _ := r.Value.Extensions["x-error-codes"].([]any)
			require.NotEmpty(t, codes, "%s %s %s", rt.method, p, code)
		}
		require.Equal(t, 1, success, "%s %s", rt.method, p)
		for _, st := range []int{401, 403, 429, 500, 503} {
			require.NotNil(t, op.Responses.Status(st), "%s %s answers %d", rt.method, p, st)
		}
		if rt.change() && rt.op != routeCreate {
			require.NotNil(t, op.Responses.Status(http.StatusPreconditionFailed), "%s %s", rt.method, p)
		}
	}
	for p, item := range doc.Paths.Map() {
		for m := range item.Operations() {
			require.True(t, want[m+" "+p], "%s %s is a route", m, p)
		}
	}
}

// A route added to the registry without a description fails the build of
// the document.
func TestOpenAPIRouteWithoutDescription(t *testing.T) {
	t.Parallel()
	rts := routes()
	_, err := buildOpenAPI(rts)
	require.NoError(t, err)
	for _, extra := range []*route{
		{method: http.MethodPost, path: "desktop/monitors/{id}/pause", op: routeAction, kind: monitorKind, action: "pause", family: FamilyDesktop},
		{method: http.MethodGet, path: "desktop/things", op: routeOp(99), kind: copierKind, family: FamilyDesktop},
	} {
		_, err := buildOpenAPI(append(routes(), extra))
		require.ErrorContains(t, err, "no description", extra.path)
	}
}
