package admit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// Permits answers what a door's plan and gate steps would answer for a
// user admitted at another door: the plan's 403 with the door's code,
// then the gate's refusal, else nil.
func TestPermits(t *testing.T) {
	t.Parallel()
	door := &admit.Door{Name: "tv", Kind: auth.KindAPI, Plan: auth.PlanPro, PlanCode: errcode.PlanRequired,
		Gate: func(_ *http.Request, p auth.Principal) *httpapi.Error {
			if p.Withholds("tv") {
				return &httpapi.Error{Status: http.StatusForbidden, Code: errcode.PlanRequired, Detail: "withheld"}
			}
			return nil
		}}
	for _, tc := range []struct {
		name   string
		p      auth.Principal
		code   string
		detail string
	}{
		{"free plan", auth.Principal{UserID: "u", Plan: auth.PlanFree, Kind: auth.KindSession}, errcode.PlanRequired, "the user's plan does not include this"},
		{"pro plan", auth.Principal{UserID: "u", Plan: auth.PlanPro, Kind: auth.KindSession}, "", ""},
		{"elite plan", auth.Principal{UserID: "u", Plan: auth.PlanElite, Kind: auth.KindSession}, "", ""},
		{"feature withheld", auth.Principal{UserID: "u", Plan: auth.PlanElite, Kind: auth.KindSession, Withheld: []string{"tv"}}, errcode.PlanRequired, "withheld"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := door.Permits(httptest.NewRequest(http.MethodPost, "/app/broker/link", nil), tc.p)
			if tc.code == "" {
				require.Nil(t, e)
				return
			}
			require.NotNil(t, e)
			require.Equal(t, http.StatusForbidden, e.Status)
			require.Equal(t, tc.code, e.Code)
			require.Equal(t, tc.detail, e.Detail)
		})
	}
	require.Nil(t, (&admit.Door{}).Permits(httptest.NewRequest(http.MethodGet, "/", nil), auth.Principal{Plan: auth.PlanFree}),
		"a door of every plan and no gate permits everyone")
}
