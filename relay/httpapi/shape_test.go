package httpapi_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/httpapi"
)

// What a wrong_type field wants is said from the Go type of the field.
func TestShape(t *testing.T) {
	t.Parallel()
	type inner struct {
		A int    `json:"a"`
		B string `json:"b,omitempty"`
	}
	type wide struct {
		inner
		C, D, E bool
		Skip    int `json:"-"`
	}
	copier := reflect.TypeFor[protocol.Copier]()
	for _, tc := range []struct {
		name string
		t    reflect.Type
		path string
		want string
	}{
		{"number", reflect.TypeFor[float64](), "", "a number"},
		{"whole number", reflect.TypeFor[*int64](), "", "a whole number"},
		{"string", reflect.TypeFor[string](), "", "a string"},
		{"bool", reflect.TypeFor[bool](), "", "true or false"},
		{"time", reflect.TypeFor[time.Time](), "", "a time such as 2026-11-18T15:00:00Z"},
		{"raw", reflect.TypeFor[json.RawMessage](), "", "any JSON value"},
		{"list of strings", reflect.TypeFor[[]string](), "", "a list of strings"},
		{"map of numbers", reflect.TypeFor[map[string]float64](), "", "an object of numbers"},
		{"object", reflect.TypeFor[inner](), "", "a {a, b} object"},
		{"embedded fields promoted, names bounded", reflect.TypeFor[wide](), "", "a {a, b, C, D, …} object"},
		{"copier's followers", copier, "followers", "a list of {account, sizing, inverse} objects"},
		{"a follower", copier, "followers.0", "a {account, sizing, inverse} object"},
		{"a follower's ratio", copier, "followers.1.sizing.ratio", "a number"},
		{"copier's leader", copier, "leader", "a string"},
		{"no such field", copier, "nope", ""},
		{"index into a string", copier, "leader.0", ""},
	} {
		require.Equal(t, tc.want, httpapi.ShapeAt(tc.t, tc.path), tc.name)
	}
	require.Equal(t, "followers wants a list of {account, sizing, inverse} objects; the body wants a {id, createdAt, updatedAt, active, …} object",
		httpapi.WrongTypeDetail(copier, []httpapi.FieldError{
			{Path: "followers", Code: "wrong_type"}, {Path: "leader", Code: "required"}, {Path: "", Code: "wrong_type"},
		}))
}
