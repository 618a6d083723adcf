package httpapi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/httpapi"
)

// corpusDir is the parsing corpus of nst/JSONTestSuite (MIT licence, see
// its LICENSE), relative to this package.
var corpusDir = filepath.Join("..", "..", "testdata", "jsontestsuite", "test_parsing")

// conformanceDepth is generous: the corpus checks syntax, not our limit.
const conformanceDepth = 1000

// rejectedAlthoughY lists the y_ files we deliberately REJECT: the
// service spec requires refusing duplicate object keys, which RFC 8259 only
// says SHOULD be unique.
var rejectedAlthoughY = map[string]bool{
	"y_object_duplicated_key.json":           true,
	"y_object_duplicated_key_and_value.json": true,
}

// acceptedI lists the i_ (implementation-defined) files we accept; we reject
// every other i_ file. Our choice: numbers are checked against the grammar
// only, whatever their magnitude (encoding/json reports a field that cannot
// hold one as invalid_field); nesting is limited by MaxDepth, not by the
// validator; and every string must be valid UTF-8 without an unpaired
// surrogate escape, so the i_string_* and i_object_key_* files, the UTF-16
// documents and the byte order mark are refused.
func acceptedI(name string) bool {
	return strings.HasPrefix(name, "i_number_") || name == "i_structure_500_nested_arrays.json"
}

func TestJSONTestSuite(t *testing.T) {
	entries, err := os.ReadDir(corpusDir)
	require.NoError(t, err)
	var y, n, i int
	for _, entry := range entries {
		name := entry.Name()
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(corpusDir, name))
		require.NoError(t, err)
		t.Run(name, func(t *testing.T) {
			err := httpapi.Validate(data, conformanceDepth)
			switch {
			case strings.HasPrefix(name, "y_") && rejectedAlthoughY[name]:
				y++
				require.ErrorIs(t, err, httpapi.ErrDuplicateKey)
			case strings.HasPrefix(name, "y_"):
				y++
				require.NoError(t, err)
			case strings.HasPrefix(name, "n_"):
				n++
				require.ErrorIs(t, err, httpapi.ErrInvalidJSON)
			case strings.HasPrefix(name, "i_"):
				i++
				if acceptedI(name) {
					require.NoError(t, err)
				} else {
					require.ErrorIs(t, err, httpapi.ErrInvalidJSON)
				}
			default:
				t.Fatalf("unexpected file %s", name)
			}
		})
	}
	require.Equal(t, 95, y, "y_ files")
	require.Equal(t, 188, n, "n_ files")
	require.Equal(t, 35, i, "i_ files")
	for name := range rejectedAlthoughY {
		require.FileExists(t, filepath.Join(corpusDir, name))
	}
}

// TestJSONTestSuiteDefaultDepth checks the one corpus file that is only
// about depth against the default limit.
func TestJSONTestSuiteDefaultDepth(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(corpusDir, "i_structure_500_nested_arrays.json"))
	require.NoError(t, err)
	require.ErrorIs(t, httpapi.Validate(data, 0), httpapi.ErrTooDeep)
}
