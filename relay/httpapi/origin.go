package httpapi

import (
	"net/http"
	"net/url"
	"strings"
)

// SameOrigin reports whether r's Origin header names the relay's own
// origin: the request's Host with the scheme https, or http when the
// request did not come over TLS (a relay behind a proxy that ends TLS
// sees plain HTTP from the proxy while the page is https). A request
// without an Origin header, or with "null", is not of the same origin.
func SameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || r.Host == "" {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Path != "" || u.User != nil || u.RawQuery != "" {
		return false
	}
	if !strings.EqualFold(u.Host, r.Host) {
		return false
	}
	return u.Scheme == "https" || (u.Scheme == "http" && r.TLS == nil)
}
