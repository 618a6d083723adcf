package manage

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/errcode"
)

// corpusDir is the parsing corpus of nst/JSONTestSuite (MIT licence).
var corpusDir = filepath.Join("..", "..", "testdata", "jsontestsuite", "test_parsing")

// The JSON corpus, each document as the body of PATCH /controls: y_ files
// are never invalid_json (they are JSON: the kind's rules judge them),
// except the two with duplicate keys, which the spec refuses; n_ files
// are always invalid_json; i_ files as relay/httpapi's conformance test
// documents: numbers accepted, everything else refused, and the 500
// nested arrays refused for their depth (the default limit). A document
// larger than 64 KiB is refused for its size (413 body_too_large).
func TestJSONCorpusThroughPatch(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(corpusDir)
	require.NoError(t, err)
	e := newEnv(t, nil)
	var y, n, i int
	for _, entry := range entries {
		name := entry.Name()
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(corpusDir, name))
		require.NoError(t, err)
		r := e.do(http.MethodPatch, "/controls", tokElite, string(data), "Content-Type", "application/json")
		if len(data) == 0 {
			// An empty body is no body: httptest sends none.
			require.Equal(t, errcode.InvalidJSON, r.code(t), name)
			n++
			continue
		}
		code := r.code(t)
		if len(data) > MaxBodyBytes {
			// Refused for its size before its syntax.
			require.Equal(t, errcode.BodyTooLarge, code, name)
			require.True(t, strings.HasPrefix(name, "n_"), name)
			n++
			continue
		}
		invalid := code == errcode.InvalidJSON
		switch {
		case name == "y_object_duplicated_key.json" || name == "y_object_duplicated_key_and_value.json":
			y++
			require.True(t, invalid, name)
		case strings.HasPrefix(name, "y_"):
			y++
			require.False(t, invalid, name)
			require.Contains(t, []int{http.StatusOK, http.StatusUnprocessableEntity}, r.Code, name)
		case strings.HasPrefix(name, "n_"):
			n++
			require.True(t, invalid, "%s: %s", name, r.Body)
		case strings.HasPrefix(name, "i_number_"):
			i++
			require.False(t, invalid, name)
		case strings.HasPrefix(name, "i_"):
			i++
			require.True(t, invalid, name)
		}
		require.Equal(t, http.StatusBadRequest == r.Code, invalid, name)
	}
	require.Equal(t, 95, y)
	require.Equal(t, 188, n)
	require.Equal(t, 35, i)
}
