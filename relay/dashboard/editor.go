package dashboard

// The editor engine: one form engine for every kind of management
// resource, over the Management API run in process with the session's
// user (Manage.Invoke, Manage.InvokeIf). It writes no rule of the API a
// second time: the forms send what the trader typed, and the API's
// answer (a 422's fields, a 409's code, a 412, a 429) is put into words.
//
// # Adding an editor
//
// An editor is one Editor value in the table editorTable (editors.go):
//
//	{
//		Path:    "desktop/copiers",  // the Management API path of the kind
//		Title:   "Copiers", Noun: "copier", Nav: "copiers",
//		Words:   copierWords,        // one Words per field, by schema path
//		Columns: []Column{…},        // the list's columns
//		Accounts: AccountsDesktop,   // where account choices come from
//		Actions:  []Action{{Name: "restart", Button: "Restart"}},
//	}
//
// The form's schema is the kind's Go type (manage.Kinds: its JSON names,
// Go types, nested structs and slices), minus the kind's read-only and
// not-applicable fields. Each remaining field needs Words, keyed by its
// dotted path with "*" for a list's rows ("followers.*.sizing.ratio"):
// buildEditor refuses a field without words and words without a field,
// and TestEditorSchemas runs it over the whole table, so a field added to
// a type shows in the forms or fails the tests. A later OpenAPI document of
// the Management API can replace the reflection; the words stay.
//
// The input a field gets follows its Go type unless Words.Input says
// otherwise: a bool is a checkbox (unchecked means false: the form holds
// the whole editable object), a number a text input parsed as a
// number, a string a text input, a []string one text input of
// comma-separated values (InputList) or checkboxes (InputChecks,
// InputDays), a struct a group of inputs (InputGroup, or InputInline
// without a frame), a pointer to a struct an optional group (left empty,
// it is not sent), a slice of structs repeated rows (InputRows) with a
// "Remove" checkbox each, one blank row always there and an "Add a row"
// button the script adds. Choices make a select; InputAccount is a
// select of the agent's (or broker login's) accounts when known, else
// free text. Inputs are named by the field's dotted path
// ("followers.0.sizing.ratio").
//
// Words may also: show and send a top-level field only while another
// holds some values (OnlyIf: an alert destination's url for a webhook or
// Discord; the script hides the others, the parser leaves them out, and a
// form whose deciding field is locked does not show them); say an error
// code in the field's own words (Errors); make a list's rows the
// resource's own (FixedRows: the connections the agent reports, with no
// blank row, "Add a row" or "Remove"). InputShown shows a value and never
// sends it (a connection's accounts). An Action's OnlyIf shows its button
// only on the resources it holds for ("Rotate secret": webhooks);
// Editor.AccountsFrom picks the account choices by a field of the
// resource (an account group's destination); Editor.Panel adds a block of
// the kind's own under a resource's form, also served alone at
// GET /app/manage/<path>/{id}/<name> for live updates (an alert
// destination's last deliveries).
//
// # Routes (for a collection at /app/manage/<path>; a singleton has the
// first GET and POST only)
//
//	GET  /app/manage/<path>                 the list (a collection) or the form (a singleton)
//	GET  /app/manage/<path>/new             the empty form: the kind's defaults
//	POST /app/manage/<path>                 create (a singleton: save)
//	GET  /app/manage/<path>/{id}            the edit form
//	POST /app/manage/<path>/{id}            save: PATCH of the top-level fields that differ
//	                                        from what the form showed (hidden input loaded),
//	                                        If-Match the ETag it showed (hidden input etag);
//	                                        nothing is sent when nothing differs
//	POST /app/manage/<path>/{id}/delete     asks to confirm, then deletes (confirm=yes)
//	POST /app/manage/<path>/{id}/{action}   one of the kind's actions
//	GET  /app/manage/<path>/{id}/state      the resource's state block alone (live updates)
//	GET  /app/manage/<path>/{id}/pnl        a monitor's P&L block alone (StateWords.Pnl)
//
// # Answers in words
//
// A 422's fields are shown next to the inputs their paths name
// (p.field-error#error-<path>, and aria-invalid and aria-describedby on
// the input), one sentence per field code (fieldCodeWords); a value that
// is not a number is such an error before anything is sent. A 412 reads
// the resource again, shows it, and lists what changed since the form
// was loaded (hidden input loaded) and that nothing was saved. Other
// refusals are one sentence per code (errorWords); a 429 says when to try
// again and sets Retry-After; a plan without the Management API gets a
// page saying so.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/manage"
)

// Inputs a field may have (Words.Input).
const (
	InputText     = "text"     // a line of text
	InputNumber   = "number"   // a number, typed; parsed before anything is sent
	InputCheckbox = "checkbox" // a bool
	InputSelect   = "select"   // one of Words.Choices
	InputList     = "list"     // a []string as one line of comma-separated values
	InputChecks   = "checks"   // a []string as checkboxes of Words.Choices
	InputDays     = "days"     // a []string of days as checkboxes, Monday first
	InputTime     = "time"     // a time of day, "HH:MM" (New York)
	InputDateTime = "datetime" // a time.Time, typed in New York time
	InputEmail    = "email"    // an email address
	InputURL      = "url"      // a URL
	InputSecret   = "secret"   // written, never shown back; left empty, it is kept
	InputAccount  = "account"  // an account: a select of the known accounts, else text
	InputAccounts = "accounts" // a []string of accounts: checkboxes of the known ones, else a list
	InputFixed    = "fixed"    // shown as text and sent back as it is
	InputGroup    = "group"    // a struct: its fields in a frame with a legend
	InputInline   = "inline"   // a struct: its fields without a frame
	InputRows     = "rows"     // a slice of structs: repeated rows
	InputShown    = "shown"    // shown as text, never sent (what the agent reports)
)

// Where an editor's account choices come from (Editor.Accounts).
const (
	AccountsDesktop = "desktop" // the agent's platform connections
	AccountsBroker  = "broker"  // the linked broker login
)

// Words are what a form says of one field of a resource.
type Words struct {
	// Label names the field next to its input.
	Label string
	// Help is a sentence under it; optional.
	Help string
	// Input overrides the input the field's Go type picks (Input…).
	Input string
	// Choices are a select's options or the checkboxes' (value, label).
	Choices []Choice
	// Placeholder is an example shown in an empty text input.
	Placeholder string
	// Omit keeps a top-level field out of the form: not shown, not sent
	// (the controls' kill switch, which has its own control). A field
	// inside a list's rows must not be omitted: a save replaces the rows.
	Omit bool
	// OnlyIf, when set on a top-level field, shows and sends the field
	// only while the resource's field it names holds one of its values
	// (an alert destination's url for the kinds webhook and discord).
	OnlyIf *Condition
	// Errors are the field's own sentences by error code, said instead
	// of the general ones ("config.brackets" out_of_range: the brackets
	// must add up to the quantity).
	Errors map[string]string
	// FixedRows shows a list's rows as the resource has them, without a
	// blank row, "Add a row" or "Remove": rows the agent reports (the
	// platform's connections), whose other fields the trader edits.
	FixedRows bool
}

// Condition is what a resource's field must hold for a field or an
// action to apply (Words.OnlyIf, Action.OnlyIf).
type Condition struct {
	// Field is the JSON name of a top-level field of the resource.
	Field string
	// Values are the values for which it applies.
	Values []string
}

// holds reports whether doc's field holds one of c's values.
func (c *Condition) holds(doc map[string]any) bool {
	return c == nil || slices.Contains(c.Values, shownString(doc[c.Field]))
}

// Join is c's values, space-separated (the page's data-if-values).
func (c *Condition) Join() string { return strings.Join(c.Values, " ") }

// Choice is one option of a select or one checkbox of a list.
type Choice struct {
	Value, Label string
}

// Column is one column of a collection's list.
type Column struct {
	// Label is the column's heading.
	Label string
	// Value shows a resource's cell (the resource as the Management API
	// shows it, numbers as json.Number).
	Value func(res map[string]any) string
}

// Action is a button of one of the kind's actions (POST {id}/{name}).
type Action struct {
	// Name is the action's name in the Management API ("restart").
	Name string
	// Button is the button's text ("Restart").
	Button string
	// Done is what the page says after it ("Restarted.").
	Done string
	// Help is a sentence next to the button; optional.
	Help string
	// When, when set, shows the button only while the resource is in
	// this state, inside its live state block ("stopped"); else the
	// button is always under the form.
	When string
	// OnlyIf, when set, shows the button only on the resources it holds
	// for (an alert destination's "Rotate secret": webhooks only).
	OnlyIf *Condition
}

// StateWords say where a resource's state is and how to name it.
type StateWords struct {
	// Field, Reason and At are the JSON names of the state, its reason
	// and since when ("state", "haltedReason", "haltedAt").
	Field, Reason, At string
	// Names are the states' words ("halted": "Halted").
	Names map[string]string
	// Reasons are the reasons' words ("lossLimit": "the loss limit was
	// reached"); a reason without words is shown as it is.
	Reasons map[string]string
	// Pnl, when set, is the JSON name of the field holding the account
	// whose monitor's session P&L and session high (the trailing
	// drawdown's watermark), as the agent's engine counts them, the block
	// shows, live.
	Pnl string
	// Limits are the P&L limits shown with it: fields of type
	// protocol.Limit (Value) and their words (Label).
	Limits []Choice
	// Blind, when set, is the JSON name of a flag that qualifies the
	// state when true (a monitor's "blind"); BlindWords say it, shown as
	// the state's reason.
	Blind, BlindWords string
}

// Editor is one editor of the table: the kind it edits and the words its
// forms use.
type Editor struct {
	// Path is the Management API path of the kind ("desktop/copiers",
	// "controls"); the editor's pages are under /app/manage/<Path>.
	Path string
	// Title heads the list (or a singleton's form): "Copiers". Noun names
	// one resource: "copier".
	Title, Noun string
	// Nav names the page in the navigation ("copiers").
	Nav string
	// Intro is a sentence under the heading; optional.
	Intro string
	// Words are the fields' words by schema path.
	Words map[string]Words
	// Columns are the list's columns (a collection).
	Columns []Column
	// Accounts is where the account choices come from: AccountsDesktop,
	// AccountsBroker, or "" for none.
	Accounts string
	// Actions are the buttons of the kind's actions.
	Actions []Action
	// State, when set, shows the resource's state above the form.
	State *StateWords
	// Once names the members an answer of a create or action may add to
	// the resource, shown once ("secret": "Signing secret").
	Once map[string]string
	// AccountsFrom, when set, is the JSON name of the field whose value
	// picks a resource's account choices (an account group's
	// destination): protocol.DestinationDesktop the agent's accounts,
	// protocol.DestinationBroker the broker login's; while it is not
	// chosen, both. Accounts is then unused.
	AccountsFrom string
	// Panel, when set, is a block of the kind's own shown under a
	// resource's form (an alert destination's last deliveries).
	Panel *Panel
}

// Panel is a block of a kind's own under a resource's form, also served
// alone at GET /app/manage/<path>/{id}/<Name> for the page's live
// updates. Its template is the block of templates/manage-form.html named
// Name, listed in the block "panel".
type Panel struct {
	// Name names the block's template and its route ("deliveries").
	Name string
	// Load returns the block's data for the user's resource id.
	Load func(ctx context.Context, s *Server, userID, id string) any
}

// editor is an Editor with the kind it edits and the form's schema.
type editor struct {
	Editor
	kind manage.KindInfo
	// base is the editor's URL: /app/manage/<Path>.
	base   string
	fields []*schemaField
	// byPath finds a field by its schema path ("followers.*.account").
	byPath map[string]*schemaField
}

// fieldType is what a field holds.
type fieldType int

const (
	tBool fieldType = iota
	tInt
	tFloat
	tString
	tTime
	tStrings
	tObject
	tRows
)

// schemaField is one field of a form's schema.
type schemaField struct {
	// name is the JSON name; path the schema path ("followers.*.account").
	name, path string
	typ        fieldType
	// optional: a pointer to a struct, left out when its inputs are empty.
	optional bool
	words    Words
	input    string
	// fields are an object's or a row's fields.
	fields    []*schemaField
	immutable bool
	secret    bool
	// required: a create must send it (top-level fields only).
	required bool
}

var timeType = reflect.TypeFor[time.Time]()

// buildEditor makes an editor of e for its kind: the schema from the
// kind's Go type and e's words. A writable field without words, words
// naming no field and a field of a type the forms cannot edit are errors.
func buildEditor(e Editor, kinds []manage.KindInfo) (*editor, error) {
	ed := &editor{Editor: e, base: "/app/manage/" + e.Path, byPath: map[string]*schemaField{}}
	found := false
	for _, k := range kinds {
		if k.Path == e.Path {
			ed.kind, found = k, true
		}
	}
	if !found {
		return nil, fmt.Errorf("dashboard: editor %s: no such kind of the Management API", e.Path)
	}
	skip := map[string]bool{}
	for _, f := range append(slices.Clone(ed.kind.ReadOnly), ed.kind.NotApplicable...) {
		skip[f] = true
	}
	used := map[string]bool{}
	var problems []string
	ed.fields = ed.schema(ed.kind.Type, "", skip, used, &problems)
	for p := range e.Words {
		if !used[p] {
			problems = append(problems, "words for "+p+", which names no writable field")
		}
	}
	problems = append(problems, ed.checkWords()...)
	if len(problems) > 0 {
		sort.Strings(problems)
		return nil, fmt.Errorf("dashboard: editor %s: %s", e.Path, strings.Join(problems, "; "))
	}
	return ed, nil
}

// schema returns the fields of struct type t under the schema path
// prefix; skip names the top-level fields left out.
func (ed *editor) schema(t reflect.Type, prefix string, skip, used map[string]bool, problems *[]string) []*schemaField {
	var out []*schemaField
	for _, sf := range jsonFieldsOf(t) {
		if prefix == "" && skip[sf.name] {
			continue
		}
		path := joinDot(prefix, sf.name)
		w, ok := ed.Words[path]
		used[path] = true
		if !ok {
			*problems = append(*problems, path+" has no words")
			continue
		}
		if w.Omit {
			continue
		}
		f := &schemaField{name: sf.name, path: path, words: w, input: w.Input,
			immutable: prefix == "" && slices.Contains(ed.kind.Immutable, sf.name),
			secret:    prefix == "" && slices.Contains(ed.kind.Secret, sf.name),
			required:  prefix == "" && slices.Contains(ed.kind.Required, sf.name)}
		ft := sf.typ
		if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct && ft.Elem() != timeType {
			f.optional = true
			ft = ft.Elem()
		} else if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft == timeType:
			f.typ = tTime
			f.input = or(f.input, InputDateTime)
		case ft.Kind() == reflect.Bool:
			f.typ = tBool
			f.input = or(f.input, InputCheckbox)
		case ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Int64:
			f.typ = tInt
			f.input = or(f.input, InputNumber)
		case ft.Kind() == reflect.Float32 || ft.Kind() == reflect.Float64:
			f.typ = tFloat
			f.input = or(f.input, InputNumber)
		case ft.Kind() == reflect.String:
			f.typ = tString
			f.input = or(f.input, InputText)
			if f.secret {
				f.input = InputSecret
			}
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
			f.typ = tStrings
			f.input = or(f.input, InputList)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			f.typ = tRows
			f.input = InputRows
			f.fields = ed.schema(ft.Elem(), path+".*", skip, used, problems)
		case ft.Kind() == reflect.Struct:
			f.typ = tObject
			if f.input != InputInline {
				f.input = InputGroup
			}
			f.fields = ed.schema(ft, path, skip, used, problems)
		default:
			*problems = append(*problems, path+" is of a type the forms cannot edit ("+ft.String()+")")
			continue
		}
		if f.input == InputSelect && len(w.Choices) == 0 {
			*problems = append(*problems, path+" is a select without choices")
		}
		ed.byPath[path] = f
		out = append(out, f)
	}
	return out
}

// or returns a, else b when a is empty.
func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// joinDot appends a name to a dotted path.
func joinDot(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// jsonField is one field of a struct as encoding/json names it.
type jsonField struct {
	name string
	typ  reflect.Type
}

// jsonFieldsOf returns the fields of struct type t as encoding/json
// encodes them, in order, those of embedded structs included (of two
// fields of one name, the less deeply embedded wins, as in
// encoding/json).
func jsonFieldsOf(t reflect.Type) []jsonField {
	type found struct {
		f     jsonField
		depth int
	}
	var all []found
	var walk func(t reflect.Type, depth int)
	walk = func(t reflect.Type, depth int) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if ft := f.Type; f.Anonymous && name == "" {
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, depth+1)
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			all = append(all, found{jsonField{name, f.Type}, depth})
		}
	}
	walk(t, 0)
	best := map[string]found{}
	var order []string
	for _, a := range all {
		b, ok := best[a.f.name]
		if !ok {
			order = append(order, a.f.name)
		}
		if !ok || a.depth < b.depth {
			best[a.f.name] = a
		}
	}
	out := make([]jsonField, 0, len(order))
	for _, n := range order {
		out = append(out, best[n].f)
	}
	return out
}

// ---- Values: documents, form values, shown values ----

// decodeDoc decodes a JSON object keeping numbers as written.
func decodeDoc(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// shownNumber formats a number of a document: as written, without a
// needless exponent ("2", "0.25").
func shownNumber(v any) string {
	switch n := v.(type) {
	case json.Number:
		if f, err := n.Float64(); err == nil && !math.IsInf(f, 0) {
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
		return string(n)
	case float64:
		return strconv.FormatFloat(n, 'f', -1, 64)
	case string:
		return n
	}
	return ""
}

// shownString returns a document's string ("" for another value).
func shownString(v any) string {
	s, _ := v.(string)
	return s
}

// shownStrings returns a document's list of strings.
func shownStrings(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// dateTimeLocal is the form of an input type=datetime-local.
const dateTimeLocal = "2006-01-02T15:04"

// shownDateTime shows an RFC 3339 time of a document in New York time,
// as an input type=datetime-local takes it; a zero time is "".
func shownDateTime(v any) string {
	s, ok := v.(string)
	if !ok {
		return ""
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s // what the trader typed, shown back
	}
	if t.IsZero() {
		return ""
	}
	return t.In(protocol.NewYork()).Format(dateTimeLocal)
}

// ---- Form → document ----

// parseForm reads the form's values into the resource's JSON document by
// the schema: create tells whether immutable fields are sent. A value
// that is not what its field takes (a number, a date) is kept as typed,
// as a string, and returned as a field error (wrong_type) by its JSON
// path; nothing is sent then.
func (ed *editor) parseForm(form url.Values, create bool) (map[string]any, []httpapi.FieldError) {
	p := &formParser{form: form, create: create}
	doc, _ := p.object(ed.fields, "", "", true)
	return doc, ed.applicable(doc, decodeLoaded(form.Get("loaded")), p.errs)
}

// applicable leaves out of doc the top-level fields whose Words.OnlyIf
// does not hold (judged on doc, else on loaded: an immutable field is
// not sent on edit), and their errors; it returns the errors left.
func (ed *editor) applicable(doc, loaded map[string]any, errs []httpapi.FieldError) []httpapi.FieldError {
	for _, f := range ed.fields {
		c := f.words.OnlyIf
		if c == nil {
			continue
		}
		judged := doc
		if _, ok := doc[c.Field]; !ok {
			judged = loaded
		}
		if c.holds(judged) {
			continue
		}
		delete(doc, f.name)
		errs = slices.DeleteFunc(errs, func(fe httpapi.FieldError) bool {
			return fe.Path == f.name || strings.HasPrefix(fe.Path, f.name+".")
		})
	}
	return errs
}

// formParser reads one form.
type formParser struct {
	form   url.Values
	create bool
	errs   []httpapi.FieldError
}

// object reads the fields under the input name prefix in (rows as form
// indexes) into an object whose JSON path is out; blank reports that no
// input held a value.
func (p *formParser) object(fields []*schemaField, in, out string, top bool) (map[string]any, bool) {
	obj := map[string]any{}
	blank := true
	for _, f := range fields {
		if (top && f.immutable && !p.create) || f.input == InputShown {
			continue
		}
		name, path := joinDot(in, f.name), joinDot(out, f.name)
		v, empty, keep := p.value(f, name, path)
		if !keep {
			continue
		}
		obj[f.name] = v
		blank = blank && empty
	}
	return obj, blank
}

// value reads one field; keep is false when the field is not sent (an
// empty secret, an empty optional group).
func (p *formParser) value(f *schemaField, name, path string) (v any, empty, keep bool) {
	raw := p.form.Get(name)
	trimmed := strings.TrimSpace(raw)
	switch f.typ {
	case tBool:
		on := raw == "true"
		return on, !on, true
	case tInt:
		if trimmed == "" {
			return json.Number("0"), true, true
		}
		if _, err := strconv.ParseInt(trimmed, 10, 64); err != nil {
			p.errs = append(p.errs, httpapi.FieldError{Path: path, Code: errcode.FieldCodeWrongType})
			return trimmed, false, true
		}
		return json.Number(trimmed), false, true
	case tFloat:
		if trimmed == "" {
			return json.Number("0"), true, true
		}
		n, err := strconv.ParseFloat(trimmed, 64)
		if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
			p.errs = append(p.errs, httpapi.FieldError{Path: path, Code: errcode.FieldCodeWrongType})
			return trimmed, false, true
		}
		return json.Number(strconv.FormatFloat(n, 'f', -1, 64)), false, true
	case tString:
		if f.input == InputSecret {
			return raw, raw == "", raw != ""
		}
		return trimmed, trimmed == "", true
	case tTime:
		if trimmed == "" {
			return time.Time{}.Format(time.RFC3339), true, true
		}
		if t, err := time.Parse(time.RFC3339, trimmed); err == nil {
			return t.UTC().Format(time.RFC3339), false, true
		}
		t, err := time.ParseInLocation(dateTimeLocal, trimmed, protocol.NewYork())
		if err != nil {
			p.errs = append(p.errs, httpapi.FieldError{Path: path, Code: errcode.FieldCodeWrongType})
			return trimmed, false, true
		}
		return t.UTC().Format(time.RFC3339), false, true
	case tStrings:
		var list []any
		switch f.input {
		case InputList, InputAccounts:
			// One line of comma-separated values (InputAccounts when no
			// accounts are known), or checkboxes of one value each.
			for _, v := range p.form[name] {
				for part := range strings.SplitSeq(v, ",") {
					if s := strings.TrimSpace(part); s != "" {
						list = append(list, s)
					}
				}
			}
		default:
			for _, s := range p.form[name] {
				if s = strings.TrimSpace(s); s != "" {
					list = append(list, s)
				}
			}
		}
		if list == nil {
			list = []any{}
		}
		return list, len(list) == 0, true
	case tObject:
		obj, blank := p.object(f.fields, name, path, false)
		if f.optional && blank {
			return nil, true, false
		}
		return obj, blank, true
	case tRows:
		list := []any{}
		for _, i := range p.rowIndexes(name) {
			prefix := name + "." + strconv.Itoa(i)
			if p.form.Get(prefix+"._remove") == "true" {
				continue
			}
			before := len(p.errs)
			obj, blank := p.object(f.fields, prefix, path+"."+strconv.Itoa(len(list)), false)
			if blank {
				p.errs = p.errs[:before]
				continue
			}
			list = append(list, obj)
		}
		return list, len(list) == 0, true
	}
	return nil, true, false
}

// rowIndexes returns the row indexes the form holds under the rows' name
// ("followers.3.account" holds 3), ascending.
func (p *formParser) rowIndexes(name string) []int {
	seen := map[int]bool{}
	for k := range p.form {
		rest, ok := strings.CutPrefix(k, name+".")
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(rest, ".")
		if i, err := strconv.Atoi(num); err == nil && i >= 0 && i < maxRows && strconv.Itoa(i) == num {
			seen[i] = true
		}
	}
	out := make([]int, 0, len(seen))
	for i := range seen {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// maxRows bounds the row indexes a form is read at.
const maxRows = 200

// mergeDoc lays over onto base: objects merge key by key, anything else
// replaces. It changes base.
func mergeDoc(base, over map[string]any) map[string]any {
	if base == nil {
		base = map[string]any{}
	}
	for k, v := range over {
		bo, ok1 := base[k].(map[string]any)
		oo, ok2 := v.(map[string]any)
		if ok1 && ok2 {
			base[k] = mergeDoc(bo, oo)
			continue
		}
		base[k] = v
	}
	return base
}

// ---- Document → form ----

// formField is one input (or group of inputs) of a rendered form.
type formField struct {
	// Name is the input's name (the field's dotted path); ID the
	// element's id ("f-" + Name).
	Name, ID                        string
	Label, Help, Input, Placeholder string
	Value                           string
	Checked                         bool
	Options                         []formOption
	// Error is what is wrong with it, in words.
	Error string
	// Locked shows an immutable field read-only, not sent.
	Locked bool
	// Fields are a group's fields.
	Fields []*formField
	// Rows are a list's rows, the blank one last.
	Rows []*formRow
	// OnlyIf is the field's Words.OnlyIf (the script shows it only
	// while the condition holds); FixedRows its Words.FixedRows.
	OnlyIf    *Condition
	FixedRows bool
}

// HelpID and ErrorID are the ids of the field's help and error.
func (f *formField) HelpID() string  { return "help-" + f.Name }
func (f *formField) ErrorID() string { return "error-" + f.Name }

// DescribedBy is the input's aria-describedby: its help and its error.
func (f *formField) DescribedBy() string {
	var ids []string
	if f.Help != "" {
		ids = append(ids, f.HelpID())
	}
	if f.Error != "" {
		ids = append(ids, f.ErrorID())
	}
	return strings.Join(ids, " ")
}

// formRow is one row of a list.
type formRow struct {
	// Name is the row's prefix ("followers.2"), Number its 1-based
	// position.
	Name   string
	Index  int
	Number int
	// Blank is the empty row always offered (and cloned by "Add a row").
	Blank bool
	// Tucked: the script hides the blank row until "Add a row" (a list
	// that has rows, or need not have any).
	Tucked bool
	Fields []*formField
}

// RemoveName is the name of the row's "Remove" checkbox.
func (r *formRow) RemoveName() string { return r.Name + "._remove" }

// formOption is an option of a select, or a checkbox of a list.
type formOption struct {
	Value, Label string
	Selected     bool
}

// formBuild renders a document into form fields.
type formBuild struct {
	create   bool
	accounts []string
	// immutable are the kind's immutable fields (Words.OnlyIf).
	immutable []string
}

// fieldsOf renders the fields of obj under the input name prefix.
func (b *formBuild) fieldsOf(fields []*schemaField, obj map[string]any, prefix string, top bool) []*formField {
	var out []*formField
	for _, f := range fields {
		if top && !b.applies(f, obj) {
			continue
		}
		out = append(out, b.field(f, obj, joinDot(prefix, f.name), top))
	}
	return out
}

// applies reports whether a top-level field is shown: always, unless
// its Words.OnlyIf names a field the form cannot change (an immutable
// one, on edit) and does not hold for obj.
func (b *formBuild) applies(f *schemaField, obj map[string]any) bool {
	c := f.words.OnlyIf
	if c == nil || c.holds(obj) {
		return true
	}
	return b.create || !slices.Contains(b.immutable, c.Field)
}

func (b *formBuild) field(f *schemaField, obj map[string]any, name string, top bool) *formField {
	v := obj[f.name]
	ff := &formField{Name: name, ID: "f-" + name, Label: f.words.Label, Help: f.words.Help, Input: f.input,
		Placeholder: f.words.Placeholder, Locked: top && f.immutable && !b.create,
		OnlyIf: f.words.OnlyIf, FixedRows: f.words.FixedRows}
	switch f.typ {
	case tBool:
		on, _ := v.(bool)
		ff.Checked = on
		ff.Value = strconv.FormatBool(on)
	case tInt, tFloat:
		ff.Value = shownNumber(v)
	case tString:
		if f.input != InputSecret {
			ff.Value = shownString(v)
		} else if !b.create {
			ff.Placeholder = "Leave empty to keep it"
		}
	case tTime:
		ff.Value = shownDateTime(v)
	case tStrings:
		list := shownStrings(v)
		ff.Value = strings.Join(list, ", ")
		switch f.input {
		case InputChecks, InputDays:
			ff.Options = checkOptions(f.words.Choices, list)
		case InputAccounts:
			if b.accounts != nil {
				ff.Input = InputChecks
				ff.Options = checkOptions(accountChoices(b.accounts, list), list)
			} else {
				ff.Input = InputList
			}
		}
	case tObject:
		sub, _ := v.(map[string]any)
		ff.Fields = b.fieldsOf(f.fields, sub, name, false)
	case tRows:
		rows, _ := v.([]any)
		for i, r := range rows {
			sub, _ := r.(map[string]any)
			prefix := name + "." + strconv.Itoa(i)
			ff.Rows = append(ff.Rows, &formRow{Name: prefix, Index: i, Number: i + 1, Fields: b.fieldsOf(f.fields, sub, prefix, false)})
		}
		if f.words.FixedRows {
			break
		}
		prefix := name + "." + strconv.Itoa(len(rows))
		ff.Rows = append(ff.Rows, &formRow{Name: prefix, Index: len(rows), Number: len(rows) + 1, Blank: true,
			Tucked: len(rows) > 0 || !f.required, Fields: b.fieldsOf(f.fields, map[string]any{}, prefix, false)})
	}
	switch ff.Input {
	case InputSelect:
		ff.Options = selectOptions(f.words.Choices, ff.Value)
	case InputAccount:
		if b.accounts != nil {
			ff.Input = InputSelect
			ff.Options = selectOptions(accountChoices(b.accounts, []string{ff.Value}), ff.Value)
		} else {
			ff.Input = InputText
		}
	}
	return ff
}

// accountChoices are the known accounts as choices, with those of
// current that are not among them (an account the PC no longer has).
func accountChoices(accounts, current []string) []Choice {
	out := make([]Choice, 0, len(accounts))
	for _, a := range accounts {
		out = append(out, Choice{Value: a, Label: a})
	}
	for _, c := range current {
		if c != "" && !slices.Contains(accounts, c) {
			out = append(out, Choice{Value: c, Label: c + " (not on your PC now)"})
		}
	}
	return out
}

// selectOptions are a select's options with value selected; a value that
// is none of the choices (nothing chosen yet, or a value the choices do
// not hold) is offered first, so that the form shows what is stored.
func selectOptions(choices []Choice, value string) []formOption {
	var out []formOption
	found := false
	for _, c := range choices {
		sel := sameChoice(c.Value, value)
		found = found || sel
		out = append(out, formOption{Value: c.Value, Label: c.Label, Selected: sel})
	}
	if !found {
		label := value
		if value == "" {
			label = "Choose…"
		}
		out = append([]formOption{{Value: value, Label: label, Selected: true}}, out...)
	}
	return out
}

// sameChoice compares a choice with a value: numbers as numbers ("2" is
// "2.0").
func sameChoice(a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && x == y && a != "" && b != ""
}

// checkOptions are a list's checkboxes, those of list checked, and the
// values of list the choices lack added.
func checkOptions(choices []Choice, list []string) []formOption {
	var out []formOption
	for _, c := range choices {
		out = append(out, formOption{Value: c.Value, Label: c.Label, Selected: slices.Contains(list, c.Value)})
	}
	for _, v := range list {
		if !slices.ContainsFunc(choices, func(c Choice) bool { return c.Value == v }) {
			out = append(out, formOption{Value: v, Label: v, Selected: true})
		}
	}
	return out
}

// indexFields maps each field's input name to the field, through groups
// and rows.
func indexFields(fields []*formField) map[string]*formField {
	byName := map[string]*formField{}
	var index func([]*formField)
	index = func(fs []*formField) {
		for _, f := range fs {
			byName[f.Name] = f
			index(f.Fields)
			for _, r := range f.Rows {
				index(r.Fields)
			}
		}
	}
	index(fields)
	return byName
}

// place puts each field error next to the input its path names (or the
// nearest group or list that holds it) and returns the messages that name
// no input.
func (ed *editor) place(fields []*formField, doc map[string]any, errs []httpapi.FieldError) []string {
	byName := indexFields(fields)
	var loose []string
	for _, fe := range errs {
		msg := ed.fieldMessage(fe, doc)
		target := fe.Path
		for target != "" && byName[target] == nil {
			i := strings.LastIndexByte(target, '.')
			if i < 0 {
				target = ""
				break
			}
			target = target[:i]
		}
		f := byName[target]
		if f == nil || f.Locked {
			if f != nil {
				msg = f.Label + ": " + msg
			}
			loose = append(loose, msg)
			continue
		}
		if f.Error == "" {
			f.Error = msg
		} else if !strings.Contains(f.Error, msg) {
			f.Error += " " + msg
		}
	}
	return loose
}

// schemaPath turns a JSON path into its schema path: indexes become "*".
func schemaPath(path string) string {
	parts := strings.Split(path, ".")
	for i, p := range parts {
		if _, err := strconv.Atoi(p); err == nil {
			parts[i] = "*"
		}
	}
	return strings.Join(parts, ".")
}

// lookup returns the value at a JSON path of a document, nil when none.
func lookup(doc map[string]any, path string) any {
	var cur any = doc
	for p := range strings.SplitSeq(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// ---- What changed (412) ----

// fieldChange is one field that changed since the form was loaded.
type fieldChange struct {
	Label, Was, Now string
}

// changes lists the editable fields that differ between was and now, in
// the form's order, with their labels.
func (ed *editor) changes(was, now map[string]any) []fieldChange {
	var out []fieldChange
	var walk func(fields []*schemaField, a, b map[string]any, labels []string)
	walk = func(fields []*schemaField, a, b map[string]any, labels []string) {
		for _, f := range fields {
			if f.secret {
				continue
			}
			label := append(slices.Clone(labels), f.words.Label)
			x, y := a[f.name], b[f.name]
			switch f.typ {
			case tObject:
				xa, _ := x.(map[string]any)
				ya, _ := y.(map[string]any)
				walk(f.fields, xa, ya, label)
			case tRows:
				xl, _ := x.([]any)
				yl, _ := y.([]any)
				for i := range max(len(xl), len(yl)) {
					var xr, yr map[string]any
					if i < len(xl) {
						xr, _ = xl[i].(map[string]any)
					}
					if i < len(yl) {
						yr, _ = yl[i].(map[string]any)
					}
					rowLabel := append(slices.Clone(label), "row "+strconv.Itoa(i+1))
					switch {
					case xr == nil:
						out = append(out, fieldChange{Label: strings.Join(rowLabel, ", "), Was: "(none)", Now: "added"})
					case yr == nil:
						out = append(out, fieldChange{Label: strings.Join(rowLabel, ", "), Was: "present", Now: "removed"})
					default:
						walk(f.fields, xr, yr, rowLabel)
					}
				}
			default:
				xs, ys := shownValue(f, x), shownValue(f, y)
				if xs != ys {
					out = append(out, fieldChange{Label: strings.Join(label, ", "), Was: xs, Now: ys})
				}
			}
		}
	}
	walk(ed.fields, was, now, nil)
	return out
}

// shownValue is a leaf value in words, for the list of changes.
func shownValue(f *schemaField, v any) string {
	var s string
	switch f.typ {
	case tBool:
		if on, _ := v.(bool); on {
			s = "on"
		} else {
			s = "off"
		}
	case tInt, tFloat:
		s = shownNumber(v)
	case tTime:
		s = shownDateTime(v)
	case tStrings:
		s = strings.Join(shownStrings(v), ", ")
	default:
		s = shownString(v)
	}
	for _, c := range f.words.Choices {
		if s != "" && sameChoice(c.Value, s) {
			s = c.Label
		}
	}
	if s == "" {
		return "(empty)"
	}
	return s
}

// ---- The pages ----

// editorView is an editor page's data.
type editorView struct {
	Title, Noun, Base string
	// Heading is the page's heading.
	Heading string
	Intro   string
	// Singleton: a form without list, id or delete.
	Singleton bool
	// New: the empty form of a create.
	New bool
	// ID, ETag and Loaded are the resource's id, the ETag the form shows
	// and the resource as shown (base64url JSON), sent back with a save.
	ID, ETag, Loaded string
	// Action is the form's URL.
	Action string
	Fields []*formField
	// Notice says what was just done (role=status).
	Notice string
	// Problems are refusals that name no input.
	Problems []string
	// Changes are what changed since the form was loaded (412).
	Changes []fieldChange
	// Once are values shown once (a new signing secret).
	Once []onceValue
	// LinkBroker: the refusal was tradovate_not_linked.
	LinkBroker bool
	// Confirm asks to confirm a delete.
	Confirm bool
	// Actions are the kind's action buttons.
	Actions []Action
	// State is the resource's state, when the editor shows one.
	State *stateView
	// List is a collection's list.
	List *listView
	// Panel is the kind's own block under the form (Editor.Panel).
	Panel *panelView
}

// panelView is an Editor.Panel's block: its template's name and data.
type panelView struct {
	Name string
	Data any
}

// onceValue is a value shown once.
type onceValue struct {
	Label, Value, ID string
}

// listView is a collection's list.
type listView struct {
	Columns []string
	Rows    []listRow
}

// listRow is one resource of a list.
type listRow struct {
	ID    string
	Href  string
	State string
	Cells []string
}

// stateView is a resource's state.
type stateView struct {
	// State is #resource-state's data-state; Label its words.
	State, Label string
	Reason       string
	Since        string
	// Href is the state block's own URL (the live updates fetch it).
	Href string
	// ID is the resource's id, Base its editor's URL, CSRF the session's
	// token (the block's buttons post).
	ID, Base, CSRF string
	// Account is the monitored account, when the block shows its P&L.
	Account string
	// Limits are the P&L limits; Pnl the session P&L and high.
	Limits []limitView
	Pnl    *pnlView
	// Actions are the buttons of the state the resource is in.
	Actions []Action
}

// limitView is one P&L limit of a monitor.
type limitView struct {
	Label, Amount string
	On            bool
}

// pnlView is a monitored account's session P&L and session high, as the
// agent's monitor engine counts them.
type pnlView struct {
	// Href is the P&L block's own URL (the live updates fetch it).
	Href string
	// Known: the agent answered with the account's monitor.
	Known     bool
	Pnl, High string
	// Loss: the P&L is below zero.
	Loss bool
	// Note says why the figures are not shown.
	Note string
}

// registerEditors adds each editor's routes.
func (s *Server) registerEditors(mux Mux) {
	mux.HandleFunc("GET /app/manage", s.page(s.settingsIndex))
	for _, ed := range s.editors {
		if ed.Panel != nil && !ed.kind.Singleton {
			mux.HandleFunc("GET "+ed.base+"/{id}/"+ed.Panel.Name, s.fetch(s.editorPanel(ed)))
		}
		if ed.kind.Singleton {
			mux.HandleFunc("GET "+ed.base, s.page(s.editorPage(ed, editorShow)))
			mux.HandleFunc("POST "+ed.base, s.page(s.editorPage(ed, editorSave)))
			continue
		}
		mux.HandleFunc("GET "+ed.base, s.page(s.editorPage(ed, editorList)))
		mux.HandleFunc("GET "+ed.base+"/new", s.page(s.editorPage(ed, editorNew)))
		mux.HandleFunc("POST "+ed.base, s.page(s.editorPage(ed, editorCreate)))
		mux.HandleFunc("GET "+ed.base+"/{id}", s.page(s.editorPage(ed, editorShow)))
		mux.HandleFunc("POST "+ed.base+"/{id}", s.page(s.editorPage(ed, editorSave)))
		mux.HandleFunc("POST "+ed.base+"/{id}/delete", s.page(s.editorPage(ed, editorDelete)))
		mux.HandleFunc("POST "+ed.base+"/{id}/{action}", s.page(s.editorPage(ed, editorAction)))
		if ed.State != nil {
			mux.HandleFunc("GET "+ed.base+"/{id}/state", s.fetch(s.editorState(ed)))
			if ed.State.Pnl != "" {
				mux.HandleFunc("GET "+ed.base+"/{id}/pnl", s.fetch(s.editorPnl(ed)))
			}
		}
	}
}

// What an editor's route does.
type editorOp int

const (
	editorList editorOp = iota
	editorNew
	editorCreate
	editorShow
	editorSave
	editorDelete
	editorAction
)

// idShape is a management resource's id.
var idShape = regexp.MustCompile(manage.IDPattern)

// editorPage serves one of an editor's routes.
func (s *Server) editorPage(ed *editor, op editorOp) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, sess *session) {
		if !sess.p.Plan.AtLeast(auth.PlanElite) {
			s.planPage(w, r, sess, ed)
			return
		}
		id := r.PathValue("id")
		if id != "" && !idShape.MatchString(id) {
			s.renderError(w, r, sess, http.StatusNotFound, "You have no such "+ed.Noun+".")
			return
		}
		switch op {
		case editorList:
			s.editorListPage(w, r, sess, ed)
		case editorNew:
			s.editorNewPage(w, r, sess, ed)
		case editorCreate:
			s.editorCreate(w, r, sess, ed)
		case editorShow:
			s.editorShowPage(w, r, sess, ed, id)
		case editorSave:
			s.editorSave(w, r, sess, ed, id)
		case editorDelete:
			s.editorDelete(w, r, sess, ed, id)
		case editorAction:
			s.editorAction(w, r, sess, ed, id, r.PathValue("action"))
		}
	}
}

// apiAnswer is a Management API answer, decoded.
type apiAnswer struct {
	Success    bool                  `json:"success"`
	Data       json.RawMessage       `json:"data"`
	Error      string                `json:"error"`
	Detail     string                `json:"detail"`
	Fields     []httpapi.FieldError  `json:"fields"`
	RetryAfter int                   `json:"retryAfter"`
	Meta       struct{ ETag string } `json:"meta"`
	Changed    *bool                 `json:"changed"`
}

// invoke runs a Management API route with the session's user.
func (s *Server) invoke(ctx context.Context, sess *session, method, path, ifMatch string, body []byte) (int, apiAnswer) {
	status, raw := s.opts.Manage.InvokeIf(ctx, sess.p, sess.src, method, path, ifMatch, body)
	var a apiAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		s.log.Warn("a Management API answer does not decode", zap.Int("status", status), zap.String("path", path))
		return http.StatusInternalServerError, apiAnswer{Error: errcode.InternalError}
	}
	return status, a
}

// apiPath is the Management API path of a resource (id "" for the
// collection or the singleton).
func (ed *editor) apiPath(id string) string {
	if id == "" {
		return ed.Path
	}
	return ed.Path + "/" + id
}

// href is the editor page of a resource (id "" for the list or the
// singleton).
func (ed *editor) href(id string) string {
	if id == "" {
		return ed.base
	}
	return ed.base + "/" + id
}

// newView starts an editor page's view.
func (ed *editor) newView() *editorView {
	return &editorView{Title: ed.Title, Noun: ed.Noun, Base: ed.base, Heading: ed.Title, Intro: ed.Intro,
		Singleton: ed.kind.Singleton, Actions: ed.Actions}
}

// renderEditor writes an editor page.
func (s *Server) renderEditor(w http.ResponseWriter, r *http.Request, sess *session, status int, ed *editor, ev *editorView, formErr string) {
	v := &view{Title: ev.Heading, Nav: ed.Nav, Error: formErr, Data: ev}
	s.signedView(r, sess, v)
	s.render(w, status, "manage-form", v)
}

// editorListPage serves a collection's list.
func (s *Server) editorListPage(w http.ResponseWriter, r *http.Request, sess *session, ed *editor) {
	status, a := s.invoke(r.Context(), sess, http.MethodGet, ed.apiPath(""), "", nil)
	if status != http.StatusOK {
		s.editorRefused(w, r, sess, ed, status, a)
		return
	}
	var items []json.RawMessage
	if err := json.Unmarshal(a.Data, &items); err != nil {
		s.editorRefused(w, r, sess, ed, http.StatusInternalServerError, apiAnswer{Error: errcode.InternalError})
		return
	}
	lv := &listView{}
	for _, c := range ed.Columns {
		lv.Columns = append(lv.Columns, c.Label)
	}
	for _, raw := range items {
		doc, err := decodeDoc(raw)
		if err != nil {
			continue
		}
		id := shownString(doc["id"])
		row := listRow{ID: id, Href: ed.href(id)}
		if ed.State != nil {
			row.State = shownString(doc[ed.State.Field])
		}
		for _, c := range ed.Columns {
			row.Cells = append(row.Cells, c.Value(doc))
		}
		lv.Rows = append(lv.Rows, row)
	}
	ev := ed.newView()
	ev.List = lv
	switch r.URL.Query().Get("done") {
	case "deleted":
		ev.Notice = "Deleted."
	}
	s.renderEditor(w, r, sess, http.StatusOK, ed, ev, "")
}

// formView fills ev's form from doc (the resource as shown, or as the
// trader typed it) and the field errors.
func (s *Server) formView(ctx context.Context, sess *session, ed *editor, ev *editorView, doc, loaded map[string]any, errs []httpapi.FieldError) {
	b := &formBuild{create: ev.New, accounts: s.accountsOf(ctx, sess, ed, doc), immutable: ed.kind.Immutable}
	ev.Fields = b.fieldsOf(ed.fields, doc, "", true)
	ev.Problems = append(ev.Problems, ed.place(ev.Fields, doc, errs)...)
	ev.Loaded = encodeLoaded(ed, loaded)
	s.formExtras(ctx, sess, ed, ev, loaded)
	if ed.State != nil && !ev.New {
		ev.State = s.stateOf(ctx, sess, ed, loaded)
	}
}

// encodeLoaded is the hidden input loaded: the resource as the form
// showed it, its secrets left out, as base64url JSON.
func encodeLoaded(ed *editor, doc map[string]any) string {
	clean := map[string]any{}
	for k, v := range doc {
		if !slices.Contains(ed.kind.Secret, k) {
			clean[k] = v
		}
	}
	b, err := json.Marshal(clean)
	if err != nil {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeLoaded reads the hidden input loaded back; a value that does not
// decode is an empty document (it only shows what changed).
func decodeLoaded(s string) map[string]any {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return map[string]any{}
	}
	doc, err := decodeDoc(b)
	if err != nil {
		return map[string]any{}
	}
	return doc
}

// editorNewPage serves the empty form: the kind's defaults.
func (s *Server) editorNewPage(w http.ResponseWriter, r *http.Request, sess *session, ed *editor) {
	doc, err := decodeDoc(ed.kind.Default())
	if err != nil {
		doc = map[string]any{}
	}
	ev := ed.newView()
	ev.New, ev.Heading, ev.Action = true, "New "+ed.Noun, ed.base
	s.formView(r.Context(), sess, ed, ev, doc, doc, nil)
	s.renderEditor(w, r, sess, http.StatusOK, ed, ev, "")
}

// readResource reads the resource id of ed (a singleton: "") through the
// Management API and returns it with its ETag; a refusal is answered to
// w, and ok is false.
func (s *Server) readResource(w http.ResponseWriter, r *http.Request, sess *session, ed *editor, id string) (doc map[string]any, etag string, ok bool) {
	status, a := s.invoke(r.Context(), sess, http.MethodGet, ed.apiPath(id), "", nil)
	if status != http.StatusOK {
		s.editorRefused(w, r, sess, ed, status, a)
		return nil, "", false
	}
	doc, err := decodeDoc(a.Data)
	if err != nil {
		s.editorRefused(w, r, sess, ed, http.StatusInternalServerError, apiAnswer{Error: errcode.InternalError})
		return nil, "", false
	}
	return doc, a.Meta.ETag, true
}

// editorShowPage serves a resource's form (a singleton's too).
func (s *Server) editorShowPage(w http.ResponseWriter, r *http.Request, sess *session, ed *editor, id string) {
	doc, etag, ok := s.readResource(w, r, sess, ed, id)
	if !ok {
		return
	}
	ev := ed.editView(id, etag)
	ev.Notice = ed.doneNotice(r.URL.Query().Get("done"))
	s.formView(r.Context(), sess, ed, ev, doc, doc, nil)
	s.renderEditor(w, r, sess, http.StatusOK, ed, ev, "")
}

// editView starts the view of an existing resource's form.
func (ed *editor) editView(id, etag string) *editorView {
	ev := ed.newView()
	ev.ID, ev.ETag, ev.Action = id, etag, ed.href(id)
	if !ed.kind.Singleton {
		ev.Heading, ev.Intro = "Edit "+ed.Noun, ""
	}
	return ev
}

// doneNotice is what the page says after a change (?done=…).
func (ed *editor) doneNotice(done string) string {
	switch done {
	case "created":
		return "Created. It is saved and in effect."
	case "saved":
		return "Saved. The changes are in effect."
	case "unchanged":
		return "Nothing changed: the form held the stored values."
	}
	for _, a := range ed.Actions {
		if a.Name == done && a.Done != "" {
			return a.Done
		}
	}
	return ""
}

// editorCreate serves POST on a collection: the form → POST.
func (s *Server) editorCreate(w http.ResponseWriter, r *http.Request, sess *session, ed *editor) {
	doc, errs := ed.parseForm(r.PostForm, true)
	ev := ed.newView()
	ev.New, ev.Heading, ev.Action = true, "New "+ed.Noun, ed.base
	loaded := decodeLoaded(r.PostForm.Get("loaded"))
	if len(errs) > 0 {
		s.formView(r.Context(), sess, ed, ev, mergeDoc(loaded, doc), loaded, errs)
		s.renderEditor(w, r, sess, http.StatusUnprocessableEntity, ed, ev, fieldsSummary(ed, "created"))
		return
	}
	body, _ := json.Marshal(doc)
	status, a := s.invoke(r.Context(), sess, http.MethodPost, ed.apiPath(""), "", body)
	if status == http.StatusCreated || status == http.StatusOK {
		created, err := decodeDoc(a.Data)
		if err != nil {
			http.Redirect(w, r, ed.base, http.StatusSeeOther)
			return
		}
		id := shownString(created["id"])
		if once := ed.onceValues(created); len(once) > 0 {
			ev := ed.editView(id, a.Meta.ETag)
			ev.Once, ev.Notice = once, ed.doneNotice("created")
			s.formView(r.Context(), sess, ed, ev, created, created, nil)
			s.renderEditor(w, r, sess, http.StatusCreated, ed, ev, "")
			return
		}
		http.Redirect(w, r, ed.href(id)+"?done=created", http.StatusSeeOther)
		return
	}
	s.formRefused(w, r, sess, ed, ev, status, a, mergeDoc(loaded, doc), loaded, "created")
}

// editorSave serves POST on a resource (or a singleton): the form →
// PATCH with If-Match.
func (s *Server) editorSave(w http.ResponseWriter, r *http.Request, sess *session, ed *editor, id string) {
	doc, errs := ed.parseForm(r.PostForm, false)
	etag := r.PostForm.Get("etag")
	ev := ed.editView(id, etag)
	loaded := decodeLoaded(r.PostForm.Get("loaded"))
	shown := mergeDoc(cloneDoc(loaded), doc)
	if len(errs) > 0 {
		s.formView(r.Context(), sess, ed, ev, shown, loaded, errs)
		s.renderEditor(w, r, sess, http.StatusUnprocessableEntity, ed, ev, fieldsSummary(ed, "saved"))
		return
	}
	if etag == "" {
		// A form without the ETag it showed cannot say what it
		// changes; it is refused as a stale one.
		etag = `"none"`
	}
	edited := changedFields(doc, loaded)
	if len(edited) == 0 {
		http.Redirect(w, r, ed.href(id)+"?done=unchanged", http.StatusSeeOther)
		return
	}
	body, _ := json.Marshal(edited)
	status, a := s.invoke(r.Context(), sess, http.MethodPatch, ed.apiPath(id), etag, body)
	if status == http.StatusOK {
		done := "saved"
		if a.Changed != nil && !*a.Changed {
			done = "unchanged"
		}
		http.Redirect(w, r, ed.href(id)+"?done="+done, http.StatusSeeOther)
		return
	}
	if status == http.StatusPreconditionFailed {
		s.editorStale(w, r, sess, ed, id, loaded)
		return
	}
	s.formRefused(w, r, sess, ed, ev, status, a, shown, loaded, "saved")
}

// changedFields are the top-level fields of doc (the form, read) whose
// values differ from loaded's (the resource as the form showed it, at
// the ETag the save sends as If-Match): the PATCH of a save. An object or
// a list that changed is sent whole. Sending only what the trader changed
// keeps a save clear of the rules about fields sent unchanged (a stopped
// monitor's active, locked switches), and a save that changes nothing
// costs no write.
func changedFields(doc, loaded map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range doc {
		if !sameValue(v, loaded[k]) {
			out[k] = v
		}
	}
	return out
}

// sameValue compares two values of documents as JSON (numbers as
// numbers).
func sameValue(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var u, v any
	if json.Unmarshal(x, &u) != nil || json.Unmarshal(y, &v) != nil {
		return false
	}
	return reflect.DeepEqual(u, v)
}

// cloneDoc returns a deep copy of a document.
func cloneDoc(doc map[string]any) map[string]any {
	b, err := json.Marshal(doc)
	if err != nil {
		return map[string]any{}
	}
	out, err := decodeDoc(b)
	if err != nil {
		return map[string]any{}
	}
	return out
}

// editorStale answers a save refused with 412: the resource is read
// again and shown, with what changed since the form was loaded.
func (s *Server) editorStale(w http.ResponseWriter, r *http.Request, sess *session, ed *editor, id string, loaded map[string]any) {
	now, etag, ok := s.readResource(w, r, sess, ed, id)
	if !ok {
		return
	}
	ev := ed.editView(id, etag)
	ev.Changes = ed.changes(loaded, now)
	s.formView(r.Context(), sess, ed, ev, now, now, nil)
	msg := "Someone else changed this " + ed.Noun + " since you opened it, so your changes were not saved. " +
		"The form now shows the current values; make your changes again and save."
	if len(ev.Changes) == 0 {
		// Only what the relay keeps of it changed (a state the agent
		// reported): no setting differs from what the form showed.
		msg = "This " + ed.Noun + " changed since you opened it (its state, not its settings), so your changes were not saved. " +
			"The form now shows it as it is; make your changes again and save."
	}
	s.renderEditor(w, r, sess, http.StatusPreconditionFailed, ed, ev, msg)
}

// formRefused shows the form again, as the trader typed it, with the
// Management API's refusal in words.
func (s *Server) formRefused(w http.ResponseWriter, r *http.Request, sess *session, ed *editor, ev *editorView,
	status int, a apiAnswer, doc, loaded map[string]any, verb string) {
	if handled := s.pageRefusal(w, r, sess, ed, status, a); handled {
		return
	}
	s.formView(r.Context(), sess, ed, ev, doc, loaded, a.Fields)
	msg := errorSentence(a.Error)
	if a.Error == errcode.ValidationFailed {
		msg = fieldsSummary(ed, verb)
	} else {
		msg = "The " + ed.Noun + " was not " + verb + ". " + msg
	}
	ev.LinkBroker = a.Error == errcode.TradovateNotLinked
	s.renderEditor(w, r, sess, status, ed, ev, msg)
}

// fieldsSummary is the sentence above a form whose fields need a change.
func fieldsSummary(ed *editor, verb string) string {
	return "The " + ed.Noun + " was not " + verb + ": some fields need a change; each says why next to it."
}

// pageRefusal answers the refusals that are a page rather than a form's
// message: the plan, too many requests. It reports whether it answered.
func (s *Server) pageRefusal(w http.ResponseWriter, r *http.Request, sess *session, ed *editor, status int, a apiAnswer) bool {
	switch a.Error {
	case errcode.EliteRequired, errcode.PlanRequired, errcode.NotAvailable:
		s.planPage(w, r, sess, ed)
		return true
	case errcode.RateLimited, errcode.TooManyConcurrentRequests, errcode.ManagementBusy:
		secs := max(1, a.RetryAfter)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		s.renderError(w, r, sess, status, tryAgain(a.Error, secs))
		return true
	}
	return false
}

// tryAgain says when to try again after a budget's or the load's refusal.
func tryAgain(code string, secs int) string {
	unit := " seconds."
	if secs == 1 {
		unit = " second."
	}
	if code == errcode.ManagementBusy {
		return "The relay is busy right now. Try again in " + strconv.Itoa(secs) + unit
	}
	return "Too many changes at once. Try again in " + strconv.Itoa(secs) + unit
}

// editorRefused answers a refused read (or a failure) with a page in
// words.
func (s *Server) editorRefused(w http.ResponseWriter, r *http.Request, sess *session, ed *editor, status int, a apiAnswer) {
	if s.pageRefusal(w, r, sess, ed, status, a) {
		return
	}
	if status == http.StatusNotFound && a.Error == errcode.NotFound {
		s.renderError(w, r, sess, http.StatusNotFound, "You have no such "+ed.Noun+".")
		return
	}
	if a.Error == errcode.TradovateNotLinked {
		ev := ed.newView()
		ev.LinkBroker = true
		s.renderEditor(w, r, sess, status, ed, ev, errorSentence(a.Error))
		return
	}
	if status >= 500 && a.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(a.RetryAfter))
	}
	s.renderError(w, r, sess, status, errorSentence(a.Error))
}

// planPage says the plan lacks the Management API.
func (s *Server) planPage(w http.ResponseWriter, r *http.Request, sess *session, ed *editor) {
	s.renderError(w, r, sess, http.StatusForbidden,
		"Copiers, monitors and the other settings come with the elite plan, which this account does not have (or the relay's operator closed them for it). "+
			"The kill switch works on every plan.")
}

// editorDelete serves POST …/{id}/delete: without confirm=yes it asks to
// confirm; with it, it deletes.
func (s *Server) editorDelete(w http.ResponseWriter, r *http.Request, sess *session, ed *editor, id string) {
	if r.PostForm.Get("confirm") != "yes" {
		ev := ed.editView(id, "")
		ev.Confirm, ev.Heading = true, "Delete this "+ed.Noun+"?"
		ev.Action = ed.href(id) + "/delete"
		s.renderEditor(w, r, sess, http.StatusOK, ed, ev, "")
		return
	}
	status, a := s.invoke(r.Context(), sess, http.MethodDelete, ed.apiPath(id), "", nil)
	if status == http.StatusOK {
		http.Redirect(w, r, ed.base+"?done=deleted", http.StatusSeeOther)
		return
	}
	s.actionRefused(w, r, sess, ed, id, status, a, "The "+ed.Noun+" was not deleted.")
}

// editorAction serves POST …/{id}/{action}: one of the kind's actions.
func (s *Server) editorAction(w http.ResponseWriter, r *http.Request, sess *session, ed *editor, id, action string) {
	if !slices.Contains(ed.kind.Actions, action) {
		s.renderError(w, r, sess, http.StatusNotFound, "There is no such page.")
		return
	}
	status, a := s.invoke(r.Context(), sess, http.MethodPost, ed.apiPath(id)+"/"+action, "", nil)
	if status == http.StatusOK || status == http.StatusAccepted {
		doc, err := decodeDoc(a.Data)
		if once := ed.onceValues(doc); err == nil && len(once) > 0 {
			s.editorShowOnce(w, r, sess, ed, id, action, once)
			return
		}
		http.Redirect(w, r, ed.href(id)+"?done="+url.QueryEscape(action), http.StatusSeeOther)
		return
	}
	s.actionRefused(w, r, sess, ed, id, status, a, actionRefusal(ed, action))
}

// actionRefusal is how a refusal of an action begins ("Restart was
// refused.").
func actionRefusal(ed *editor, action string) string {
	for _, a := range ed.Actions {
		if a.Name == action {
			return a.Button + " was refused."
		}
	}
	return "It was refused."
}

// editorShowOnce shows the resource after an action whose answer holds
// values shown once.
func (s *Server) editorShowOnce(w http.ResponseWriter, r *http.Request, sess *session, ed *editor, id, action string, once []onceValue) {
	status, a := s.invoke(r.Context(), sess, http.MethodGet, ed.apiPath(id), "", nil)
	ev := ed.editView(id, a.Meta.ETag)
	ev.Once, ev.Notice = once, ed.doneNotice(action)
	doc := map[string]any{}
	if status == http.StatusOK {
		if d, err := decodeDoc(a.Data); err == nil {
			doc = d
		}
	}
	s.formView(r.Context(), sess, ed, ev, doc, doc, nil)
	s.renderEditor(w, r, sess, http.StatusOK, ed, ev, "")
}

// actionRefused shows the resource's form again with an action's or a
// delete's refusal in words, after lead.
func (s *Server) actionRefused(w http.ResponseWriter, r *http.Request, sess *session, ed *editor, id string, status int, a apiAnswer, lead string) {
	if s.pageRefusal(w, r, sess, ed, status, a) {
		return
	}
	if status == http.StatusNotFound && a.Error == errcode.NotFound {
		s.renderError(w, r, sess, http.StatusNotFound, "You have no such "+ed.Noun+".")
		return
	}
	st, cur := s.invoke(r.Context(), sess, http.MethodGet, ed.apiPath(id), "", nil)
	doc := map[string]any{}
	if st == http.StatusOK {
		if d, err := decodeDoc(cur.Data); err == nil {
			doc = d
		}
	}
	ev := ed.editView(id, cur.Meta.ETag)
	ev.LinkBroker = a.Error == errcode.TradovateNotLinked
	s.formView(r.Context(), sess, ed, ev, doc, doc, nil)
	s.renderEditor(w, r, sess, status, ed, ev, lead+" "+errorSentence(a.Error))
}

// onceValues are the members of an answer shown once (Editor.Once).
func (ed *editor) onceValues(doc map[string]any) []onceValue {
	var out []onceValue
	keys := make([]string, 0, len(ed.Once))
	for k := range ed.Once {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v := shownString(doc[k]); v != "" {
			out = append(out, onceValue{Label: ed.Once[k], Value: v, ID: "once-" + k})
		}
	}
	return out
}

// stateOf is a resource's state in words, with its monitor's P&L when
// the editor shows it.
func (s *Server) stateOf(ctx context.Context, sess *session, ed *editor, doc map[string]any) *stateView {
	sw := ed.State
	st := shownString(doc[sw.Field])
	id := shownString(doc["id"])
	v := &stateView{State: st, Label: or(sw.Names[st], st), Href: ed.href(id) + "/state", ID: id, Base: ed.base, CSRF: sess.csrf}
	if reason := shownString(doc[sw.Reason]); reason != "" {
		v.Reason = or(sw.Reasons[reason], reason)
	}
	if at := shownString(doc[sw.At]); at != "" {
		if t, err := time.Parse(time.RFC3339Nano, at); err == nil {
			v.Since = when(t)
		}
	}
	if blind, _ := doc[sw.Blind].(bool); sw.Blind != "" && blind && v.Reason == "" {
		v.Reason = sw.BlindWords
	}
	for _, a := range ed.Actions {
		if a.When != "" && a.When == st {
			v.Actions = append(v.Actions, a)
		}
	}
	if sw.Pnl != "" {
		v.Account = shownString(doc[sw.Pnl])
		for _, l := range sw.Limits {
			lim, _ := doc[l.Value].(map[string]any)
			on, _ := lim["enabled"].(bool)
			v.Limits = append(v.Limits, limitView{Label: l.Label, Amount: limitAmount(lim), On: on})
		}
		v.Pnl = s.monitorPnl(ctx, sess, ed, id, v.Account)
	}
	return v
}

// limitAmount shows a P&L limit's figure: its amount, or a
// minimum-profit floor with its trigger; "—" for none.
func limitAmount(lim map[string]any) string {
	num := func(k string) (float64, bool) {
		f, err := strconv.ParseFloat(shownNumber(lim[k]), 64)
		return f, err == nil
	}
	if a, ok := num("amount"); ok {
		return money(a)
	}
	floor, ok1 := num("floor")
	trigger, ok2 := num("trigger")
	if ok1 && ok2 {
		return money(floor) + " once " + money(trigger) + " is reached"
	}
	return "—"
}

// monitorPnl reads the account's session P&L and high from the agent's
// monitor engine (protocol.FnEngineStatus: the figures the monitor
// judges its limits on).
func (s *Server) monitorPnl(ctx context.Context, sess *session, ed *editor, id, account string) *pnlView {
	v := &pnlView{Href: ed.href(id) + "/pnl?account=" + url.QueryEscape(account)}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	raw, err := s.opts.Hub.Call(ctx, sess.p.UserID, protocol.FnEngineStatus, "", json.RawMessage(`{}`))
	var es protocol.EngineStatus
	if err == nil {
		err = json.Unmarshal(raw, &es)
	}
	if err != nil {
		s.log.Debug("reading the engines' status", zap.Error(err))
		v.Note = "Your PC does not answer right now; the figures show when it does."
		return v
	}
	for _, m := range es.Monitors {
		if m.Account == account {
			v.Known, v.Pnl, v.High, v.Loss = true, money(m.SessionPnl), money(m.SessionHigh), m.SessionPnl < 0
			return v
		}
	}
	v.Note = "Your PC does not run this monitor yet."
	return v
}

// editorState serves GET …/{id}/state: the state block alone.
func (s *Server) editorState(ed *editor) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, sess *session) {
		id := r.PathValue("id")
		if !sess.p.Plan.AtLeast(auth.PlanElite) || !idShape.MatchString(id) {
			httpapi.WriteError(w, http.StatusNotFound, httpapi.Error{Code: errcode.NotFound, Detail: "no such resource"})
			return
		}
		status, a := s.invoke(r.Context(), sess, http.MethodGet, ed.apiPath(id), "", nil)
		if status != http.StatusOK {
			if a.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(a.RetryAfter))
			}
			httpapi.WriteError(w, status, httpapi.Error{Code: or(a.Error, errcode.InternalError), Detail: errorSentence(a.Error)})
			return
		}
		doc, err := decodeDoc(a.Data)
		if err != nil {
			httpapi.WriteError(w, http.StatusInternalServerError, httpapi.Error{Detail: "the state could not be read"})
			return
		}
		var buf bytes.Buffer
		if err := s.pages.byName["manage-form"].ExecuteTemplate(&buf, "resource-state", s.stateOf(r.Context(), sess, ed, doc)); err != nil {
			s.log.Error("rendering a state", zap.Error(err))
			httpapi.WriteError(w, http.StatusInternalServerError, httpapi.Error{Detail: "the state could not be shown"})
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(buf.Bytes())
	}
}

// editorPnl serves GET …/{id}/pnl?account=NAME: the monitored account's
// P&L block alone, from the agent (no Management API read: the page
// fetches it as P&L frames arrive).
func (s *Server) editorPnl(ed *editor) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, sess *session) {
		id, account := r.PathValue("id"), r.URL.Query().Get("account")
		if !sess.p.Plan.AtLeast(auth.PlanElite) || !idShape.MatchString(id) || account == "" || len(account) > 128 {
			httpapi.WriteError(w, http.StatusNotFound, httpapi.Error{Code: errcode.NotFound, Detail: "no such resource"})
			return
		}
		var buf bytes.Buffer
		if err := s.pages.byName["manage-form"].ExecuteTemplate(&buf, "monitor-pnl", s.monitorPnl(r.Context(), sess, ed, id, account)); err != nil {
			s.log.Error("rendering a P&L", zap.Error(err))
			httpapi.WriteError(w, http.StatusInternalServerError, httpapi.Error{Detail: "the P&L could not be shown"})
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(buf.Bytes())
	}
}

// accountsFor returns the accounts a form offers: the agent's platform
// connections' (desktop) or the linked broker login's; nil when unknown
// (the form then takes free text).
func (s *Server) accountsFor(ctx context.Context, sess *session, ed *editor) []string {
	var accounts []string
	switch ed.Accounts {
	case AccountsDesktop:
		ans, err := s.opts.Agent.Read(ctx, sess.p.UserID)
		if err != nil || ans == nil || ans.Agent == nil {
			return nil
		}
		for _, c := range ans.Agent.Connections {
			accounts = append(accounts, c.Accounts...)
		}
	case AccountsBroker:
		if s.opts.Broker == nil {
			return nil
		}
		st, err := s.opts.Broker.Status(ctx, sess.p.UserID)
		if err != nil || !st.Linked {
			return nil
		}
		accounts = append(accounts, st.Accounts...)
	default:
		return nil
	}
	if len(accounts) == 0 {
		return nil
	}
	sort.Strings(accounts)
	return slices.Compact(accounts)
}

// settingsIndex serves GET /app/manage: links to every editor.
func (s *Server) settingsIndex(w http.ResponseWriter, r *http.Request, sess *session) {
	type link struct{ Href, Title, Intro string }
	var links []link
	for _, ed := range s.editors {
		links = append(links, link{Href: ed.base, Title: ed.Title, Intro: ed.Intro})
	}
	v := &view{Title: "Settings", Nav: "settings", Data: links}
	if !sess.p.Plan.AtLeast(auth.PlanElite) {
		v.Error = "Copiers, monitors and the other settings come with the elite plan, which this account does not have."
	}
	s.signedView(r, sess, v)
	s.render(w, http.StatusOK, "manage-index", v)
}

// errEditors is returned by New when the editor table is broken.
var errEditors = errors.New("dashboard: the editors' table")

// buildEditors builds every editor of the table.
func buildEditors() ([]*editor, error) {
	kinds := manage.Kinds()
	var out []*editor
	for _, e := range editorTable() {
		ed, err := buildEditor(e, kinds)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errEditors, err)
		}
		out = append(out, ed)
	}
	return out, nil
}

// checkWords returns what is wrong with the editor's conditions, rows
// and panel: a condition names a top-level field of the form, only a
// top-level field has one, only a list's rows are fixed, a panel has a
// name and a loader.
func (ed *editor) checkWords() []string {
	var problems []string
	cond := func(what string, c *Condition) {
		if c == nil {
			return
		}
		if f := ed.byPath[c.Field]; f == nil || strings.Contains(c.Field, ".") || len(c.Values) == 0 {
			problems = append(problems, what+"'s condition names no top-level field of the form, or no value")
		}
	}
	for p, w := range ed.Words {
		if w.OnlyIf != nil && strings.Contains(p, ".") {
			problems = append(problems, p+" has a condition, which only a top-level field may have")
		}
		cond(p, w.OnlyIf)
		if f := ed.byPath[p]; w.FixedRows && (f == nil || f.typ != tRows) {
			problems = append(problems, p+" has fixed rows but is no list of rows")
		}
	}
	for _, a := range ed.Actions {
		cond("the action "+a.Name, a.OnlyIf)
	}
	if ed.Panel != nil && (ed.Panel.Name == "" || ed.Panel.Load == nil || ed.Panel.Name == "state" || ed.Panel.Name == "delete") {
		problems = append(problems, "the panel needs a name of its own and a loader")
	}
	return problems
}

// accountsOf returns the accounts a form of doc offers: the editor's
// (accountsFor), or, with Editor.AccountsFrom, those doc's field picks
// (both sources while it is not chosen).
func (s *Server) accountsOf(ctx context.Context, sess *session, ed *editor, doc map[string]any) []string {
	if ed.AccountsFrom == "" {
		return s.accountsFor(ctx, sess, ed)
	}
	from := func(src string) []string {
		cp := *ed
		cp.Accounts = src
		return s.accountsFor(ctx, sess, &cp)
	}
	switch shownString(doc[ed.AccountsFrom]) {
	case protocol.DestinationDesktop:
		return from(AccountsDesktop)
	case protocol.DestinationBroker:
		return from(AccountsBroker)
	}
	both := append(from(AccountsDesktop), from(AccountsBroker)...)
	if len(both) == 0 {
		return nil
	}
	sort.Strings(both)
	return slices.Compact(both)
}

// formExtras fills what a resource's page shows besides its form: the
// actions that apply to it (Action.OnlyIf) and the kind's panel.
func (s *Server) formExtras(ctx context.Context, sess *session, ed *editor, ev *editorView, loaded map[string]any) {
	ev.Actions = nil
	for _, a := range ed.Actions {
		if a.OnlyIf.holds(loaded) {
			ev.Actions = append(ev.Actions, a)
		}
	}
	if ed.Panel != nil && !ev.New && ev.ID != "" {
		ev.Panel = &panelView{Name: ed.Panel.Name, Data: ed.Panel.Load(ctx, s, sess.p.UserID, ev.ID)}
	}
}

// editorPanel serves GET …/{id}/<panel>: the kind's panel alone (live
// updates).
func (s *Server) editorPanel(ed *editor) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, sess *session) {
		id := r.PathValue("id")
		if !sess.p.Plan.AtLeast(auth.PlanElite) || !idShape.MatchString(id) {
			httpapi.WriteError(w, http.StatusNotFound, httpapi.Error{Code: errcode.NotFound, Detail: "no such resource"})
			return
		}
		var buf bytes.Buffer
		if err := s.pages.byName["manage-form"].ExecuteTemplate(&buf, ed.Panel.Name, ed.Panel.Load(r.Context(), s, sess.p.UserID, id)); err != nil {
			s.log.Error("rendering a panel", zap.String("panel", ed.Panel.Name), zap.Error(err))
			httpapi.WriteError(w, http.StatusInternalServerError, httpapi.Error{Detail: "the block could not be shown"})
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(buf.Bytes())
	}
}
