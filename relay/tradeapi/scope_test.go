package tradeapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/auth/authtest"
	"tradebridge/relay/errcode"
	"tradebridge/relay/tradeapi"
	"tradebridge/relay/tradecall"
)

// Every route of both families needs its function's scope: a read token
// is refused each route whose function writes (the flatten routes
// included) with 403 insufficient_scope and its challenge, reaching no
// agent, and passes every other route, POST /v1/api/market/bars among
// them. A new route in the table is covered with no other change.
func TestRouteScopes(t *testing.T) {
	t.Parallel()
	const read = "tb_api_read"
	for name, family := range map[string]string{"desktop": tradeapi.FamilyDesktop, "broker": tradeapi.FamilyBroker} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(o *tradeapi.Options) {
				o.Family = family
				o.Auth.(*authtest.Auth).Add(read,
					auth.Principal{UserID: "usr_pro", Plan: auth.PlanPro, Kind: auth.KindAPI, Scope: auth.ScopeRead})
			})
			routes := 0
			for _, ep := range tradecall.Endpoints() {
				path := ep.Path
				if family == tradeapi.FamilyBroker {
					path = strings.Replace(path, "/v1/api/", "/v1/api/tv/", 1)
					if !slices.Contains(e.routes, ep.Method+" "+path) {
						continue // the broker does not serve it
					}
				}
				routes++
				path = strings.NewReplacer("{account}", "Sim101", "{orderId}", "o-1", "{id}", "s-1").Replace(path)
				body := ""
				if ep.Method != http.MethodGet {
					body = "{}"
				}
				before := len(e.agent.all())
				r := e.do(ep.Method, path, read, body)
				f, _ := protocol.LookupFunction(ep.Fn)
				where := ep.Method + " " + path
				if f.Write {
					require.Equal(t, http.StatusForbidden, r.Status, "%s: %s", where, r.Raw)
					require.Equal(t, errcode.InsufficientScope, r.Body["error"], where)
					require.Equal(t, admit.ScopeChallenge(auth.ScopeTrade), r.Header.Get("WWW-Authenticate"), where)
					require.Len(t, e.agent.all(), before, "%s: nothing reached the agent", where)
					continue
				}
				require.NotEqual(t, errcode.InsufficientScope, r.Body["error"], "%s: %s", where, r.Raw)
			}
			require.Positive(t, routes)
		})
	}
}
