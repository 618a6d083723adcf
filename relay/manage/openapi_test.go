package manage

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"tradebridge/relay/errcode"
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

// errcodeValues maps the names of relay/errcode's constants to their
// values, read from its source.
func errcodeValues(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string]string{}
	files, err := filepath.Glob("../errcode/*.go")
	require.NoError(t, err)
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Values) != len(vs.Names) {
				return true
			}
			for i, name := range vs.Names {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					out[name.Name] = v
				}
			}
			return true
		})
	}
	return out
}

// codesIn returns the error codes (not the field codes) a file of this
// package names: errcode.X for each constant X.
func codesIn(t *testing.T, file string, values map[string]string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err)
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == "errcode" && !strings.HasPrefix(sel.Sel.Name, "FieldCode") {
			if v, ok := values[sel.Sel.Name]; ok {
				out = append(out, v)
			}
		}
		return true
	})
	return out
}

// Every error code a kind's rules can answer is listed, at its status, on
// the kind's changes in the document; every code the handlers answer is
// listed on some route at its status.
func TestOpenAPIErrorCodesOfTheHandlers(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	values := errcodeValues(t)
	listed := func(method, path string, st int) []string {
		op := doc.Paths.Find(path).GetOperation(method)
		require.NotNil(t, op, "%s %s", method, path)
		r := op.Responses.Status(st)
		if r == nil {
			return nil
		}
		var out []string
		for _, c := range r.Value.Extensions["x-error-codes"].([]any) {
			out = append(out, c.(string))
		}
		return out
	}
	kindFiles := map[string][]string{
		"copiers.go":     {copierKind.Name, brokerCopierName},
		"monitors.go":    {monitorKind.Name, brokerMonitorName},
		"groups.go":      {groupKind.Name},
		"templates.go":   {templateKind.Name},
		"controls.go":    {controlsKind.Name},
		"news.go":        {newsKind.Name},
		"connections.go": {connectionsKind.Name},
		"alerts.go":      {alertKind.Name},
		"tv.go":          {brokerCopierName, brokerMonitorName},
	}
	for file, names := range kindFiles {
		codes := codesIn(t, file, values)
		for _, rt := range routes() {
			if rt.kind == nil || !slices.Contains(names, rt.kind.name()) || !rt.change() {
				continue
			}
			p := Prefix + "/" + rt.path
			for _, c := range codes {
				if c == errcode.LimitReached || c == errcode.GroupLimitReached {
					if rt.op != routeCreate {
						continue // a create's, past MaxCount
					}
				}
				if c == errcode.UseKillSwitchEndpoint && rt.op == routeKill {
					continue
				}
				if c == errcode.ValidationFailed && rt.op == routeDelete {
					continue // a DELETE has no body to judge
				}
				require.Contains(t, listed(rt.method, p, errcode.Status(c)), c, "%s (%s) answers %s at %d", p, rt.method, c, errcode.Status(c))
			}
		}
	}
	all := map[int][]string{}
	for p, item := range doc.Paths.Map() {
		for m := range item.Operations() {
			for _, st := range []int{400, 401, 403, 404, 408, 409, 412, 413, 415, 422, 429, 500, 503, 504} {
				all[st] = append(all[st], listed(m, p, st)...)
			}
		}
	}
	for _, file := range []string{"server.go", "handlers.go", "admission.go", "push.go", "etag.go", "modes.go", "fields.go"} {
		for _, c := range codesIn(t, file, values) {
			st := errcode.Status(c)
			if st == 0 {
				continue // errcode.Status itself
			}
			require.Contains(t, all[st], c, "%s: %s is listed at %d", file, c, st)
		}
	}
}

// Every resource's schema and every request body's has an example, which
// matches it.
func TestOpenAPIExamples(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	n := 0
	for _, info := range Kinds() {
		for _, suffix := range []string{"", "Create", "Patch"} {
			name := info.Type.Name() + suffix
			if suffix == "Create" && info.Singleton {
				continue
			}
			ref := doc.Components.Schemas[name]
			require.NotNil(t, ref, name)
			require.NotEmpty(t, ref.Value.Examples, "%s has an example", name)
			for _, ex := range ref.Value.Examples {
				require.NoError(t, ref.Value.VisitJSON(ex, openapi3.EnableJSONSchema2020()), name)
				n++
			}
		}
	}
	require.Greater(t, n, 25)
}
