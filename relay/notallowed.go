package relay

import (
	"net/http"
	"slices"
	"strings"

	"tradebridge/relay/httpapi"
)

// routeMethods are the methods the relay answers 405 for on a path that
// serves others. HEAD is served wherever GET is (net/http's rule).
var routeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// routes is the relay's ServeMux, recording the "METHOD /path" patterns
// registered on it so that wrong methods can be answered 405.
type routes struct {
	*http.ServeMux
	patterns []string
}

// Handle registers pattern on the mux and records it.
func (m *routes) Handle(pattern string, h http.Handler) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.Handle(pattern, h)
}

// HandleFunc registers pattern on the mux and records it.
func (m *routes) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(h))
}

// notAllowed answers 405 method_not_allowed with the methods the path
// serves.
type notAllowed struct{ allow []string }

func (n notAllowed) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	httpapi.MethodNotAllowed(w, n.allow...)
}

// addNotAllowed registers, for every path pattern served for some methods,
// a 405 handler for each other method of routeMethods. Without it a wrong
// method can reach another route whose wildcard matches the path: GET
// /v1/api/accounts/a/orders/place would be GetOrder of an order named
// "place". The 405 patterns are as specific as the routes they stand
// beside, so net/http prefers them to any wildcard route of their method.
// Call it after every route is registered.
func (m *routes) addNotAllowed() {
	type path struct {
		pattern string // the path as first registered
		methods []string
	}
	byShape := map[string]*path{}
	var order []string
	for _, p := range m.patterns {
		method, rest, ok := strings.Cut(p, " ")
		if !ok || !strings.HasPrefix(rest, "/") {
			continue // a pattern for every method, or with a host
		}
		shape := pathShape(rest)
		if byShape[shape] == nil {
			byShape[shape] = &path{pattern: rest}
			order = append(order, shape)
		}
		byShape[shape].methods = append(byShape[shape].methods, method)
	}
	for _, shape := range order {
		p := byShape[shape]
		allow := slices.Clone(p.methods)
		slices.SortFunc(allow, func(a, b string) int { return slices.Index(routeMethods, a) - slices.Index(routeMethods, b) })
		for _, method := range routeMethods {
			if !slices.Contains(p.methods, method) {
				m.ServeMux.Handle(method+" "+p.pattern, notAllowed{allow: allow})
			}
		}
	}
}

// pathShape is a path pattern with its wildcards' names erased, so that
// /a/{id} and /a/{orderId} count as one path.
func pathShape(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") {
			segs[i] = "{}"
		}
	}
	return strings.Join(segs, "/")
}

// fallback answers requests no route matched: 405 with an Allow header when
// the path exists for other methods, else 404, both with the service's JSON
// error body.
func fallback(mux *http.ServeMux) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var allowed []string
		for _, m := range routeMethods {
			probe := *r
			probe.Method = m
			h, pattern := mux.Handler(&probe)
			if _, is405 := h.(notAllowed); pattern != "/" && pattern != "" && !is405 {
				allowed = append(allowed, m)
			}
		}
		if len(allowed) > 0 {
			httpapi.MethodNotAllowed(w, allowed...)
			return
		}
		httpapi.NotFound(w)
	}
}
