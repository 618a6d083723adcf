package manage

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/events"
	"tradebridge/relay/events/eventstest"
)

func configDetailOf(t *testing.T, e events.Event) configDetail {
	t.Helper()
	var d configDetail
	require.NoError(t, json.Unmarshal(e.Activity.Detail, &d))
	return d
}

// Each change stored is one config.changed entry of the token's user,
// source api with the token's id: a create lists the fields set, a PATCH
// the fields changed before and after, a DELETE the fields as they were;
// a request that changes nothing records nothing, nor does a refused
// one.
func TestChangesRecorded(t *testing.T) {
	t.Parallel()
	var pub eventstest.Collector
	e := newEnv(t, func(o *Options) { o.Events = &pub })
	id := e.createGroup(tokElite, "scalpers")
	evs := pub.All()
	require.Len(t, evs, 1)
	created := evs[0]
	assert.Equal(t, events.TypeActivity, created.Type)
	assert.Equal(t, "u1", created.UserID)
	assert.Empty(t, created.Ref)
	assert.Equal(t, protocol.ActivityConfigChanged, created.Activity.Kind)
	assert.Equal(t, protocol.ActivitySource{Kind: protocol.SourceAPI, ID: "ha"}, created.Activity.Source)
	assert.Equal(t, e.now, created.Activity.At)
	assert.Equal(t, "Created account-group "+id, created.Activity.Summary)
	d := configDetailOf(t, created)
	assert.Equal(t, "account-group", d.Resource)
	assert.Equal(t, id, d.ID)
	assert.Equal(t, ChangeCreate, d.Op)
	fields := map[string]FieldChange{}
	for _, c := range d.Changes {
		fields[c.Field] = c
	}
	assert.NotContains(t, fields, "id")
	assert.NotContains(t, fields, "createdAt")
	assert.Equal(t, `"scalpers"`, string(fields["name"].After))
	assert.Nil(t, fields["name"].Before)

	r := e.do(http.MethodPatch, "/desktop/account-groups/"+id, tokEliteB, `{"name":"swing","accounts":["Sim101","Sim102"]}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	evs = pub.All()
	require.Len(t, evs, 2)
	patched := evs[1]
	assert.Equal(t, "hb", patched.Activity.Source.ID, "the token that made the change")
	d = configDetailOf(t, patched)
	assert.Equal(t, ChangeUpdate, d.Op)
	assert.Equal(t, []FieldChange{
		{Field: "accounts", Before: json.RawMessage(`["Sim101"]`), After: json.RawMessage(`["Sim101","Sim102"]`)},
		{Field: "name", Before: json.RawMessage(`"scalpers"`), After: json.RawMessage(`"swing"`)},
	}, d.Changes)
	assert.Equal(t, "Updated account-group "+id+": accounts, name", patched.Activity.Summary)

	r = e.do(http.MethodPatch, "/desktop/account-groups/"+id, tokElite, `{"name":"swing"}`)
	require.Equal(t, http.StatusOK, r.Code)
	require.False(t, *r.body(t).Changed)
	r = e.do(http.MethodPatch, "/desktop/account-groups/"+id, tokElite, `{"accounts":"nope"}`)
	require.NotEqual(t, http.StatusOK, r.Code)
	require.Len(t, pub.All(), 2, "no change, no entry")

	r = e.do(http.MethodDelete, "/desktop/account-groups/"+id, tokElite, "")
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	evs = pub.All()
	require.Len(t, evs, 3)
	d = configDetailOf(t, evs[2])
	assert.Equal(t, ChangeDelete, d.Op)
	assert.Equal(t, "Deleted account-group "+id, evs[2].Activity.Summary)
	for _, c := range d.Changes {
		assert.Nil(t, c.After, c.Field)
		assert.NotNil(t, c.Before, c.Field)
	}
}

// The kill switch route records its change of the controls; a door that
// serves the routes in-process names its own source.
func TestKillSwitchRecorded(t *testing.T) {
	t.Parallel()
	var pub eventstest.Collector
	e := newEnv(t, func(o *Options) { o.Events = &pub })
	r := e.do(http.MethodPut, "/controls/kill-switch", tokElite, `{"enabled":true}`)
	require.Equal(t, http.StatusOK, r.Code, string(r.Body))
	evs := pub.All()
	require.Len(t, evs, 1)
	assert.Equal(t, "Kill switch turned on", evs[0].Activity.Summary)
	d := configDetailOf(t, evs[0])
	assert.Equal(t, "controls", d.Resource)
	assert.Equal(t, []FieldChange{{Field: "killSwitch", Before: json.RawMessage(`false`), After: json.RawMessage(`true`)}}, d.Changes)

	dashboard := protocol.ActivitySource{Kind: protocol.SourceDashboard, ID: "ses_1"}
	req, err := http.NewRequestWithContext(WithSource(context.Background(), dashboard), http.MethodPut,
		"http://relay"+Prefix+"/controls/kill-switch", strings.NewReader(`{"enabled":false}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tokElite)
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = "192.0.2.1:1234"
	w := httptest.NewRecorder()
	e.mux.ServeHTTP(w, req)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	evs = pub.All()
	require.Len(t, evs, 2)
	assert.Equal(t, dashboard, evs[1].Activity.Source)
	assert.Equal(t, "Kill switch turned off", evs[1].Activity.Summary)
}

// A secret field says that it changed, never its values; the meta fields
// are left out; an account field names the entry's account.
func TestConfigChangedEntry(t *testing.T) {
	t.Parallel()
	src := protocol.ActivitySource{Kind: protocol.SourceAPI, ID: "tok"}
	at := time.Date(2026, 11, 2, 15, 0, 0, 123456789, time.UTC)
	before := []byte(`{"id":"alr_1","updatedAt":"a","name":"ops","botToken":"sealed:one","account":"Sim101","events":["monitor.tripped"]}`)
	after := []byte(`{"id":"alr_1","updatedAt":"b","name":"ops","botToken":"sealed:two","account":"Sim101","events":["monitor.tripped","copier.halted"]}`)
	e, ok := ConfigChangedEntry("alert", "alr_1", ChangeUpdate, before, after, []string{"botToken"}, src, at)
	require.True(t, ok)
	assert.Equal(t, at.Truncate(time.Millisecond), e.At)
	assert.Equal(t, "Sim101", e.Account)
	assert.NotContains(t, string(e.Detail), "sealed")
	assert.NotContains(t, e.Summary, "sealed")
	var d configDetail
	require.NoError(t, json.Unmarshal(e.Detail, &d))
	assert.Equal(t, []FieldChange{
		{Field: "botToken", Changed: true},
		{Field: "events", Before: json.RawMessage(`["monitor.tripped"]`), After: json.RawMessage(`["monitor.tripped","copier.halted"]`)},
	}, d.Changes)

	e, ok = ConfigChangedEntry("alert", "alr_1", ChangeCreate, nil, after, []string{"botToken"}, src, at)
	require.True(t, ok)
	assert.NotContains(t, string(e.Detail), "sealed")
	assert.Contains(t, string(e.Detail), `{"field":"botToken","changed":true}`)

	_, ok = ConfigChangedEntry("alert", "alr_1", ChangeCreate, nil, []byte(`[1]`), nil, src, at)
	assert.False(t, ok, "not a resource")

	// Every kind names its secrets to the log: kindOps.secretFields.
}

// A change too large for the activity log shows only that its largest
// fields changed, within the bound; a long summary is cut.
func TestConfigChangedEntryBounds(t *testing.T) {
	t.Parallel()
	src := protocol.ActivitySource{Kind: protocol.SourceAPI}
	big := func(c string) string { return `"` + strings.Repeat(c, 5000) + `"` }
	before := []byte(`{"a":` + big("a") + `,"b":` + big("b") + `,"c":1}`)
	after := []byte(`{"a":` + big("A") + `,"b":` + big("B") + `,"c":2}`)
	e, ok := ConfigChangedEntry("copier", "cop_1", ChangeUpdate, before, after, nil, src, time.Now())
	require.True(t, ok)
	assert.LessOrEqual(t, len(e.Detail), protocol.MaxActivityDetail)
	var d configDetail
	require.NoError(t, json.Unmarshal(e.Detail, &d))
	require.Len(t, d.Changes, 3)
	assert.True(t, d.Changes[0].Changed)
	assert.Equal(t, FieldChange{Field: "c", Before: json.RawMessage(`1`), After: json.RawMessage(`2`)}, d.Changes[2])

	fields := make([]string, 0, 60)
	for i := range 60 {
		fields = append(fields, fmt.Sprintf(`"field%02d_%s":%d`, i, strings.Repeat("n", 30), i))
	}
	e, ok = ConfigChangedEntry("copier", "cop_1", ChangeUpdate, []byte(`{}`), []byte("{"+strings.Join(fields, ",")+"}"), nil, src, time.Now())
	require.True(t, ok)
	assert.LessOrEqual(t, utf8.RuneCountInString(e.Summary), protocol.MaxActivitySummary)
}
