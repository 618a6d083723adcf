package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/alerts"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/manage"
	"tradebridge/relay/store"
)

// builtEditor builds e for its kind or fails the test.
func builtEditor(t *testing.T, e Editor) *editor {
	t.Helper()
	ed, err := buildEditor(e, manage.Kinds())
	require.NoError(t, err)
	return ed
}

// The destinations' event checkboxes are the kinds the alerts package
// accepts, in its order, each in words; every activity kind and alert
// payload has words.
func TestActivityKindWords(t *testing.T) {
	t.Parallel()
	var values []string
	for _, c := range eventChoices() {
		values = append(values, c.Value)
		require.NotEqual(t, c.Value, c.Label, "%s has words", c.Value)
	}
	require.Equal(t, alerts.AlertableKinds, values)
	for _, k := range append(slices.Clone(protocol.ActivityKinds), alerts.PayloadTest, alerts.PayloadSummary) {
		require.NotEmpty(t, activityKindWords[k], "%s has no words", k)
	}
	require.Len(t, activityKindWords, len(protocol.ActivityKinds)+2, "no words for a kind that does not exist")
}

// Each condition of the settings' editors names a choice its field
// offers, so that the script and the parser agree with the select.
func TestConditionsNameChoices(t *testing.T) {
	t.Parallel()
	eds, err := buildEditors()
	require.NoError(t, err)
	for _, ed := range eds {
		check := func(what string, c *Condition) {
			if c == nil {
				return
			}
			f := ed.byPath[c.Field]
			require.NotNil(t, f, "%s %s", ed.Path, what)
			for _, v := range c.Values {
				require.True(t, slices.ContainsFunc(f.words.Choices, func(ch Choice) bool { return ch.Value == v }),
					"%s %s: %s is not a choice of %s", ed.Path, what, v, c.Field)
			}
		}
		for p, w := range ed.Words {
			check(p, w.OnlyIf)
		}
		for _, a := range ed.Actions {
			check(a.Name, a.OnlyIf)
		}
	}
}

// A condition, fixed rows or a panel that cannot work fails the build of
// the editor.
func TestCheckWordsRefusals(t *testing.T) {
	t.Parallel()
	kinds := manage.Kinds()
	for _, tc := range []struct {
		name   string
		change func(e *Editor)
		want   string
	}{
		{"a condition on a field the form lacks", func(e *Editor) {
			w := e.Words["url"]
			w.OnlyIf = &Condition{Field: "colour", Values: []string{"red"}}
			e.Words["url"] = w
		}, "url's condition names no top-level field"},
		{"a condition without values", func(e *Editor) {
			w := e.Words["to"]
			w.OnlyIf = &Condition{Field: "kind"}
			e.Words["to"] = w
		}, "to's condition names no top-level field of the form, or no value"},
		{"an action's condition on a field the form lacks", func(e *Editor) {
			e.Actions = []Action{{Name: "test", Button: "Send a test", OnlyIf: &Condition{Field: "hasSecret", Values: []string{"true"}}}}
		}, "the action test's condition"},
		{"fixed rows on a list of strings", func(e *Editor) {
			w := e.Words["events"]
			w.FixedRows = true
			e.Words["events"] = w
		}, "events has fixed rows but is no list of rows"},
		{"a panel without a loader", func(e *Editor) { e.Panel = &Panel{Name: "deliveries"} }, "the panel needs"},
		{"a panel named as the state block", func(e *Editor) { e.Panel = &Panel{Name: "state", Load: loadDeliveries} }, "the panel needs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := alertEditor()
			tc.change(&e)
			_, err := buildEditor(e, kinds)
			require.ErrorContains(t, err, tc.want)
		})
	}

	e := newsEditor()
	w := e.Words["events.*.title"]
	w.OnlyIf = &Condition{Field: "action", Values: []string{protocol.NewsBlock}}
	e.Words["events.*.title"] = w
	_, err := buildEditor(e, kinds)
	require.ErrorContains(t, err, "events.*.title has a condition, which only a top-level field may have")
}

// The fields of another kind of destination are neither sent nor
// refused: on create by the kind chosen, on edit by the kind the form
// loaded (the kind itself is not sent then).
func TestParseFormConditions(t *testing.T) {
	t.Parallel()
	ed := builtEditor(t, alertEditor())
	loaded := func(doc string) string { return encodeLoaded(ed, mustDoc(t, doc)) }
	for _, tc := range []struct {
		name   string
		form   url.Values
		create bool
		want   string
		errs   []httpapi.FieldError
	}{
		{
			name: "a telegram destination on create",
			form: url.Values{"kind": {"telegram"}, "name": {"chat"}, "active": {"true"}, "graceSeconds": {"60"}, "events": {"copier.halted"},
				"url": {"https://example.com"}, "botToken": {"123:abc"}, "chatId": {"-1001"}, "to": {"a@example.com"}},
			create: true,
			want:   `{"kind":"telegram","name":"chat","active":true,"graceSeconds":60,"events":["copier.halted"],"botToken":"123:abc","chatId":"-1001"}`,
		},
		{
			name: "a webhook's edit: the kind from the form loaded, the URL left empty is kept",
			form: url.Values{"name": {"desk"}, "graceSeconds": {"x"}, "events": {"monitor.tripped", "copier.halted"},
				"url": {""}, "chatId": {"junk"}, "to": {"junk"}, "loaded": {loaded(`{"kind":"webhook"}`)}},
			want: `{"name":"desk","active":false,"graceSeconds":"x","events":["monitor.tripped","copier.halted"]}`,
			errs: []httpapi.FieldError{{Path: "graceSeconds", Code: errcode.FieldCodeWrongType}},
		},
		{
			name:   "no kind chosen: every kind's fields are left out",
			form:   url.Values{"kind": {""}, "events": {}, "url": {"https://example.com"}, "chatId": {"1"}, "to": {"a@example.com"}},
			create: true,
			want:   `{"kind":"","name":"","active":false,"graceSeconds":0,"events":[]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, errs := ed.parseForm(tc.form, tc.create)
			got, err := json.Marshal(doc)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(got))
			require.ElementsMatch(t, tc.errs, errs)
		})
	}
}

// mustDoc decodes a JSON object.
func mustDoc(t *testing.T, s string) map[string]any {
	t.Helper()
	doc, err := decodeDoc([]byte(s))
	require.NoError(t, err)
	return doc
}

// Rendered, an edit form leaves out the fields of the other kinds of
// destination (its kind cannot change), and the actions that do not
// apply; a new form shows every field, each marked with its condition.
func TestFormConditions(t *testing.T) {
	t.Parallel()
	ed := builtEditor(t, alertEditor())
	names := func(fs []*formField) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Name)
		}
		return out
	}
	edit := (&formBuild{immutable: ed.kind.Immutable}).fieldsOf(ed.fields, mustDoc(t, `{"kind":"telegram","chatId":"-1"}`), "", true)
	require.Equal(t, []string{"kind", "name", "active", "graceSeconds", "events", "botToken", "chatId"}, names(edit))
	create := (&formBuild{create: true, immutable: ed.kind.Immutable}).fieldsOf(ed.fields, mustDoc(t, `{"kind":"telegram"}`), "", true)
	require.Equal(t, []string{"kind", "name", "active", "graceSeconds", "events", "url", "botToken", "chatId", "to"}, names(create))
	require.Equal(t, "webhook discord", create[5].OnlyIf.Join())

	s := &Server{}
	for kind, want := range map[string][]string{"webhook": {"test", "rotate-secret"}, "discord": {"test"}} {
		ev := ed.newView()
		s.formExtras(context.Background(), &session{}, ed, ev, mustDoc(t, `{"kind":"`+kind+`"}`))
		var got []string
		for _, a := range ev.Actions {
			got = append(got, a.Name)
		}
		require.Equal(t, want, got, kind)
		require.Nil(t, ev.Panel, "no panel on a new form")
	}
}

// A list of accounts whose accounts are not known is one line of
// comma-separated values; known, it is checkboxes of one value each.
func TestParseFormAccounts(t *testing.T) {
	t.Parallel()
	ed := builtEditor(t, groupEditor())
	doc, errs := ed.parseForm(url.Values{"name": {"g"}, "destination": {"desktop"}, "accounts": {" Sim101, Sim102 ,"}}, true)
	require.Empty(t, errs)
	require.Equal(t, []any{"Sim101", "Sim102"}, doc["accounts"])
	doc, _ = ed.parseForm(url.Values{"name": {"g"}, "accounts": {"Sim101", "Sim103"}}, false)
	require.Equal(t, map[string]any{"name": "g", "accounts": []any{"Sim101", "Sim103"}}, doc)
}

// A field's own words come before the general ones.
func TestFieldOwnWords(t *testing.T) {
	t.Parallel()
	ed := builtEditor(t, templateEditor())
	require.Equal(t, "The brackets' quantities must add up to the quantity above.",
		ed.fieldMessage(httpapi.FieldError{Path: "config.brackets", Code: errcode.FieldCodeOutOfRange}, nil))
	require.Equal(t, "Give at most 4.",
		ed.fieldMessage(httpapi.FieldError{Path: "config.brackets", Code: errcode.FieldCodeLessThanEqual, Limit: float64(4)}, nil))
	require.Equal(t, "This is out of range.",
		ed.fieldMessage(httpapi.FieldError{Path: "config.quantity", Code: errcode.FieldCodeOutOfRange}, nil))
}

// The connections' rows are the agent's: no blank row; their accounts
// are shown and never sent.
func TestConnectionRows(t *testing.T) {
	t.Parallel()
	ed := builtEditor(t, connectionsEditor())
	fs := (&formBuild{}).fieldsOf(ed.fields, mustDoc(t,
		`{"connections":[{"name":"Sim","accounts":["Sim101","Sim102"],"autoReconnect":true,"dataWatchdogSeconds":0}]}`), "", true)
	require.Len(t, fs, 1)
	require.True(t, fs[0].FixedRows)
	require.Len(t, fs[0].Rows, 1, "no blank row")
	require.Equal(t, "Sim101, Sim102", fs[0].Rows[0].Fields[1].Value)
	require.Equal(t, InputShown, fs[0].Rows[0].Fields[1].Input)

	doc, errs := ed.parseForm(url.Values{"connections.0.name": {"Sim"}, "connections.0.accounts": {"Sim9"},
		"connections.0.dataWatchdogSeconds": {"30"}}, false)
	require.Empty(t, errs)
	require.Equal(t, map[string]any{"connections": []any{map[string]any{"name": "Sim", "autoReconnect": false,
		"dataWatchdogSeconds": json.Number("30")}}}, doc)
}

// deliveryLog is an activity log of alert outcomes, paged as the store
// pages, counting its reads.
type deliveryLog struct {
	recs  []store.ActivityRecord // newest first
	reads int
	err   error
}

func (l *deliveryLog) ListActivity(_ context.Context, _ string, q store.ActivityQuery) ([]store.ActivityRecord, error) {
	l.reads++
	if l.err != nil {
		return nil, l.err
	}
	var out []store.ActivityRecord
	for _, r := range l.recs {
		if (q.Before != 0 && r.Seq >= q.Before) || !slices.Contains(q.Kinds, r.Kind) {
			continue
		}
		if out = append(out, r); len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

// outcome is an alert outcome entry of the log at seq.
func outcome(seq int64, kind, destinationID, alertKind, reason string) store.ActivityRecord {
	d := map[string]any{"destinationId": destinationID, "alertKind": alertKind, "attempts": 1}
	if reason != "" {
		d["error"] = reason
	}
	b, _ := json.Marshal(d)
	return store.ActivityRecord{Seq: seq, At: time.Unix(seq, 0), Kind: kind, Detail: b}
}

// The deliveries' filter: the destination's alert.sent and alert.failed
// entries, newest first, at most n, read page by page and no further
// than deliveriesScan entries.
func TestLastDeliveries(t *testing.T) {
	t.Parallel()
	const mine, other = "alr_mine", "alr_other"
	build := func(total int, mineEvery int) *deliveryLog {
		l := &deliveryLog{}
		for seq := int64(total); seq >= 1; seq-- {
			dst, kind, reason := other, protocol.ActivityAlertSent, ""
			if mineEvery > 0 && seq%int64(mineEvery) == 0 {
				dst = mine
			}
			if seq%2 == 1 {
				kind, reason = protocol.ActivityAlertFailed, "timeout"
			}
			l.recs = append(l.recs, outcome(seq, kind, dst, protocol.ActivityMonitorTripped, reason))
		}
		// Entries of other kinds naming the destination do not count.
		l.recs = append([]store.ActivityRecord{{Seq: int64(total + 1), Kind: protocol.ActivityConfigChanged,
			Detail: []byte(`{"destinationId":"alr_mine"}`)}}, l.recs...)
		return l
	}
	for _, tc := range []struct {
		name         string
		total, every int
		wantSeqs     []int64
		wantReads    int
	}{
		{name: "the newest ten of many", total: 300, every: 3,
			wantSeqs: []int64{300, 297, 294, 291, 288, 285, 282, 279, 276, 273}, wantReads: 1},
		{name: "spread over pages", total: 450, every: 40,
			wantSeqs: []int64{440, 400, 360, 320, 280, 240, 200, 160, 120, 80}, wantReads: 4},
		{name: "no further than the scan", total: 1200, every: 600, wantSeqs: []int64{1200}, wantReads: 5},
		{name: "none", total: 50, every: 0, wantReads: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := build(tc.total, tc.every)
			got, err := lastDeliveries(context.Background(), l, aliceIDForTest, mine, maxDeliveries)
			require.NoError(t, err)
			var seqs []int64
			for _, d := range got {
				at, perr := time.Parse(time.RFC3339, d.At)
				require.NoError(t, perr)
				seqs = append(seqs, at.Unix())
				if at.Unix()%2 == 1 {
					require.Equal(t, "failed", d.Outcome)
					require.Equal(t, "the destination did not answer in time", d.Error)
				} else {
					require.Equal(t, "sent", d.Outcome)
					require.Empty(t, d.Error)
				}
				require.Equal(t, "A monitor stopped an account", d.What)
			}
			require.Equal(t, tc.wantSeqs, seqs)
			require.Equal(t, tc.wantReads, l.reads)
		})
	}

	l := &deliveryLog{err: errors.New("the store is down")}
	_, err := lastDeliveries(context.Background(), l, aliceIDForTest, mine, maxDeliveries)
	require.Error(t, err)
}

// aliceIDForTest is a user id for the internal tests.
const aliceIDForTest = "usr_alice"

// A failed delivery's reason in words.
func TestDeliveryError(t *testing.T) {
	t.Parallel()
	for reason, want := range map[string]string{
		"http_500":            "the destination answered HTTP 500",
		"smtp_550":            "the email server answered 550",
		"address_not_allowed": "the URL's address is on a private network, which the relay does not send to",
		"":                    "not delivered",
		"something_new":       "something_new",
	} {
		require.Equal(t, want, deliveryError(reason), reason)
	}
}
