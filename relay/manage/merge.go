package manage

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// How a change's body becomes a resource.
//
// A body is first checked against the resource's Go type (checkShape):
// every key must be, exactly, the JSON name of a field (encoding/json would
// match names without regard to case, and so let "ID" past the read-only
// rules), and every value must fit its field's type; each fault is named
// by its dotted path ("followers.1.sizing.ratio"). Then the body is merged
// onto the stored resource's JSON (mergeJSON: objects merge field by
// field, arrays and other values replace), and the result is decoded into
// a fresh value. Merging JSON rather than decoding onto the stored value
// matters for arrays: encoding/json decodes an array's elements into the
// old ones, so a follower sent without "inverse" would keep the old
// follower's.

// decodeBody decodes a strict JSON document (already checked by
// httpapi.Validate) keeping numbers as written.
func decodeBody(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// toDoc returns v's JSON as a generic document (objects as
// map[string]any, numbers as json.Number).
func toDoc(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d, err := decodeBody(b)
	if err != nil {
		return nil, err
	}
	m, _ := d.(map[string]any)
	return m, nil
}

// mergeJSON merges patch onto base: an object onto an object merges key by
// key; anything else replaces. base's maps may be changed.
func mergeJSON(base, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	bm, ok := base.(map[string]any)
	if !ok {
		return patch
	}
	for k, v := range pm {
		bm[k] = mergeJSON(bm[k], v)
	}
	return bm
}

// fromDoc decodes a generic document into a fresh T.
func fromDoc[T any](doc any) (T, error) {
	var v T
	b, err := json.Marshal(doc)
	if err != nil {
		return v, err
	}
	err = json.Unmarshal(b, &v)
	return v, err
}

// sameJSON reports whether two JSON values are equal as decoded values
// (numbers compared as float64, objects without regard to key order).
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// joinPath appends a key or index to a dotted path.
func joinPath(base, name string) string {
	if base == "" {
		return name
	}
	return base + "." + name
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// checkShape checks the JSON value v against the Go type t, adding to
// errs an unknown_field for each key that names no field and a wrong_type
// for each value that does not fit. null fits every type (it leaves the
// zero value).
func checkShape(v any, t reflect.Type, path string, errs *fieldErrs) {
	if v == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	wrong := func() { errs.add(path, errcode.FieldCodeWrongType) }
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		b, err := json.Marshal(v)
		if err != nil || json.Unmarshal(b, reflect.New(t).Interface()) != nil {
			wrong()
		}
		return
	}
	switch t.Kind() {
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			wrong()
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			wrong()
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); !ok || err != nil {
			wrong()
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if _, err := strconv.ParseUint(string(n), 10, t.Bits()); !ok || err != nil {
			wrong()
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if _, err := strconv.ParseFloat(string(n), t.Bits()); !ok || err != nil {
			wrong()
		}
	case reflect.Slice, reflect.Array:
		a, ok := v.([]any)
		if !ok {
			wrong()
			return
		}
		if t.Kind() == reflect.Array && len(a) > t.Len() {
			errs.limit(path, errcode.FieldCodeOutOfRange, t.Len())
		}
		for i, e := range a {
			checkShape(e, t.Elem(), joinPath(path, strconv.Itoa(i)), errs)
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok || t.Key().Kind() != reflect.String {
			wrong()
			return
		}
		for _, k := range sortedKeys(m) {
			checkShape(m[k], t.Elem(), joinPath(path, k), errs)
		}
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			wrong()
			return
		}
		fields := jsonFields(t)
		for _, k := range sortedKeys(m) {
			f, ok := fields[k]
			if !ok {
				errs.add(httpapi.SafePath(joinPath(path, k)), errcode.FieldCodeUnknownField)
				continue
			}
			checkShape(m[k], f.Type, joinPath(path, k), errs)
		}
	case reflect.Interface:
		// Any JSON value fits.
	default:
		wrong()
	}
}

// sortedKeys returns m's keys in order, so that errors list fields the
// same way every time.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// fieldCache holds jsonFields' answer per struct type.
var fieldCache sync.Map // reflect.Type → map[string]reflect.StructField

// jsonFields returns the fields of struct type t by their exact JSON
// names, those of embedded structs included (the outer field wins), as
// encoding/json names them. Each field's Index is its index sequence in t
// (reflect.Value.FieldByIndex).
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.StructField)
	}
	m := map[string]reflect.StructField{}
	var embedded []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, f)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f
	}
	for _, e := range embedded {
		ft := e.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		for name, f := range jsonFields(ft) {
			if _, taken := m[name]; !taken {
				f.Index = append(append([]int(nil), e.Index...), f.Index...)
				m[name] = f
			}
		}
	}
	fieldCache.Store(t, m)
	return m
}
