package manage

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// A sizing ratio off the grid is refused with the steps it may take in
// the detail, wherever the ratio is (the copier's or a follower's), and
// only then.
func TestRatioNotAStepListsTheSteps(t *testing.T) {
	t.Parallel()
	const steps = "a sizing ratio is one of 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 3, 4, 5, 6, 7, 8, 9, 10"
	for _, tc := range []struct {
		name   string
		change func(*protocol.Copier)
		steps  bool
	}{
		{"copier ratio", func(v *protocol.Copier) { v.Sizing.Ratio = 1.1 }, true},
		{"follower ratio", func(v *protocol.Copier) { v.Followers[0].Sizing = &protocol.Sizing{Ratio: 11} }, true},
		{"another fault only", func(v *protocol.Copier) { v.Leader = "" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := cpWith(cpCopier("", "A", "B"), tc.change)
			err := validateCopier(cpCreate(v, cpSnap(nil)))
			require.NotNil(t, err)
			require.Equal(t, errcode.ValidationFailed, err.Code)
			if tc.steps {
				require.Contains(t, err.Detail, steps)
			} else {
				require.NotContains(t, err.Detail, "sizing ratio")
			}
		})
	}
}

// account_not_found lists the caller's own accounts (bounded), whichever
// resource names the account, and says nothing of anyone else's.
func TestAccountNotFoundListsYourAccounts(t *testing.T) {
	t.Parallel()
	const yours = "; your accounts (names are case-sensitive): A, B, C, D, E, F, G, H"
	many := &Snapshot{}
	for i := range 25 {
		many.Connections = append(many.Connections, protocol.Connection{Name: "c", Accounts: []string{string(rune('a'+i)) + "x"}})
	}
	for _, tc := range []struct {
		name   string
		refuse func(*Snapshot) *httpapi.Error
		want   string
	}{
		{"copier", func(s *Snapshot) *httpapi.Error {
			return checkCopierAccounts(cpCreate(cpCopier("", "A", "sim101"), s), nil)
		}, yours},
		{"monitor", func(s *Snapshot) *httpapi.Error {
			m := monitorDefault()
			m.Account = "sim101"
			return monitorCheck(&Change[protocol.Monitor]{Op: OpCreate, New: &m, Snap: s, Family: FamilyDesktop})
		}, yours},
		{"group", func(s *Snapshot) *httpapi.Error {
			return checkGroup(&Change[protocol.AccountGroup]{Op: OpCreate, New: &protocol.AccountGroup{Name: "Team", Accounts: []string{"A", "sim101"}}, Snap: s})
		}, yours},
		{"no accounts", func(*Snapshot) *httpapi.Error {
			return checkCopierAccounts(cpCreate(cpCopier("", "A", "B"), &Snapshot{}), nil)
		}, "; your platform connections carry no account yet"},
		{"many accounts", func(*Snapshot) *httpapi.Error {
			return checkCopierAccounts(cpCreate(cpCopier("", "A", "B"), many), nil)
		}, ": ax, bx, cx, dx, ex, fx, gx, hx, ix, jx, kx, lx, mx, nx, ox, px, qx, rx, sx, tx and 5 more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.refuse(cpSnap(nil))
			require.NotNil(t, err)
			require.Equal(t, errcode.AccountNotFound, err.Code)
			require.True(t, strings.HasSuffix(err.Detail, tc.want), err.Detail)
			require.NotContains(t, err.Detail, "sim101", "the name sent is not repeated")
		})
	}
}

// A wrong_type says what the field wants, from the resource's Go type;
// the value sent is not repeated.
func TestWrongTypeSaysTheShape(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, tc := range []struct {
		name, path, body, detail string
	}{
		{"followers as a string", "/desktop/copiers", `{"leader":"Sim101","followers":"Sim102"}`,
			"followers wants a list of {account, sizing, inverse} objects"},
		{"a follower as a string", "/desktop/copiers", `{"leader":"Sim101","followers":["Sim102"]}`,
			"followers.0 wants a {account, sizing, inverse} object"},
		{"a ratio as a string", "/desktop/copiers", `{"leader":"Sim101","followers":[{"account":"Sim102","sizing":{"ratio":"half"}}]}`,
			"followers.0.sizing.ratio wants a number"},
		{"a name as a number", "/desktop/account-groups", `{"name":5,"accounts":[true]}`,
			"accounts.0 wants a string; name wants a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(http.MethodPost, tc.path, tokElite, tc.body)
			require.Equal(t, http.StatusUnprocessableEntity, r.Code, string(r.Body))
			b := r.body(t)
			require.Equal(t, errcode.ValidationFailed, b.Error)
			require.Contains(t, b.Detail, tc.detail)
			require.NotContains(t, b.Detail, "Sim102")
			require.NotContains(t, b.Detail, "half")
		})
	}
}
