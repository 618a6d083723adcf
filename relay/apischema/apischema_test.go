package apischema

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// Two Go types of one name would share a component: the generator refuses.
func TestSchemaNamesUnique(t *testing.T) {
	t.Parallel()
	type Item struct {
		A string `json:"a"`
	}
	first := reflect.TypeFor[Item]()
	second := func() reflect.Type {
		type Item struct {
			B int `json:"b"`
		}
		return reflect.TypeFor[Item]()
	}()
	type Holder struct {
		Items []Item `json:"items"`
	}
	set := New("desktop")
	_, err := set.Ref(reflect.TypeFor[Holder]())
	require.NoError(t, err)
	_, err = set.Ref(first)
	require.NoError(t, err)
	_, err = set.Ref(second)
	require.ErrorContains(t, err, "two types are named Item")

	// Required fields are those without omitempty; maps without it may be
	// null; slices are never null.
	type Rec struct {
		Name  string         `json:"name"`
		Tag   string         `json:"tag,omitempty"`
		IDs   []string       `json:"ids"`
		Extra map[string]any `json:"extra"`
		Opt   *Item          `json:"opt,omitempty"`
	}
	set = New("desktop")
	name, err := set.Ref(reflect.TypeFor[Rec]())
	require.NoError(t, err)
	s := set.schemas[name].Value
	require.Equal(t, []string{"extra", "ids", "name"}, s.Required)
	require.True(t, s.Properties["extra"].Value.Type.Includes("null"))
	require.False(t, s.Properties["ids"].Value.Type.Includes("null"))
	require.Equal(t, ComponentPrefix+"Item", s.Properties["opt"].Ref)
	require.False(t, set.schemas["Item"].Value.Nullable)
}

// An embedded struct's fields are the outer type's, and required as they
// are in it; a field of the outer type hides the embedded one's.
func TestEmbeddedFields(t *testing.T) {
	t.Parallel()
	type Inner struct {
		A    string `json:"a"`
		Mode string `json:"mode"`
	}
	type Outer struct {
		Inner
		Mode *struct{} `json:"mode,omitempty"`
	}
	require.Equal(t, map[string]bool{"a": true, "mode": false}, JSONFields(reflect.TypeFor[Outer](), "desktop"))
	set := New("desktop")
	name, err := set.Ref(reflect.TypeFor[Outer]())
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, set.schemas[name].Value.Required)
}
