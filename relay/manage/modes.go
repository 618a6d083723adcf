package manage

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// Management service modes, set by the operator (Modes.Set).
const (
	// ModeNormal serves every request.
	ModeNormal = "normal"
	// ModeUnavailable answers every management request 503
	// management_unavailable (or, for a family, family_unavailable).
	ModeUnavailable = "unavailable"
	// ModeReadOnly serves reads and answers changes 503
	// management_read_only.
	ModeReadOnly = "read_only"
	// ModeBusy sheds every request 503 management_busy, except a copier's
	// stop fast path and the kill switch.
	ModeBusy = "busy"
)

// Families of management routes: FamilyDesktop is the routes under
// desktop/ (the agent's platform), FamilyBroker the broker's routes under tv/.
const (
	FamilyDesktop = "desktop"
	FamilyBroker  = "tv"
)

// Families lists the families of management routes.
var Families = []string{FamilyDesktop, FamilyBroker}

// ModeState is a snapshot of the service modes, and their JSON form on the
// operator's routes: {"management":"read_only","families":{"tv":"unavailable"}}.
// A family absent from Families is normal.
type ModeState struct {
	Management string            `json:"management"`
	Families   map[string]string `json:"families"`
}

// Validate reports a mode or family the relay does not know.
func (m ModeState) Validate() error {
	switch m.Management {
	case ModeNormal, ModeUnavailable, ModeReadOnly, ModeBusy:
	default:
		return fmt.Errorf("management mode must be one of normal, unavailable, read_only, busy")
	}
	for f, mode := range m.Families {
		if !slices.Contains(Families, f) {
			return fmt.Errorf("unknown family %q: families are desktop and tv", f)
		}
		if mode != ModeNormal && mode != ModeUnavailable {
			return fmt.Errorf("a family's mode must be normal or unavailable")
		}
	}
	return nil
}

// normalized returns m with every family listed and an empty management
// mode taken as normal.
func (m ModeState) normalized() ModeState {
	out := ModeState{Management: m.Management, Families: make(map[string]string, len(Families))}
	if out.Management == "" {
		out.Management = ModeNormal
	}
	for _, f := range Families {
		out.Families[f] = ModeNormal
		if v := m.Families[f]; v != "" {
			out.Families[f] = v
		}
	}
	return out
}

// ParseFamilies reads a comma-separated list of families ("desktop,tv"),
// as the --family-unavailable flags give it, into a ModeState's Families
// with each one unavailable. An empty string is no family.
func ParseFamilies(list string) (map[string]string, error) {
	out := map[string]string{}
	for part := range strings.SplitSeq(list, ",") {
		f := strings.TrimSpace(part)
		if f == "" {
			continue
		}
		if !slices.Contains(Families, f) {
			return nil, fmt.Errorf("unknown family %q: families are desktop and tv", f)
		}
		out[f] = ModeUnavailable
	}
	return out, nil
}

// Modes holds the relay's live service modes of the Management API: the
// management mode (normal, unavailable, read_only, busy) and, per family
// (desktop, tv), normal or unavailable. It lives in memory, starts from
// the relay's flags and changes through the operator's routes; every
// request reads it, so a change takes effect at once. Safe for concurrent
// use. The zero Modes is all normal.
type Modes struct {
	mu    sync.RWMutex
	state ModeState
}

// NewModes returns Modes set to m; an invalid m is an error.
func NewModes(m ModeState) (*Modes, error) {
	var ms Modes
	if err := ms.Set(m); err != nil {
		return nil, err
	}
	return &ms, nil
}

// Get returns the current modes, every family listed.
func (m *Modes) Get() ModeState {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.state.normalized()
}

// Set replaces the modes: an empty management mode is normal, a family not
// listed is normal. An invalid state changes nothing.
func (m *Modes) Set(s ModeState) error {
	if s.Management == "" {
		s.Management = ModeNormal
	}
	if err := s.Validate(); err != nil {
		return err
	}
	s = s.normalized()
	m.mu.Lock()
	m.state = s
	m.mu.Unlock()
	return nil
}

// management returns the management mode.
func (m *Modes) management() string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.state.Management == "" {
		return ModeNormal
	}
	return m.state.Management
}

// familyDown reports whether family is unavailable.
func (m *Modes) familyDown(family string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.state.Families[family] == ModeUnavailable
}

// gate returns the 503 refusal the modes give a request to family (""
// for the routes of no family) that changes something or not, or nil.
func (m *Modes) gate(family string, change bool) *httpapi.Error {
	switch m.management() {
	case ModeUnavailable:
		return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.ManagementUnavailable,
			Detail: "the Management API is temporarily off; retry later"}
	case ModeReadOnly:
		if change {
			return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.ManagementReadOnly,
				Detail: "changes are paused for now; reads work"}
		}
	}
	if family != "" && m.familyDown(family) {
		return &httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.FamilyUnavailable,
			Detail: "this part of the Management API is temporarily off; retry later"}
	}
	return nil
}

// OperatorModesPath is the operator listener's route of the service
// modes: GET reads them, PUT replaces them.
const OperatorModesPath = "/v1/operator/modes"

// ModesHandler serves the operator's GET and PUT OperatorModesPath on m:
// both answer {"success":true,"data":<ModeState>} with the modes then in
// force; PUT takes a ModeState (strict JSON; a family not listed becomes
// normal) and answers 422 validation_failed for an unknown mode or
// family.
func ModesHandler(m *Modes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			if e := httpapi.RejectBody(r); e != nil {
				httpapi.WriteError(w, e.Status, *e)
				return
			}
		case http.MethodPut:
			var raw json.RawMessage
			if e := httpapi.ReadJSON(w, r, &raw, httpapi.ReadOptions{}); e != nil {
				httpapi.WriteError(w, e.Status, *e)
				return
			}
			var s ModeState
			dec := json.NewDecoder(strings.NewReader(string(raw)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&s); err != nil {
				httpapi.WriteError(w, http.StatusUnprocessableEntity, httpapi.Error{Code: errcode.ValidationFailed,
					Detail: "the body must be {\"management\": mode, \"families\": {family: mode}}"})
				return
			}
			if err := m.Set(s); err != nil {
				httpapi.WriteError(w, http.StatusUnprocessableEntity, httpapi.Error{Code: errcode.ValidationFailed,
					Detail: "modes are normal, unavailable, read_only or busy; families desktop or tv, normal or unavailable"})
				return
			}
		default:
			httpapi.MethodNotAllowed(w, http.MethodGet, http.MethodPut)
			return
		}
		httpapi.Write(w, http.StatusOK, m.Get())
	})
}
