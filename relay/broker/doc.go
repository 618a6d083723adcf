// Package broker runs the broker family of the trading API
// (/v1/api/tv/*) inside the relay, for users who linked a Tradovate login
// (DESIGN.md, "Admission, and the broker family").
//
// For each linked login a Manager runs one instance: a tradovate.Platform
// (the login's one token and one request pacer, its user-data and
// market-data sockets), and over it the very dispatcher (trading/dispatch)
// and operations (trading/ops) the agent runs next to NinjaTrader, and the
// agent's engines (trading/engine: monitors, kill switch and news lockout,
// copiers) configured by the user's broker resources of the Management API.
// So reverse, close by percent, cancel and bracket, strategy tags and
// exactly-once writes behave the same on both families, and a broker monitor
// trips on the broker's own fills. What the operations remember
// (strategy-tag ownership, write outcomes, the broker's order ids) lives
// in the relay's store, so it survives a relay restart.
//
// The Manager is the trading API's Caller for the broker family
// (package api with Family "tv"), the Management API's BrokerLinks,
// BrokerMonitors and BrokerEngines (package manage), and serves the link
// routes: POST and DELETE /v1/api/tv/link, GET /v1/api/tv/status, the
// OAuth link (POST /v1/api/tv/link/oauth and its callback). Links (the
// sealed credentials) are written by the relay broker command too.
//
// When the relay runs as several nodes over one store, each user's
// instance runs on one node only: the one holding the user's lease in the
// store, which it renews while the instance runs. The other nodes reach
// it over a Router (package relay/cluster): trading calls, a monitor's
// restart check, the news of a changed configuration and the link's
// live state are forwarded there, and a node takes over the users whose
// node went away once their leases expire. The OAuth links under way are
// in the store too, so the broker's callback may reach any node.
package broker
