package manage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"time"

	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// The generic handlers: what a request does to a kind of resource, the
// same for every kind. The HTTP side (admission, input, storage, the push)
// is in server.go and admission.go; this file holds the kind-dependent
// part behind the kindOps interface, which *Kind[T] implements for every
// T, so the server handles kinds without knowing their types.

// resKey names a stored resource.
type resKey struct{ kind, id string }

// state is a user's management state as loaded: the Snapshot the hooks
// see, and each stored resource's version.
type state struct {
	userID   string
	snap     Snapshot
	versions map[resKey]int64
}

// version returns the stored version of a resource, 0 when it was never
// stored.
func (st *state) version(kind, id string) int64 { return st.versions[resKey{kind, id}] }

// kindOps is a kind of resource as the server handles it.
type kindOps interface {
	name() string
	path() string
	singleton() bool
	needsAgent() bool
	hasAction(name string) bool
	actionNames() []string
	// secretFields are the fields the activity log never shows the
	// values of (Kind.Secret).
	secretFields() []string
	// decode adds a stored resource to st's snapshot.
	decode(st *state, id string, body []byte) error
	// fill gives a singleton never stored its default value.
	fill(st *state)
	// derive fills the computed fields of the kind's resources in st.
	derive(st *state)
	// list returns the kind's resources in st, as shown.
	list(st *state) []any
	// show returns one resource (the singleton when id is ""), as shown.
	show(st *state, id string) (any, bool)
	// change judges and prepares one change.
	change(in *changeIn) (*changeOut, *httpapi.Error)
	// info describes the kind to the relay's other doors (Kinds).
	info() KindInfo
}

// changeIn is one requested change of a resource.
type changeIn struct {
	op     Op
	action string
	// id is the resource's id; "" on create and for singletons.
	id string
	// body is the request's JSON object; nil when there is none.
	body []byte
	// direct marks the relay's own change of a field callers may not
	// set (the kill switch): no read-only rules, no Guard.
	direct bool
	header http.Header
	st     *state
	now    time.Time
	family string
	agent  Agent
	env    *Env
}

// changeOut is a change judged acceptable, ready to store.
type changeOut struct {
	created, deleted, changed bool
	id                        string
	// value is the resource as shown after the change (as before it when
	// nothing changed); nil when deleted.
	value any
	// body is the JSON to store; nil when deleted.
	body []byte
	// version is the stored version before the change (0: never stored).
	version int64
	// before is the resource's JSON before the change; nil on create.
	before []byte
	// commit puts the change into the snapshot it was judged on, so that
	// the configuration pushed to the agent holds it.
	commit func()
	// extra, status and answer are the hooks' Change.Extra, Status and
	// Answer.
	extra  map[string]any
	status int
	answer any
}

// notFound is the 404 of an id that names no resource of the user.
func notFound() *httpapi.Error {
	return &httpapi.Error{Status: http.StatusNotFound, Code: errcode.NotFound, Detail: "no such resource"}
}

// metaFields are the read-only fields every resource has.
var metaFields = []string{"id", "createdAt", "updatedAt"}

func (k *Kind[T]) name() string     { return k.Name }
func (k *Kind[T]) path() string     { return k.Path }
func (k *Kind[T]) singleton() bool  { return k.Singleton }
func (k *Kind[T]) needsAgent() bool { return k.NeedsAgent }

func (k *Kind[T]) hasAction(name string) bool {
	_, ok := k.Actions[name]
	return ok
}

func (k *Kind[T]) actionNames() []string {
	names := make([]string, 0, len(k.Actions))
	for n := range k.Actions {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// slice returns the Snapshot's list of T, or nil for a singleton kind.
func (k *Kind[T]) slice(s *Snapshot) *[]T {
	for _, p := range []any{&s.Copiers, &s.Monitors, &s.Groups, &s.Templates, &s.BrokerCopiers, &s.BrokerMonitors, &s.Alerts} {
		if q, ok := p.(*[]T); ok {
			return q
		}
	}
	return nil
}

// single returns the Snapshot's T of a singleton kind, or nil.
func (k *Kind[T]) single(s *Snapshot) *T {
	for _, p := range []any{&s.Controls, &s.NewsLockout, &s.ConnectionSettings} {
		if q, ok := p.(*T); ok {
			return q
		}
	}
	return nil
}

// find returns the resource with the id (the singleton, whatever the id).
func (k *Kind[T]) find(s *Snapshot, id string) (*T, bool) {
	if k.Singleton {
		p := k.single(s)
		return p, p != nil
	}
	list := k.slice(s)
	if list == nil {
		return nil, false
	}
	for i := range *list {
		if k.Meta(&(*list)[i]).ID == id {
			return &(*list)[i], true
		}
	}
	return nil, false
}

func (k *Kind[T]) decode(st *state, id string, body []byte) error {
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("manage: stored %s %s: %w", k.Name, id, err)
	}
	k.Meta(&v).ID = id
	if k.Singleton {
		if p := k.single(&st.snap); p != nil {
			*p = v
		}
		return nil
	}
	if list := k.slice(&st.snap); list != nil {
		*list = append(*list, v)
	}
	return nil
}

func (k *Kind[T]) fill(st *state) {
	if !k.Singleton {
		return
	}
	id := singletonID(st.userID, k.Name)
	if st.version(k.Name, id) > 0 {
		return
	}
	if p := k.single(&st.snap); p != nil {
		v := k.Default()
		k.Meta(&v).ID = id
		*p = v
	}
}

func (k *Kind[T]) derive(st *state) {
	if k.Derive == nil {
		return
	}
	if k.Singleton {
		if p := k.single(&st.snap); p != nil {
			k.Derive(p, &st.snap)
		}
		return
	}
	if list := k.slice(&st.snap); list != nil {
		for i := range *list {
			k.Derive(&(*list)[i], &st.snap)
		}
	}
}

func (k *Kind[T]) list(st *state) []any {
	list := k.slice(&st.snap)
	out := make([]any, 0)
	if list == nil {
		return out
	}
	for i := range *list {
		out = append(out, k.shown((*list)[i]))
	}
	return out
}

// shown returns v as callers see it (Kind.Show).
func (k *Kind[T]) shown(v T) T {
	if k.Show != nil {
		k.Show(&v)
	}
	return v
}

func (k *Kind[T]) show(st *state, id string) (any, bool) {
	p, ok := k.find(&st.snap, id)
	if !ok {
		return nil, false
	}
	return k.shown(*p), true
}

// copyOf returns a deep copy of v (through its JSON, which is all a
// resource holds).
func copyOf[T any](v *T) (T, error) {
	var out T
	b, err := json.Marshal(v)
	if err != nil {
		return out, err
	}
	err = json.Unmarshal(b, &out)
	return out, err
}

// fieldJSON returns the JSON of v's field with the JSON name, "null" when
// there is none.
func fieldJSON[T any](v *T, name string) []byte {
	f, ok := jsonFields(reflect.TypeFor[T]())[name]
	if !ok {
		return []byte("null")
	}
	b, err := json.Marshal(reflect.ValueOf(v).Elem().FieldByIndex(f.Index).Interface())
	if err != nil {
		return []byte("null")
	}
	return b
}

// internal is the 500 of a resource the relay cannot encode or decode.
func internal(err error) *httpapi.Error {
	return &httpapi.Error{Status: http.StatusInternalServerError, Code: errcode.InternalError,
		Detail: "the relay failed to process the resource"}
}

func (k *Kind[T]) change(in *changeIn) (*changeOut, *httpapi.Error) {
	snap := &in.st.snap
	id := in.id
	if k.Singleton {
		id = singletonID(in.st.userID, k.Name)
	}
	var old *T
	var version int64
	if in.op != OpCreate {
		p, ok := k.find(snap, id)
		if !ok {
			return nil, notFound()
		}
		o, err := copyOf(p)
		if err != nil {
			return nil, internal(err)
		}
		old = &o
		version = in.st.version(k.Name, id)
		if !ifMatch(in.header, version, true) {
			return nil, preconditionFailed(version)
		}
	}
	env := in.env
	if env == nil {
		env = &Env{}
	}
	c := &Change[T]{Op: in.op, Action: in.action, Old: old, Snap: snap, Now: in.now, Family: in.family,
		UserID: in.st.userID, Env: env}
	var n T
	switch in.op {
	case OpDelete:
		if k.Guard != nil {
			if e := k.Guard(c); e != nil {
				return nil, e
			}
		}
		if k.Check != nil {
			if e := k.Check(c); e != nil {
				return nil, e
			}
		}
		before, err := json.Marshal(old)
		if err != nil {
			return nil, internal(err)
		}
		return &changeOut{deleted: true, changed: true, id: id, version: version, before: before, commit: func() { k.remove(snap, id) }}, nil
	case OpAction:
		if k.Guard != nil {
			if e := k.Guard(c); e != nil {
				return nil, e
			}
		}
		var err error
		if n, err = copyOf(old); err != nil {
			return nil, internal(err)
		}
		c.New = &n
		fn := k.Actions[in.action]
		if fn == nil {
			return nil, notFound()
		}
		if e := fn(c, in.agent); e != nil {
			return nil, e
		}
		*k.Meta(&n) = *k.Meta(old)
		if k.Derive != nil {
			k.Derive(&n, snap)
		}
	default:
		var e *httpapi.Error
		if n, e = k.merge(in, c, old); e != nil {
			return nil, e
		}
		if k.Seal != nil {
			c.New = &n
			if e := k.Seal(c); e != nil {
				return nil, e
			}
		}
	}
	if in.op == OpCreate && k.MaxCount > 0 {
		if list := k.slice(snap); list != nil && len(*list) >= k.MaxCount {
			code := k.LimitCode
			if code == "" {
				code = errcode.LimitReached
			}
			return nil, refuse(code, fmt.Sprintf("at most %d of these resources may exist; delete one first", k.MaxCount))
		}
	}
	out := &changeOut{created: in.op == OpCreate, id: k.Meta(&n).ID, version: version,
		extra: c.Extra, status: c.Status, answer: c.Answer}
	if old != nil {
		before, err1 := json.Marshal(old)
		after, err2 := json.Marshal(&n)
		if err1 != nil || err2 != nil {
			return nil, internal(nil)
		}
		out.changed = !bytes.Equal(before, after)
		out.before = before
	} else {
		out.changed = true
	}
	if !out.changed {
		out.value = k.shown(*old)
		return out, nil
	}
	m := k.Meta(&n)
	m.UpdatedAt = in.now
	if version == 0 {
		m.CreatedAt = in.now
	}
	body, err := json.Marshal(&n)
	if err != nil {
		return nil, internal(err)
	}
	out.body, out.value, out.id = body, k.shown(n), m.ID
	if len(c.Extra) > 0 {
		v, err := withExtra(out.value, c.Extra)
		if err != nil {
			return nil, internal(err)
		}
		out.value = v
	}
	out.commit = func() { k.put(snap, n) }
	return out, nil
}

// merge runs a create, PATCH or PUT up to Check: the read-only and
// immutable field rules, Guard, the shape of the body, the merge onto the
// stored resource (onto Default on create and PUT), Derive, Validate and
// Check. It returns the resource as the change leaves it, its times not
// yet set.
func (k *Kind[T]) merge(in *changeIn, c *Change[T], old *T) (T, *httpapi.Error) {
	var zero T
	doc, err := decodeBody(in.body)
	if err != nil {
		return zero, &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.InvalidJSON, Detail: "the body is not valid JSON"}
	}
	top, ok := doc.(map[string]any)
	if !ok {
		var fe fieldErrs
		fe.add("", errcode.FieldCodeWrongType)
		return zero, &httpapi.Error{Status: http.StatusUnprocessableEntity, Code: errcode.ValidationFailed,
			Detail: "the body must be a JSON object", Fields: fe}
	}
	var sent map[string]json.RawMessage
	if err := json.Unmarshal(in.body, &sent); err != nil {
		return zero, internal(err)
	}
	c.Sent = sent
	readOnly := append(slices.Clone(metaFields), k.ReadOnly...)
	if !in.direct {
		if e := k.fieldRules(in.op, sent, top, old, readOnly); e != nil {
			return zero, e
		}
		if k.Guard != nil {
			if e := k.Guard(c); e != nil {
				return zero, e
			}
		}
	}
	var fe fieldErrs
	if in.op == OpCreate {
		for _, f := range k.Required {
			if v, ok := sent[f]; !ok || string(bytes.TrimSpace(v)) == "null" {
				fe.add(f, errcode.FieldCodeRequired)
			}
		}
	}
	checkShape(top, reflect.TypeFor[T](), "", &fe)
	if e := fe.err(); e != nil {
		// What each wrong_type field wants, from the resource's Go type.
		if s := httpapi.WrongTypeDetail(reflect.TypeFor[T](), fe); s != "" {
			e.Detail += ": " + s
		}
		return zero, e
	}
	var base map[string]any
	switch {
	case in.op == OpCreate:
		base, err = toDoc(k.Default())
	case in.op == OpPut && !in.direct:
		// PUT replaces the resource: the body onto the defaults, with
		// the fields callers do not set kept.
		var was map[string]any
		if base, err = toDoc(k.Default()); err == nil {
			if was, err = toDoc(old); err == nil {
				for _, f := range append(readOnly, k.Immutable...) {
					if v, ok := was[f]; ok {
						base[f] = v
					} else {
						delete(base, f)
					}
				}
			}
		}
	default:
		base, err = toDoc(old)
	}
	if err != nil {
		return zero, internal(err)
	}
	n, err := fromDoc[T](mergeJSON(base, top))
	if err != nil {
		var fe fieldErrs
		fe.add("", errcode.FieldCodeWrongType)
		return zero, fe.err()
	}
	if old != nil {
		*k.Meta(&n) = *k.Meta(old)
	} else {
		m := k.Meta(&n)
		*m = *k.Meta(new(T))
		m.ID = newID(k.Name)
	}
	if k.Derive != nil {
		k.Derive(&n, c.Snap)
	}
	c.New = &n
	if k.Validate != nil {
		if e := k.Validate(c); e != nil {
			return zero, e
		}
	}
	if k.Check != nil {
		if e := k.Check(c); e != nil {
			return zero, e
		}
	}
	return n, nil
}

// fieldRules applies the read-only and immutable field rules to a body:
// on create a read-only field is refused whatever its value; on PATCH and
// PUT a read-only or immutable field equal to the stored value is ignored
// (removed from top, so a resource read can be sent back) and a different
// one is refused (422 field_read_only, else immutable_field).
func (k *Kind[T]) fieldRules(op Op, sent map[string]json.RawMessage, top map[string]any, old *T, readOnly []string) *httpapi.Error {
	var ro, imm fieldErrs
	for _, f := range readOnly {
		v, ok := sent[f]
		if !ok {
			continue
		}
		if op != OpCreate && old != nil && sameJSON(v, fieldJSON(old, f)) {
			delete(top, f)
			continue
		}
		ro.add(f, errcode.FieldReadOnly)
	}
	if op != OpCreate && old != nil {
		for _, f := range k.Immutable {
			v, ok := sent[f]
			if !ok {
				continue
			}
			if sameJSON(v, fieldJSON(old, f)) {
				delete(top, f)
				continue
			}
			imm.add(f, errcode.ImmutableField)
		}
	}
	if len(ro) > 0 {
		return refuse(errcode.FieldReadOnly, "the body sets fields that cannot be changed; fields lists them", ro...)
	}
	if len(imm) > 0 {
		return refuse(errcode.ImmutableField, "the body changes fields set only at creation; fields lists them", imm...)
	}
	return nil
}

// put stores v in the snapshot, replacing the resource with its id.
func (k *Kind[T]) put(s *Snapshot, v T) {
	if k.Singleton {
		if p := k.single(s); p != nil {
			*p = v
		}
		return
	}
	list := k.slice(s)
	if list == nil {
		return
	}
	id := k.Meta(&v).ID
	for i := range *list {
		if k.Meta(&(*list)[i]).ID == id {
			(*list)[i] = v
			return
		}
	}
	*list = append(*list, v)
}

// remove deletes the resource with the id from the snapshot.
func (k *Kind[T]) remove(s *Snapshot, id string) {
	list := k.slice(s)
	if list == nil {
		return
	}
	*list = slices.DeleteFunc(*list, func(v T) bool { return k.Meta(&v).ID == id })
}

// Every kind is a kindOps.
var (
	_ kindOps = copierKind
	_ kindOps = monitorKind
	_ kindOps = groupKind
	_ kindOps = templateKind
	_ kindOps = controlsKind
	_ kindOps = newsKind
	_ kindOps = connectionsKind
	_ kindOps = alertKind
)

// withExtra returns v's JSON object with the fields of extra added.
func withExtra(v any, extra map[string]any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, x := range extra {
		m[k] = x
	}
	return m, nil
}
