package manage

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// KindInfo describes one kind of management resource to the relay's
// other doors, from the Kind value the Management API itself runs: the
// dashboard's editors build their forms from it (the resource's Go type
// and the fields callers may not set), so a form never offers a field the
// API refuses, nor misses one it takes.
type KindInfo struct {
	// Name is the kind's name ("copier", "tv-monitor").
	Name string
	// Path is the route under Prefix ("desktop/copiers", "controls").
	Path string
	// Singleton kinds have one resource per user and no collection
	// routes.
	Singleton bool
	// Type is the resource's Go type; its JSON is the resource's body.
	Type reflect.Type
	// ReadOnly lists the top-level JSON fields callers never set: the
	// meta fields (id, createdAt, updatedAt) and the kind's own.
	ReadOnly []string
	// Immutable lists the top-level JSON fields set only at creation.
	Immutable []string
	// Required lists the top-level JSON fields a create must send.
	Required []string
	// Secret lists the top-level JSON fields that hold secrets: written,
	// never shown back.
	Secret []string
	// NotApplicable lists the top-level JSON fields the type has but the
	// kind refuses whatever their value (a broker copier's copyMode).
	NotApplicable []string
	// Actions are the names of the kind's POST {id}/{action} operations,
	// sorted ("restart").
	Actions []string
	// Default returns the JSON of a new resource with the kind's
	// defaults, as a create starts from.
	Default func() []byte
}

// notApplicable are the fields each kind's Guard refuses whatever their
// value.
var notApplicable = map[string][]string{
	brokerCopierName:  brokerCopierNotApplicable,
	brokerMonitorName: brokerMonitorNotApplicable,
}

// Kinds describes every kind of management resource, in the order of the
// Management API's routes. Callers may keep and change what it returns.
func Kinds() []KindInfo {
	ks := kinds()
	out := make([]KindInfo, 0, len(ks))
	for _, k := range ks {
		out = append(out, k.info())
	}
	return out
}

func (k *Kind[T]) info() KindInfo {
	return KindInfo{
		Name:          k.Name,
		Path:          k.Path,
		Singleton:     k.Singleton,
		Type:          reflect.TypeFor[T](),
		ReadOnly:      append(slices.Clone(metaFields), k.ReadOnly...),
		Immutable:     slices.Clone(k.Immutable),
		Required:      slices.Clone(k.Required),
		Secret:        slices.Clone(k.Secret),
		NotApplicable: slices.Clone(notApplicable[k.Name]),
		Actions:       k.actionNames(),
		Default: func() []byte {
			v := k.Default()
			if k.Derive != nil {
				k.Derive(&v, &Snapshot{})
			}
			b, err := json.Marshal(&v)
			if err != nil {
				return []byte("{}")
			}
			return b
		},
	}
}

// ratioStepsText lists RatioSteps for a sentence: "0.25, 0.5, …, 10".
func ratioStepsText() string {
	steps := RatioSteps()
	out := make([]string, len(steps))
	for i, r := range steps {
		out[i] = strconv.FormatFloat(r, 'f', -1, 64)
	}
	return strings.Join(out, ", ")
}

// RatioSteps are the sizing ratios a copier takes (0.25 to 1.75 in steps
// of 0.25, then 2 to 10), ascending: the values a form offers, from the
// rule that judges them.
func RatioSteps() []float64 {
	var out []float64
	for q := 1; q <= 40; q++ {
		if r := float64(q) / 4; validRatio(r) {
			out = append(out, r)
		}
	}
	return out
}

// ReplacementRoots are the instrument roots a copier's symbol replacement
// may name, sorted, each with the one root it may be replaced with (full
// size and micro of one underlying).
func ReplacementRoots() (roots []string, partner map[string]string) {
	partner = make(map[string]string, len(replacementPartner))
	for k, v := range replacementPartner {
		partner[k] = v
	}
	return slices.Clone(replacementRoots), partner
}
