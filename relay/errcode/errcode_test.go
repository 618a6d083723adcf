package errcode_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
)

var update = flag.Bool("update", false, "rewrite testdata/codes.golden and catalogue.json")

const golden = "testdata/codes.golden"

// constant is one exported string constant of the package's source, with
// the status its group's heading names (0 when the heading names none).
type constant struct {
	name, value string
	group       int
}

// constants reads the package's exported string constants from its source.
func constants(t *testing.T) []constant {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	heading := regexp.MustCompile(`^(\d{3}) `)
	var out []constant
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			group := 0
			if gd.Doc != nil {
				if m := heading.FindStringSubmatch(gd.Doc.Text()); m != nil {
					group, _ = strconv.Atoi(m[1])
				}
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					require.True(t, ok && lit.Kind == token.STRING, "%s must be a string literal", id.Name)
					v, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					require.True(t, id.IsExported(), "%s", id.Name)
					out = append(out, constant{id.Name, v, group})
				}
			}
		}
	}
	return out
}

// Every constant is listed once in All or Fields under its own name, no
// two share a value, and the list matches the golden file: a code that
// changes or disappears is a change of the wire format and must be seen.
func TestListAndGolden(t *testing.T) {
	t.Parallel()
	consts := constants(t)
	listed := map[string]string{}
	for _, e := range slices.Concat(errcode.All, errcode.Fields) {
		_, dup := listed[e.Name]
		require.False(t, dup, "%s is listed twice", e.Name)
		listed[e.Name] = e.Code
	}
	values := map[string]string{}
	for _, c := range consts {
		require.Equal(t, c.value, listed[c.name], "%s must be listed in All or Fields with its value", c.name)
		other, dup := values[c.value]
		require.False(t, dup, "%s and %s share the value %q", c.name, other, c.value)
		values[c.value] = c.name
		require.Regexp(t, `^[a-z][a-z0-9_]*[a-z0-9]$`, c.value)
	}
	require.Len(t, listed, len(consts), "All and Fields list a name that is not a constant")
	for _, e := range errcode.Fields {
		require.True(t, strings.HasPrefix(e.Name, "FieldCode"), e.Name)
		require.Zero(t, errcode.Status(e.Code), e.Name)
	}

	var b strings.Builder
	b.WriteString("# name code status (go test ./relay/errcode -update rewrites this file)\n")
	for _, e := range errcode.All {
		fmt.Fprintf(&b, "%s %s %d\n", e.Name, e.Code, errcode.Status(e.Code))
	}
	for _, e := range errcode.Fields {
		fmt.Fprintf(&b, "%s %s field\n", e.Name, e.Code)
	}
	if *update {
		require.NoError(t, os.WriteFile(golden, []byte(b.String()), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test ./relay/errcode -update to create it")
	require.Equal(t, string(want), b.String(), "codes changed; if on purpose, run go test ./relay/errcode -update")
}

// A constant under a status heading has that status; the others have none
// but the door-dependent ones, which have the Management API's.
func TestStatusMatchesGroups(t *testing.T) {
	t.Parallel()
	dependent := map[string]int{errcode.AddonDisconnected: 409, errcode.AccountNotFound: 404}
	for _, c := range constants(t) {
		want := c.group
		if st, ok := dependent[c.value]; ok {
			want = st
		}
		require.Equal(t, want, errcode.Status(c.value), c.name)
	}
	require.Zero(t, errcode.Status("no_such_code"))
}

// The codes the relay shares with the agent are spelt as the agent spells
// them.
func TestSharedWithTheAgent(t *testing.T) {
	t.Parallel()
	for mine, theirs := range map[string]string{
		errcode.InvalidArgument:       protocol.CodeInvalidArgument,
		errcode.InvalidInstrument:     protocol.CodeInvalidInstrument,
		errcode.MissingRequiredFields: protocol.CodeMissingFields,
		errcode.AccountNotFound:       protocol.CodeAccountNotFound,
		errcode.UnknownFunction:       protocol.CodeUnknownFunction,
		errcode.RequestInProgress:     protocol.CodeRequestInProgress,
		errcode.DeadlineExceeded:      protocol.CodeDeadlineExceeded,
		errcode.PlatformUnavailable:   protocol.CodePlatformUnavailable,
		errcode.InternalError:         protocol.CodeInternal,
		errcode.OutcomeUnknown:        protocol.CodeOutcomeUnknown,
	} {
		require.Equal(t, theirs, mine)
	}
	// Any other agent code the relay lists must mean the same thing: none
	// of the list may collide with an agent code by accident.
	shared := map[string]bool{}
	for _, c := range protocol.Codes {
		shared[c] = true
	}
	n := 0
	for _, e := range errcode.All {
		if shared[e.Code] {
			n++
		}
	}
	require.Equal(t, 10, n, "a code of the list is also an agent code: add it to the pairs above")
}

// The package imports only the standard library.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			require.NotContains(t, path, ".", "%s imports %s", name, path)
			require.False(t, strings.HasPrefix(path, "tradebridge/"), "%s imports %s", name, path)
		}
	}
}
