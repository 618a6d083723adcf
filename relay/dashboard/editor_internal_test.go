package dashboard

import (
	"encoding/json"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/manage"
)

// writableLeaves lists the dotted schema paths of every field of t that
// a form could set ("*" for a list's rows), as encoding/json names them,
// minus the top-level fields in skip. It is written apart from the
// engine's schema on purpose: the test compares the two.
func writableLeaves(t reflect.Type, prefix string, skip map[string]bool, out map[string]bool) {
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && name == "" {
				walk(f.Type)
				continue
			}
			if name == "" {
				name = f.Name
			}
			if prefix == "" && skip[name] {
				continue
			}
			path := joinDot(prefix, name)
			out[path] = true
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft == timeType:
			case ft.Kind() == reflect.Struct:
				writableLeaves(ft, path, skip, out)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				writableLeaves(ft.Elem(), path+".*", skip, out)
			}
		}
	}
	walk(t)
}

// Every editor's schema is its kind's type: every writable JSON field
// of the type has words (and an input, unless its words omit it), no
// words or input name a field the type lacks, and read-only and
// not-applicable fields have no input.
func TestEditorSchemas(t *testing.T) {
	t.Parallel()
	eds, err := buildEditors()
	require.NoError(t, err)
	require.NotEmpty(t, eds)
	for _, ed := range eds {
		skip := map[string]bool{}
		for _, f := range append(slices.Clone(ed.kind.ReadOnly), ed.kind.NotApplicable...) {
			skip[f] = true
		}
		want := map[string]bool{}
		writableLeaves(ed.kind.Type, "", skip, want)
		for p := range want {
			w, ok := ed.Words[p]
			require.True(t, ok, "%s: %s has no words", ed.Path, p)
			if w.Omit {
				continue
			}
			if strings.Count(p, ".") > 0 && ed.Words[p[:strings.LastIndexByte(p, '.')]].Omit {
				continue
			}
			require.NotNil(t, ed.byPath[p], "%s: %s has no input", ed.Path, p)
			require.NotEmpty(t, w.Label, "%s: %s has no label", ed.Path, p)
		}
		for p := range ed.Words {
			require.True(t, want[p], "%s: words for %s, which the type lacks or callers may not set", ed.Path, p)
		}
		for p := range ed.byPath {
			require.True(t, want[p], "%s: an input for %s, which the type lacks", ed.Path, p)
		}
		for _, f := range append(slices.Clone(ed.kind.ReadOnly), ed.kind.NotApplicable...) {
			require.Nil(t, ed.byPath[f], "%s: %s may not be set, yet has an input", ed.Path, f)
		}
	}
}

// A field added to a type without words fails the build of its editor,
// and so do words for a field the type lacks.
func TestEditorSchemaRefusals(t *testing.T) {
	t.Parallel()
	kinds := manage.Kinds()
	words := copierWords()
	delete(words, "followers.*.inverse")
	_, err := buildEditor(Editor{Path: "desktop/copiers", Words: words}, kinds)
	require.ErrorContains(t, err, "followers.*.inverse has no words")

	words = copierWords()
	words["followers.*.colour"] = Words{Label: "Colour"}
	_, err = buildEditor(Editor{Path: "desktop/copiers", Words: words}, kinds)
	require.ErrorContains(t, err, "followers.*.colour")

	words = copierWords()
	words["state"] = Words{Label: "State"}
	_, err = buildEditor(Editor{Path: "desktop/copiers", Words: words}, kinds)
	require.ErrorContains(t, err, "words for state", "a read-only field has no input")

	_, err = buildEditor(Editor{Path: "desktop/nothing", Words: words}, kinds)
	require.Error(t, err)

	// The broker copier has no copyMode: its words must not name it.
	_, err = buildEditor(Editor{Path: "tv/copiers", Words: copierWords()}, kinds)
	require.ErrorContains(t, err, "words for copyMode")
}

// Every field code has words, and every error code of the relay a
// sentence.
func TestErrorWords(t *testing.T) {
	t.Parallel()
	for _, e := range errcode.Fields {
		fn, ok := fieldCodeWords[e.Code]
		require.True(t, ok, "field code %s has no words", e.Code)
		require.NotEmpty(t, fn(httpapi.FieldError{Code: e.Code}, nil), e.Code)
	}
	for _, e := range errcode.All {
		s, ok := errorWords[e.Code]
		require.True(t, ok, "error code %s has no sentence", e.Code)
		require.True(t, strings.HasSuffix(s, "."), "%s: %q is a sentence", e.Code, s)
	}
	for code := range errorWords {
		require.True(t, slices.ContainsFunc(errcode.All, func(e errcode.Entry) bool { return e.Code == code }), "a sentence for %s, no code", code)
	}
}

// The ratio's choices are the Management API's steps, and its words name
// them.
func TestRatioChoices(t *testing.T) {
	t.Parallel()
	var values []string
	for _, c := range ratioChoices() {
		values = append(values, c.Value)
	}
	require.Equal(t, []string{"0.25", "0.5", "0.75", "1", "1.25", "1.5", "1.75", "2", "3", "4", "5", "6", "7", "8", "9", "10"}, values)
	require.Equal(t, "0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, or 2 to 10 in whole steps", ratioSteps())
}

// copierEd returns the desktop copiers' editor.
func copierEd(t *testing.T) *editor {
	t.Helper()
	ed, err := buildEditor(copierEditor(manage.FamilyDesktop), manage.Kinds())
	require.NoError(t, err)
	return ed
}

// The form's values become the resource's JSON by the schema: numbers
// parsed, unchecked boxes false, lists split, blank and removed rows
// dropped and the rest renumbered, an empty optional group left out.
func TestParseForm(t *testing.T) {
	t.Parallel()
	ed := copierEd(t)
	for _, tc := range []struct {
		name   string
		form   url.Values
		create bool
		want   string
		errs   []httpapi.FieldError
	}{
		{
			name: "a copier at ratio 2",
			form: url.Values{"leader": {"Sim101"}, "followers.0.account": {"Sim102"}, "followers.0.sizing.ratio": {""},
				"followers.1.account": {""}, "sizing.ratio": {"2"}, "copyMode": {"order"}, "active": {"true"},
				"instruments": {" es, NQ ,, "}, "autoSyncSeconds": {""}},
			want: `{"active":true,"autoSync":false,"autoSyncSeconds":0,"copyMode":"order","followers":[{"account":"Sim102","inverse":false}],
				"instruments":["es","NQ"],"leader":"Sim101","sizing":{"ratio":2},"symbolReplacements":[],"tandem":false}`,
		},
		{
			name: "rows removed, blank and renumbered; a follower's own ratio",
			form: url.Values{"leader": {"Sim101"}, "followers.0.account": {"Sim102"}, "followers.0._remove": {"true"},
				"followers.3.account": {"Sim103"}, "followers.3.sizing.ratio": {"0.5"}, "followers.3.inverse": {"true"},
				"followers.7.account": {""}, "followers.07.account": {"Sim999"}, "sizing.ratio": {"1"}, "copyMode": {"execution"},
				"symbolReplacements.0.from": {"ES"}, "symbolReplacements.0.to": {"MES"}},
			want: `{"active":false,"autoSync":false,"autoSyncSeconds":0,"copyMode":"execution",
				"followers":[{"account":"Sim103","inverse":true,"sizing":{"ratio":0.5}}],
				"instruments":[],"leader":"Sim101","sizing":{"ratio":1},"symbolReplacements":[{"from":"ES","to":"MES"}],"tandem":false}`,
		},
		{
			name: "not numbers are field errors at their JSON paths, kept as typed",
			form: url.Values{"leader": {"Sim101"}, "followers.0.account": {""}, "followers.4.account": {"Sim102"},
				"followers.4.sizing.ratio": {"two"}, "sizing.ratio": {"1e400"}, "autoSyncSeconds": {"3.5"}, "copyMode": {"order"}},
			want: `{"active":false,"autoSync":false,"autoSyncSeconds":"3.5","copyMode":"order",
				"followers":[{"account":"Sim102","inverse":false,"sizing":{"ratio":"two"}}],
				"instruments":[],"leader":"Sim101","sizing":{"ratio":"1e400"},"symbolReplacements":[],"tandem":false}`,
			errs: []httpapi.FieldError{{Path: "followers.0.sizing.ratio", Code: errcode.FieldCodeWrongType},
				{Path: "sizing.ratio", Code: errcode.FieldCodeWrongType}, {Path: "autoSyncSeconds", Code: errcode.FieldCodeWrongType}},
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

// Immutable fields are sent on create only; secrets only when typed.
func TestParseFormImmutableAndSecret(t *testing.T) {
	t.Parallel()
	type res struct {
		protocol.Meta
		Kind  string `json:"kind"`
		Token string `json:"token"`
		Note  string `json:"note"`
	}
	ed := &editor{Editor: Editor{Words: map[string]Words{"kind": {Label: "Kind"}, "token": {Label: "Token"}, "note": {Label: "Note"}}},
		kind: manage.KindInfo{Type: reflect.TypeFor[res](), ReadOnly: []string{"id", "createdAt", "updatedAt"},
			Immutable: []string{"kind"}, Secret: []string{"token"}}, byPath: map[string]*schemaField{}}
	var problems []string
	ed.fields = ed.schema(ed.kind.Type, "", map[string]bool{"id": true, "createdAt": true, "updatedAt": true}, map[string]bool{}, &problems)
	require.Empty(t, problems)
	require.Equal(t, InputSecret, ed.byPath["token"].input)

	form := url.Values{"kind": {"webhook"}, "token": {""}, "note": {" hi "}}
	doc, errs := ed.parseForm(form, true)
	require.Empty(t, errs)
	require.Equal(t, map[string]any{"kind": "webhook", "note": "hi"}, doc)
	doc, _ = ed.parseForm(form, false)
	require.Equal(t, map[string]any{"note": "hi"}, doc, "an immutable field is not sent on edit")
	form.Set("token", " s3cret ")
	doc, _ = ed.parseForm(form, false)
	require.Equal(t, map[string]any{"note": "hi", "token": " s3cret "}, doc, "a secret is sent as typed")

	// A secret is never rendered back.
	b := &formBuild{}
	fs := b.fieldsOf(ed.fields, map[string]any{"kind": "webhook", "token": "s3cret", "note": "hi"}, "", true)
	for _, f := range fs {
		require.NotContains(t, f.Value, "s3cret")
	}
	require.True(t, fs[0].Locked, "an immutable field is shown locked on edit")
}

// What changed since the form was loaded is listed by label, rows by
// number.
func TestChanges(t *testing.T) {
	t.Parallel()
	ed := copierEd(t)
	was, err := decodeDoc([]byte(`{"leader":"Sim101","active":true,"sizing":{"ratio":1},"followers":[{"account":"Sim102","inverse":false}],"instruments":["ES"],"copyMode":"order"}`))
	require.NoError(t, err)
	now, err := decodeDoc([]byte(`{"leader":"Sim101","active":false,"sizing":{"ratio":2},"followers":[{"account":"Sim102","inverse":true},{"account":"Sim103"}],"instruments":["ES","NQ"],"copyMode":"order"}`))
	require.NoError(t, err)
	require.Equal(t, []fieldChange{
		{Label: "On", Was: "on", Now: "off"},
		{Label: "Followers, row 1, Inverse", Was: "off", Now: "on"},
		{Label: "Followers, row 2", Was: "(none)", Now: "added"},
		{Label: "Sizing, Ratio", Was: "× 1", Now: "× 2"},
		{Label: "Instruments", Was: "ES", Now: "ES, NQ"},
	}, ed.changes(was, now))
}

// Field errors land next to the input their path names, or the nearest
// list or group that holds it; an item of a text list is named.
func TestPlaceErrors(t *testing.T) {
	t.Parallel()
	ed := copierEd(t)
	doc, err := decodeDoc([]byte(`{"leader":"Sim101","followers":[{"account":"Sim102"}],"sizing":{"ratio":2.3},"instruments":["ES","TOOLONGX"],"copyMode":"order"}`))
	require.NoError(t, err)
	fs := (&formBuild{}).fieldsOf(ed.fields, doc, "", true)
	loose := ed.place(fs, doc, []httpapi.FieldError{
		{Path: "sizing.ratio", Code: errcode.FieldCodeRatioNotAStep},
		{Path: "instruments.1", Code: errcode.FieldCodeStringPatternMismatch, Pattern: `^[A-Za-z0-9]{1,6}$`},
		{Path: "followers.0.account", Code: errcode.CopierCycle},
		{Path: "followers", Code: errcode.FieldCodeLessThanEqual, Limit: float64(20)},
		{Path: "", Code: errcode.FieldCodeWrongType},
	})
	byName := indexFields(fs)
	require.Contains(t, byName["sizing.ratio"].Error, "The ratio must be one of 0.25")
	require.Equal(t, "error-sizing.ratio", byName["sizing.ratio"].ErrorID())
	require.Contains(t, byName["sizing.ratio"].DescribedBy(), "error-sizing.ratio")
	require.Equal(t, "\u201cTOOLONGX\u201d: Use an instrument root of 1 to 6 letters or digits, such as ES.", byName["instruments"].Error)
	require.Equal(t, "Copying to this account would close a loop back to the leader.", byName["followers.0.account"].Error)
	require.Equal(t, "Give at most 20.", byName["followers"].Error)
	require.Equal(t, []string{"This value is not of the right kind."}, loose)
}

// A limit's figure on a monitor's page: a P&L limit's amount, a
// minimum-profit floor with its trigger.
func TestLimitAmount(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		lim  map[string]any
		want string
	}{
		{map[string]any{"enabled": true, "amount": json.Number("50")}, "50.00"},
		{map[string]any{"enabled": false, "amount": float64(0)}, "0.00"},
		{map[string]any{"enabled": true, "trigger": json.Number("300"), "floor": json.Number("100")}, "100.00 once 300.00 is reached"},
		{map[string]any{"enabled": true, "trigger": float64(300)}, "—"},
		{nil, "—"},
	} {
		require.Equal(t, c.want, limitAmount(c.lim), "%v", c.lim)
	}
}
