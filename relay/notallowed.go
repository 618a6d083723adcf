package relay

import (
	"net/http"

	"tradebridge/relay/httpapi"
)

// fallback answers requests no route matched: 405 with an Allow header when
// the path exists for other methods, else 404, both with the service's JSON
// error body.
func fallback(mux *http.ServeMux) http.HandlerFunc {
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	return func(w http.ResponseWriter, r *http.Request) {
		var allowed []string
		for _, m := range methods {
			probe := *r
			probe.Method = m
			if _, pattern := mux.Handler(&probe); pattern != "/" && pattern != "" {
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
