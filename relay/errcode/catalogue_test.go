package errcode_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
)

const catalogueFile = "catalogue.json"

// constDocs reads the doc comments of the string constants of a Go file:
// by constant name, its value and its comment as one line.
func constDocs(t *testing.T, file string) map[string][2]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	require.NoError(t, err)
	out := map[string][2]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if vs.Doc == nil || len(vs.Names) != 1 || len(vs.Values) != 1 {
				continue
			}
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			v, err := strconv.Unquote(lit.Value)
			require.NoError(t, err)
			out[vs.Names[0].Name] = [2]string{v, strings.Join(strings.Fields(vs.Doc.Text()), " ")}
		}
	}
	return out
}

// leadRE reads a comment's lead, "Name: ", "Name (400): " or "Name (409
// on one door, 408 on another): ", and the rest.
var leadRE = regexp.MustCompile(`^[A-Za-z]+(?: \(([^)]*)\))?: (.+)$`)

// meaning is the meaning of constant name: its comment without the lead,
// with the lead's note on statuses kept at its end when it says more
// than a status.
func meaning(t *testing.T, docs map[string][2]string, name string) string {
	t.Helper()
	d, ok := docs[name]
	require.True(t, ok, "%s has a doc comment", name)
	m := leadRE.FindStringSubmatch(d[1])
	require.NotNil(t, m, "%s's comment starts with its name", name)
	out := strings.ToUpper(m[2][:1]) + m[2][1:]
	if note := m[1]; note != "" && !regexp.MustCompile(`^[0-9]{3}$`).MatchString(note) {
		out += " (" + note + ")"
	}
	return out
}

// The catalogue is every code of All, protocol.Codes and Fields, each
// with its constant's comment: it cannot fall behind the constants.
func TestCatalogue(t *testing.T) {
	relay := constDocs(t, "errcode.go")
	agent := constDocs(t, "../../protocol/errors.go")
	var want []errcode.Described
	seen := map[string]bool{}
	for _, e := range errcode.All {
		want = append(want, errcode.Described{Code: e.Code, Status: errcode.Status(e.Code), Source: "relay",
			Meaning: meaning(t, relay, e.Name)})
		seen[e.Code] = true
	}
	byValue := map[string]string{}
	for name, d := range agent {
		byValue[d[0]] = name
	}
	for _, c := range protocol.Codes {
		if seen[c] {
			continue
		}
		name, ok := byValue[c]
		require.True(t, ok, "protocol declares %s", c)
		want = append(want, errcode.Described{Code: c, Source: "agent", Meaning: meaning(t, agent, name)})
		seen[c] = true
	}
	for _, e := range errcode.Fields {
		want = append(want, errcode.Described{Code: e.Code, Source: "field", Meaning: meaning(t, relay, e.Name)})
	}
	raw, err := json.MarshalIndent(want, "", "  ")
	require.NoError(t, err)
	raw = append(raw, '\n')
	if *update {
		require.NoError(t, os.WriteFile(catalogueFile, raw, 0o644))
	}
	got, err := os.ReadFile(catalogueFile)
	require.NoError(t, err)
	require.True(t, bytes.Equal(raw, got), "the catalogue differs from the constants' comments: go test ./relay/errcode -update")
	require.Equal(t, want, errcode.Catalogue())
}
