// Package apischema turns the Go types of the relay's API bodies into
// the JSON Schemas of its machine-readable contracts (the trading API's
// OpenAPI and AsyncAPI documents, the Management API's OpenAPI document),
// with kin-openapi's openapi3gen, so every document describes a body from
// the one type that encodes it.
package apischema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"
)

// Set turns Go types into JSON Schemas (draft 2020-12, as OpenAPI
// 3.1 and AsyncAPI 3.0 read them) with kin-openapi's openapi3gen: every
// struct becomes a named component (#/components/schemas/Position), shared
// by the OpenAPI documents and the AsyncAPI document.
//
// The rules the generator follows, on top of openapi3gen's:
//   - a struct field is required unless its JSON tag says omitempty;
//   - slices are arrays, never null: the agent and package profile write
//     empty lists as [] (the end-to-end test holds them to it);
//   - a map without omitempty may be null (an absent map encodes so);
//   - no OpenAPI 3.0 "nullable": the documents are 3.1;
//   - a field tagged family:"tv" is the broker family's only: it is kept
//     in the broker family's documents (family "tv") and left out of
//     the desktop family's ("desktop").
type Set struct {
	// family is the family whose documents the schemas are for
	// ("desktop" or "tv"): a field tagged with another family is left out.
	family  string
	schemas openapi3.Schemas
	// names maps each component name to the Go type it was made from, so
	// that two types of one name fail loudly instead of sharing a schema.
	names map[string]reflect.Type
}

// New returns an empty set for the documents of family ("desktop" or
// "tv").
func New(family string) *Set {
	return &Set{family: family, schemas: openapi3.Schemas{}, names: map[string]reflect.Type{}}
}

// ComponentPrefix starts the reference of a component schema.
const ComponentPrefix = "#/components/schemas/"

// Ref generates the schema of t, a struct type, and the schemas of the
// structs it holds, and returns t's component name.
func (s *Set) Ref(t reflect.Type) (string, error) {
	if t.Kind() != reflect.Struct || t.Name() == "" {
		return "", fmt.Errorf("apischema: %v is not a named struct type", t)
	}
	name := t.Name()
	if err := s.claim(name, t); err != nil {
		return "", err
	}
	if _, done := s.schemas[name]; done {
		return name, nil
	}
	var nameErr error
	gen := openapi3gen.NewGenerator(
		openapi3gen.CreateComponentSchemas(openapi3gen.ExportComponentSchemasOptions{ExportComponentSchemas: true, ExportTopLevelSchema: true}),
		openapi3gen.CreateTypeNameGenerator(func(t reflect.Type) string {
			if err := s.claim(t.Name(), t); err != nil && nameErr == nil {
				nameErr = err
			}
			return t.Name()
		}),
		openapi3gen.SchemaCustomizer(s.customize),
	)
	generated := openapi3.Schemas{}
	if _, err := gen.NewSchemaRefForValue(reflect.New(t).Elem().Interface(), generated); err != nil {
		return "", fmt.Errorf("apischema: generating the schema of %v: %w", t, err)
	}
	if nameErr != nil {
		return "", nameErr
	}
	for n, sr := range generated {
		if _, ok := s.schemas[n]; !ok {
			s.schemas[n] = sr
		}
	}
	if _, ok := s.schemas[name]; !ok {
		return "", fmt.Errorf("apischema: the schema of %v was not generated", t)
	}
	return name, nil
}

func (s *Set) claim(name string, t reflect.Type) error {
	if prev, ok := s.names[name]; ok && prev != t {
		return fmt.Errorf("apischema: two types are named %s in the API documents: %v and %v", name, prev, t)
	}
	s.names[name] = t
	return nil
}

// customize applies the rules of Set to each generated schema. A
// field tagged with a family other than the set's (protocol.Order's
// trailDistance, tagged family:"tv") is left out: only that family's
// platforms fill it.
func (s *Set) customize(_ string, t reflect.Type, tag reflect.StructTag, schema *openapi3.Schema) error {
	if !inFamily(tag, s.family) {
		return &openapi3gen.ExcludeSchemaSentinel{}
	}
	schema.Nullable = false
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		schema.Required = requiredFields(t, s.family)
	case reflect.Map:
		if !omitEmpty(tag) {
			schema.Type = &openapi3.Types{openapi3.TypeObject, openapi3.TypeNull}
		}
	}
	return nil
}

// requiredFields lists the JSON names of t's fields, in the documents of
// family, that are always written: those without omitempty.
func requiredFields(t reflect.Type, family string) []string {
	var req []string
	for name, required := range JSONFields(t, family) {
		if required {
			req = append(req, name)
		}
	}
	sort.Strings(req)
	return req
}

func omitEmpty(tag reflect.StructTag) bool {
	_, opts, _ := strings.Cut(tag.Get("json"), ",")
	for _, o := range strings.Split(opts, ",") {
		if o == "omitempty" || o == "omitzero" {
			return true
		}
	}
	return false
}

// inFamily reports whether a field with tag belongs in the documents of
// family: a field without a family tag belongs in every family's.
func inFamily(tag reflect.StructTag, family string) bool {
	f, tagged := tag.Lookup("family")
	return !tagged || f == family
}

// JSONFields lists the JSON names of t's fields in the documents of family
// and whether each is required.
func JSONFields(t reflect.Type, family string) map[string]bool {
	out := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("json")
		if !ok && f.Anonymous && f.Type.Kind() == reflect.Struct {
			// An embedded struct's fields are the outer type's, unless
			// the outer type has a field of the same name.
			for name, req := range JSONFields(f.Type, family) {
				if _, own := ownJSONField(t, name); !own {
					out[name] = req
				}
			}
			continue
		}
		if !ok || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !inFamily(f.Tag, family) {
			continue
		}
		out[name] = !omitEmpty(f.Tag)
	}
	return out
}

// ownJSONField reports whether t declares, itself, a field of JSON name.
func ownJSONField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); n == name && f.IsExported() {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// Objects returns the component schemas as plain JSON values, for the
// documents, which are built as maps.
func (s *Set) Objects() (map[string]any, error) {
	raw, err := json.Marshal(s.schemas)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Family returns the family the set's schemas are for.
func (s *Set) Family() string { return s.family }

// Ref returns a reference to the component schema name.
func Ref(name string) map[string]any { return map[string]any{"$ref": ComponentPrefix + name} }
