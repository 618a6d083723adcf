// Package manage is the relay's Management API (/v1/api/manage, for the
// elite plan): the copiers, monitors, account groups, ATM templates,
// controls and kill switch, news lockout and connection settings of a
// user, which the agent next to the trading platform acts on.
//
// # Where it fits
//
// The relay (package relay) builds one Server with the relay's store, its
// agents' hub and its one admission (package admit), registers its routes
// on the public mux (Register), feeds it the hub's connects and events
// (HandleStatus, HandleEvent), and serves the operator's routes of the
// service modes (ModesHandler) on the operator listener.
//
// A request is admitted (admission.go: address, token, plan, gate,
// in-flight, budgets, body), then a change runs under the user's write
// lock: the user's whole state is loaded from the store (snapshot.go),
// the kind's rules judge the change (handlers.go, over the Kind values of
// copiers.go, monitors.go, groups.go, templates.go, controls.go, news.go,
// connections.go, and tv.go for the broker family's copiers and monitors of a
// linked broker login's accounts, which the relay's own engines run), the
// store writes it conditionally on the version
// read (the ETag, etag.go), and, for a kind the agent acts on, the user's
// whole configuration is pushed to the agent and acknowledged (push.go)
// before the answer. The agent's reported states (a monitor stopped, a
// copier halted) are stored on their resources by a worker, so reads are
// right while the agent is offline.
//
// Service modes (modes.go) let the operator turn the API off, make it
// read-only, shed load, or turn off a family of routes, live.
package manage
