package manage

import (
	"net/http"
	"strings"

	"tradebridge/relay/admit"
)

// Prefix is the path under which every management route is served.
const Prefix = "/v1/api/manage"

// kinds lists the kinds of management resource, in the order their
// routes are registered: the desktop family and the family-less kinds,
// then the broker family's copiers and monitors (tv.go), then the alert
// destinations (alerts.go).
func kinds() []kindOps {
	return []kindOps{copierKind, monitorKind, groupKind, templateKind, controlsKind, newsKind, connectionsKind,
		brokerCopierKind, brokerMonitorKind, alertKind}
}

// routeOp is what a route does.
type routeOp int

// Operations of routes.
const (
	routeLimits routeOp = iota // GET "": the budgets
	routeList                  // GET a collection
	routeCreate                // POST a collection
	routeGet                   // GET one resource, or a singleton
	routePatch                 // PATCH one resource, or a singleton
	routePut                   // PUT a singleton (the news lockout)
	routeDelete                // DELETE one resource
	routeAction                // POST {id}/{action} (a monitor's restart)
	routeKill                  // PUT controls/kill-switch
)

// route is one method and path of the Management API.
type route struct {
	method string
	// path is the route's path under Prefix, "" for the budgets; "{id}"
	// stands for a resource's id.
	path   string
	op     routeOp
	kind   kindOps // nil for the budgets
	action string
	// family is FamilyDesktop, FamilyBroker or "" (controls, news lockout,
	// the budgets).
	family string
	door   *admit.Door
}

// pattern is the route's net/http pattern.
func (rt *route) pattern() string {
	if rt.path == "" {
		return rt.method + " " + Prefix
	}
	return rt.method + " " + Prefix + "/" + rt.path
}

// change reports whether the route changes something (refused under
// read_only).
func (rt *route) change() bool { return rt.method != http.MethodGet }

// hasID reports whether the route's path names a resource by id.
func (rt *route) hasID() bool { return strings.Contains(rt.path, "{id}") }

// putSingletons are the singleton kinds that take PUT besides PATCH.
var putSingletons = map[string]bool{"news-lockout": true}

// familyOf returns the family of a route path.
func familyOf(path string) string {
	switch {
	case strings.HasPrefix(path, FamilyDesktop+"/"):
		return FamilyDesktop
	case strings.HasPrefix(path, FamilyBroker+"/"):
		return FamilyBroker
	}
	return ""
}

// routes returns every route of the Management API (DESIGN.md,
// "Management API"): the budgets; per collection GET and POST, and GET,
// PATCH, DELETE and the kind's actions per resource; per singleton GET,
// PATCH (and PUT for the news lockout); PUT controls/kill-switch. The broker
// family's copier and monitor routes are those of its own kinds.
func routes() []*route {
	out := []*route{{method: http.MethodGet, op: routeLimits}}
	add := func(k kindOps, base string) {
		fam := familyOf(base)
		if k.singleton() {
			out = append(out,
				&route{method: http.MethodGet, path: base, op: routeGet, kind: k, family: fam},
				&route{method: http.MethodPatch, path: base, op: routePatch, kind: k, family: fam})
			if putSingletons[k.name()] {
				out = append(out, &route{method: http.MethodPut, path: base, op: routePut, kind: k, family: fam})
			}
			if k.name() == controlsKind.Name {
				out = append(out, &route{method: http.MethodPut, path: base + "/kill-switch", op: routeKill, kind: k, family: fam})
			}
			return
		}
		one := base + "/{id}"
		out = append(out,
			&route{method: http.MethodGet, path: base, op: routeList, kind: k, family: fam},
			&route{method: http.MethodPost, path: base, op: routeCreate, kind: k, family: fam},
			&route{method: http.MethodGet, path: one, op: routeGet, kind: k, family: fam},
			&route{method: http.MethodPatch, path: one, op: routePatch, kind: k, family: fam},
			&route{method: http.MethodDelete, path: one, op: routeDelete, kind: k, family: fam})
		for _, a := range k.actionNames() {
			out = append(out, &route{method: http.MethodPost, path: one + "/" + a, op: routeAction, kind: k, action: a, family: fam})
		}
	}
	for _, k := range kinds() {
		add(k, k.path())
	}
	return out
}
