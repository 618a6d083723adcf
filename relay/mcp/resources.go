package mcp

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
)

// The resources' URIs.
const (
	// ResourceErrors is the error catalogue: every error code a tool's
	// refusal may carry, with its HTTP status and meaning (JSON, the
	// entries of errcode.Catalogue).
	ResourceErrors = "tradebridge://errors"
	// ResourceInstruments is the instrument grammar: how to name a
	// futures instrument (Markdown).
	ResourceInstruments = "tradebridge://instruments"
)

// addResources adds the resources that explain the tools' answers.
func addResources(srv *sdk.Server) {
	srv.AddResource(&sdk.Resource{URI: ResourceErrors, Name: "errors", Title: "Error codes", MIMEType: "application/json",
		Description: "Every error code a refused tool call (or HTTP request) may carry, with its HTTP status and what it means."},
		staticResource(ResourceErrors, "application/json", errorsText()))
	srv.AddResource(&sdk.Resource{URI: ResourceInstruments, Name: "instruments", Title: "Instrument names", MIMEType: "text/markdown",
		Description: "How to name a futures instrument in the tools' arguments: ES 12-26, ESZ26, ESZ6 or a root such as ES."},
		staticResource(ResourceInstruments, "text/markdown", instrumentsText()))
}

// staticResource serves a fixed text.
func staticResource(uri, mime, text string) sdk.ResourceHandler {
	return func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: mime, Text: text}}}, nil
	}
}

// errorsText is the error catalogue as JSON: {"codes":[…]}.
func errorsText() string {
	b, err := json.MarshalIndent(struct {
		Codes []errcode.Described `json:"codes"`
	}{errcode.Catalogue()}, "", "  ")
	if err != nil {
		panic("mcp: the error catalogue does not encode: " + err.Error())
	}
	return string(b)
}

// instrumentsText is the instrument grammar, from package protocol's
// constants.
func instrumentsText() string {
	var months []string
	for i, c := range protocol.MonthCodes {
		months = append(months, string(c)+"="+strconv.Itoa(i+1))
	}
	return "# Instrument names\n\n" +
		"Every tool names a futures instrument in one of these forms, read the same way everywhere:\n\n" +
		"| Form | Example | Meaning |\n|---|---|---|\n" +
		"| contract | `ES 12-26` | root, one space, month 01–12, `-`, two-digit year |\n" +
		"| month code | `ESZ26` | root, month letter, two-digit year |\n" +
		"| month code, short year | `ESZ6` | the same with the year's last digit |\n" +
		"| root | `ES` | the front month of the root |\n\n" +
		"A root is 1 to 6 ASCII letters and digits (`ES`, `NQ`, `M2K`, `SR3`). Month letters: " +
		strings.Join(months, ", ") + ". Letters match in either case. A name that reads as a month code is one: " +
		"`ESZ6` is ES, December, year 6. Nothing else is an instrument name: no other spacing or separators, at most " +
		strconv.Itoa(protocol.MaxInstrumentLen) + " characters.\n\n" +
		"The grammar is syntax only: which roots and contracts exist is the trading platform's to say " +
		"(an unknown one is refused with `invalid_instrument`).\n\n" +
		"Regular expression: `" + protocol.InstrumentPattern + "`\n"
}
