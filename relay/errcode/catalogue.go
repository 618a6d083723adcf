package errcode

import (
	_ "embed"
	"encoding/json"
	"sync"
)

// Described is one code of the catalogue: the code, the status it is
// answered with (0 when it has no fixed one), where it comes from and what
// it means. Source is "relay" for the relay's own codes (All), "agent"
// for the trading agent's that pass through unchanged (those of
// protocol.Codes the relay does not also produce), and "field" for the
// codes of a validation error's fields array (Fields).
type Described struct {
	Code    string `json:"code"`
	Status  int    `json:"status,omitempty"`
	Source  string `json:"source"`
	Meaning string `json:"meaning"`
}

// catalogueJSON is the catalogue, read from the doc comments of the
// constants of this package and of package protocol by the package's
// test: go test ./relay/errcode -update rewrites it, and the test fails
// while it differs from the comments.
//
//go:embed catalogue.json
var catalogueJSON []byte

var catalogue = sync.OnceValue(func() []Described {
	var out []Described
	if err := json.Unmarshal(catalogueJSON, &out); err != nil {
		panic("errcode: catalogue.json does not decode: " + err.Error())
	}
	return out
})

// Catalogue returns every error code a caller of the relay can read, with
// its status and meaning: the relay's codes, the agent's, and the field
// codes, in the order of the constants. It is what the documentation and
// MCP's error resource explain. Callers must not modify it.
func Catalogue() []Described { return catalogue() }
