package ops

import (
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
)

// Refusals say which cause applies and how to write the call instead, and
// never repeat the caller's text beyond a root the platform knows.
func TestInstrumentErrorsTeach(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct {
		name, instrument string
		want             []string
	}{
		{"unknown root", "ZZTOP", []string{"trades no instrument of that root", `"ES 12-26"`, `"ES"`, `"ESZ26"`}},
		{"unknown root, month form", "QQQ 12-26", []string{"trades no instrument of that root", `"ES 12-26"`}},
		{"not a contract month", "ES 01-27", []string{"not a contract month of ES", "H (Mar), M (Jun), U (Sep), Z (Dec)", "front month is ES 12-26", `"ESZ26"`}},
		{"not a contract month, month code", "ESF27", []string{"not a contract month of ES"}},
		{"expired", "ES 06-26", []string{"ES contract has expired", "front month is ES 12-26"}},
		{"not listed", "ES 12-99", []string{"not listed yet"}},
		{"malformed", "ES 13-26", []string{"not in an accepted form", `"ES 12-26"`}},
		{"malformed month letter", "ESA26", []string{"not in an accepted form"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.ops.GetQuote(bg, protocol.QuoteArgs{Instrument: tc.instrument})
			requireCode(t, err, protocol.CodeInvalidInstrument, tc.instrument)
			for _, w := range tc.want {
				require.Contains(t, err.(*protocol.Error).Detail, w)
			}
		})
	}
}

// account_not_found says names are case-sensitive and lists the accounts.
func TestExplainAccountNotFound(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.ops.GetAccount(bg, protocol.AccountArgs{Account: "sim101"})
	requireCode(t, err, protocol.CodeAccountNotFound)
	pe := f.ops.Explain(bg, err.(*protocol.Error))
	require.Equal(t, protocol.CodeAccountNotFound, pe.Code)
	require.Equal(t, "no account of that name on the platform; account names are case-sensitive; the accounts are Sim101, Sim102", pe.Detail)
	other := protocol.NewError(protocol.CodeNoPosition, "x")
	require.Same(t, other, f.ops.Explain(bg, other), "other errors pass unchanged")
}

// An unknown ATM template's refusal lists the platform's templates: the
// first 20, then how many more; or says there are none.
func TestTemplateListIsBounded(t *testing.T) {
	t.Parallel()
	many := make([]protocol.AtmTemplate, 23)
	for i := range many {
		many[i].Name = string(rune('A' + i))
	}
	for _, tc := range []struct {
		name string
		ts   []protocol.AtmTemplate
		want string
	}{
		{"none", nil, "; the platform has no ATM templates"},
		{"one", many[:1], "; the platform's templates (names match exactly): A"},
		{"many", many, "; the platform's templates (names match exactly): A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T and 3 more"},
	} {
		require.Equal(t, tc.want, templateList(tc.ts), tc.name)
	}
}
