package httpapi

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"time"

	"tradebridge/relay/errcode"
)

// maxShapeFields bounds the field names Shape lists for an object.
const maxShapeFields = 4

var (
	timeType            = reflect.TypeFor[time.Time]()
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// Shape says, in words, the JSON value a Go type decodes from, for the
// detail of a wrong_type: "a number", "a whole number", "a string", "true
// or false", "a list of {account, sizing, inverse} objects", "an object".
// An object names its first fields by their JSON names. It returns "" for
// a type whose form its own UnmarshalJSON decides.
func Shape(t reflect.Type) string { return shape(t, false) }

// shape is Shape, in the plural when plural is set ("numbers").
func shape(t reflect.Type, plural bool) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pick := func(one, many string) string {
		if plural {
			return many
		}
		return one
	}
	switch {
	case t == timeType:
		return pick("a time such as 2026-11-18T15:00:00Z", "times such as 2026-11-18T15:00:00Z")
	case t == rawMessageType:
		return pick("any JSON value", "JSON values")
	case reflect.PointerTo(t).Implements(jsonUnmarshalerType):
		return ""
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		return pick("a string", "strings")
	}
	switch t.Kind() {
	case reflect.Bool:
		return pick("true or false", "booleans")
	case reflect.String:
		return pick("a string", "strings")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return pick("a whole number", "whole numbers")
	case reflect.Float32, reflect.Float64:
		return pick("a number", "numbers")
	case reflect.Slice, reflect.Array:
		elem := shape(t.Elem(), true)
		if elem == "" {
			return pick("a list", "lists")
		}
		return pick("a list of ", "lists of ") + elem
	case reflect.Map:
		elem := shape(t.Elem(), true)
		if elem == "" {
			return pick("an object", "objects")
		}
		return pick("an object of ", "objects of ") + elem
	case reflect.Struct:
		names := jsonNames(t)
		if len(names) == 0 {
			return pick("an object", "objects")
		}
		list := strings.Join(names[:min(len(names), maxShapeFields)], ", ")
		if len(names) > maxShapeFields {
			list += ", …"
		}
		return pick("a {"+list+"} object", "{"+list+"} objects")
	case reflect.Interface:
		return pick("any JSON value", "JSON values")
	}
	return ""
}

// ShapeAt is the Shape of the value at the dotted path (a FieldError's
// Path, "followers.1.sizing.ratio") inside a value of type t, walking
// struct fields by their JSON names, list indexes and map keys; "" when
// the path names nothing in t. The empty path is t itself.
func ShapeAt(t reflect.Type, path string) string {
	if path != "" {
		for part := range strings.SplitSeq(path, ".") {
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			switch t.Kind() {
			case reflect.Slice, reflect.Array:
				if _, err := strconv.Atoi(part); err != nil {
					return ""
				}
				t = t.Elem()
			case reflect.Map:
				t = t.Elem()
			case reflect.Struct:
				f, ok := jsonField(t, part)
				if !ok {
					return ""
				}
				t = f.Type
			default:
				return ""
			}
		}
	}
	return Shape(t)
}

// WrongTypeDetail says what each wrong_type field of fields wants, the
// shapes derived from t, the type the body decodes into: "followers
// wants a list of {account, sizing, inverse} objects; the body wants a
// {…} object". It returns "" when no field is wrong_type or no shape is
// known.
func WrongTypeDetail(t reflect.Type, fields []FieldError) string {
	var parts []string
	for _, fe := range fields {
		if fe.Code != errcode.FieldCodeWrongType {
			continue
		}
		s := ShapeAt(t, fe.Path)
		if s == "" {
			continue
		}
		name := fe.Path
		if name == "" {
			name = "the body"
		}
		parts = append(parts, name+" wants "+s)
	}
	return strings.Join(parts, "; ")
}

// jsonNames returns the JSON names of struct type t's fields in order,
// those of embedded structs in their place.
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := jsonName(f)
		if !ok {
			continue
		}
		if name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, jsonNames(ft)...)
			}
			continue
		}
		out = append(out, name)
	}
	return out
}

// jsonField finds the field of struct type t that encoding/json names
// name exactly, embedded structs included.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		n, ok := jsonName(f)
		if !ok {
			continue
		}
		if n == name {
			return f, true
		}
		if n == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if g, ok := jsonField(ft, name); ok {
					return g, true
				}
			}
		}
	}
	return reflect.StructField{}, false
}

// jsonName is the JSON name of a struct field as encoding/json gives it;
// "" for an embedded struct without a name of its own (its fields are
// promoted); ok false for a field encoding/json skips.
func jsonName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if f.Anonymous && name == "" {
		return "", true
	}
	if !f.IsExported() {
		return "", false
	}
	if name == "" {
		name = f.Name
	}
	return name, true
}
