package manage

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"tradebridge/relay/errcode"
)

// fuzzRoutes are the changes FuzzManageBody sends its bodies to.
var fuzzRoutes = []struct{ method, path string }{
	{http.MethodPost, "/desktop/copiers"},
	{http.MethodPost, "/desktop/monitors"},
	{http.MethodPost, "/desktop/account-groups"},
	{http.MethodPost, "/desktop/atm-templates"},
	{http.MethodPatch, "/controls"},
	{http.MethodPut, "/news-lockout"},
	{http.MethodPatch, "/news-lockout"},
	{http.MethodPatch, "/desktop/connection-settings"},
}

// FuzzManageBody sends arbitrary bodies to every kind's create or change
// through the whole handler: nothing panics, every answer is JSON with a
// code of the one list, and whatever is accepted can be sent back as read
// (a GET body is a valid PATCH that changes nothing).
func FuzzManageBody(f *testing.F) {
	for _, seed := range []string{
		`{"leader":"Sim101","followers":[{"account":"Sim102","sizing":{"ratio":0.5}}],"instruments":["es"],"symbolReplacements":[{"from":"ES","to":"MES"}]}`,
		`{"account":"Sim101","lossLimit":{"enabled":true,"amount":500},"masterWindow":{"days":["mon"],"start":"09:30","end":"16:00"},"closingOnlyAfter":"15:30"}`,
		`{"name":"Group","destination":"desktop","accounts":["Sim101"]}`,
		`{"name":"Scalp","config":{"quantity":2,"timeInForce":"gtc","brackets":[{"quantity":2,"stopLossTicks":8,"profitTargetTicks":16}]}}`,
		`{"flattenOnKill":true,"blockAllSignals":false}`,
		`{"enabled":true,"events":[{"at":"2026-12-04T13:30:00Z","title":"NFP","impact":"high"}],"roots":["es"],"action":"flatten"}`,
		`{"connections":[{"name":"Sim","autoReconnect":false,"dataWatchdogSeconds":30}]}`,
		`{"tradingWindows":[{"enabled":true,"days":["sun"],"start":"23:00","end":"01:00"},{"enabled":true,"start":"00:30","end":"02:00"}]}`,
		`{"id":"x","state":null,"followers":[{"account":"Sim102"},{"account":"Sim102"}]}`,
	} {
		for i := range fuzzRoutes {
			f.Add(uint8(i), seed)
		}
	}
	e := newEnv(f, nil)
	send := func(method, path, body string) (int, map[string]json.RawMessage) {
		r := httptest.NewRequest(method, "http://relay"+Prefix+path, strings.NewReader(body))
		r.RemoteAddr = "192.0.2.1:1234"
		r.Header.Set("Authorization", "Bearer "+tokElite)
		r.Header.Set("Content-Type", "application/json")
		e.clock.Advance(e.tick)
		w := httptest.NewRecorder()
		e.mux.ServeHTTP(w, r)
		var out map[string]json.RawMessage
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			panic("the answer is not a JSON object: " + w.Body.String())
		}
		return w.Code, out
	}
	f.Fuzz(func(t *testing.T, route uint8, body string) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		status, out := send(rt.method, rt.path, body)
		if status >= 300 {
			var code string
			_ = json.Unmarshal(out["error"], &code)
			if !errcode.Known(code) {
				t.Fatalf("%s %s: %d with a code not in errcode.All", rt.method, rt.path, status)
			}
			if status == http.StatusInternalServerError {
				t.Fatalf("%s %s: 500 for a caller's body", rt.method, rt.path)
			}
			return
		}
		// Accepted: the resource as read, sent back, changes nothing.
		var data map[string]json.RawMessage
		if err := json.Unmarshal(out["data"], &data); err != nil {
			t.Fatalf("data is not an object: %v", err)
		}
		path := rt.path
		if rt.method == http.MethodPost {
			var id string
			_ = json.Unmarshal(data["id"], &id)
			path += "/" + id
		}
		_, got := send(http.MethodGet, path, "")
		back, _ := json.Marshal(got["data"])
		status, out = send(http.MethodPatch, path, string(back))
		if status != http.StatusOK || string(out["changed"]) != "false" {
			t.Fatalf("%s %s: sending the resource back answered %d %s", rt.method, rt.path, status, out["error"])
		}
		if rt.method == http.MethodPost {
			send(http.MethodDelete, path, "") // keep below the kinds' limits
		}
	})
}
