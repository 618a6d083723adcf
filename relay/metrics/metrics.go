// Package metrics holds the relay's Prometheus metrics: HTTP requests by
// route and status with latency histograms, connected agents and tunnel
// (re)connections, and the WebSocket stream API's sockets, quotes delivered
// and conflated, closes by code, connections refused for their address's
// cap, and attempts to pair a PC by result. The relay serves them at GET /metrics on its operator
// listener only. It also counts the events of the event spine its
// subscribers dropped.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"tradebridge/protocol"
	"tradebridge/relay/httpapi"
)

// Metrics is the relay's metric set, on a registry of its own.
type Metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	agents     prometheus.Gauge
	connects   prometheus.Counter
	reconnects prometheus.Counter

	streamSockets   prometheus.Gauge
	streamQuotes    prometheus.Counter
	streamConflated prometheus.Counter
	streamCloses    *prometheus.CounterVec

	connsRefused prometheus.Counter

	eventsDropped *prometheus.CounterVec

	pairAttempts *prometheus.CounterVec

	webhookAlerts *prometheus.CounterVec
}

// New returns a Metrics with the Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relay_http_requests_total",
			Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "relay_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route"}),
		agents: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "relay_agents_connected",
			Help: "Agents with a live tunnel to this relay.",
		}),
		connects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "relay_tunnel_connects_total",
			Help: "Agent tunnels established.",
		}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "relay_tunnel_reconnects_total",
			Help: "Agent tunnels established by users that had connected before since the relay started.",
		}),
		streamSockets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "relay_stream_sockets",
			Help: "Open WebSocket stream API sockets.",
		}),
		streamQuotes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "relay_stream_quotes_delivered_total",
			Help: "Quotes written to stream API sockets.",
		}),
		streamConflated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "relay_stream_quotes_conflated_total",
			Help: "Quotes replaced by a newer quote of the same instrument before a slow socket could take them.",
		}),
		streamCloses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relay_stream_closes_total",
			Help: "Stream API sockets closed, by the WebSocket close code the relay sent (0: none, the connection was gone).",
		}, []string{"code"}),
		connsRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "relay_connections_refused_total",
			Help: "Connections refused because their client address held too many open ones.",
		}),
		eventsDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relay_events_dropped_total",
			Help: "Events of the event spine a subscriber's per-user queue could not take (that user's queue was full), by subscriber.",
		}, []string{"subscriber"}),
		pairAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relay_agent_pair_attempts_total",
			Help: "Attempts to exchange a pairing code for an agent token (POST /v1/agent/pair), by result: paired, invalid, rate_limited, bad_request, unavailable.",
		}, []string{"result"}),
		webhookAlerts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relay_webhook_alerts_total",
			Help: "Requests to the TradingView webhook (POST /v1/send/{webhookId}), by outcome: the alert's status (executed, scheduled, running, blocked, failed), duplicate, or the refusal (address_not_allowed, unknown_webhook, wrong_key, rate_limited, plan_required, too_large, unavailable).",
		}, []string{"outcome"}),
	}
	m.reg.MustRegister(m.webhookAlerts, m.eventsDropped, m.requests, m.latency, m.agents, m.connects, m.reconnects,
		m.streamSockets, m.streamQuotes, m.streamConflated, m.streamCloses, m.connsRefused, m.pairAttempts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry returns the registry, for tests and extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// AgentConnected moves the connected-agents gauge by delta.
func (m *Metrics) AgentConnected(delta int) { m.agents.Add(float64(delta)) }

// TunnelConnect counts an established tunnel.
func (m *Metrics) TunnelConnect(reconnect bool) {
	m.connects.Inc()
	if reconnect {
		m.reconnects.Inc()
	}
}

// StreamSockets moves the open stream sockets gauge by delta.
func (m *Metrics) StreamSockets(delta int) { m.streamSockets.Add(float64(delta)) }

// StreamQuotes counts quotes written to stream sockets and quotes conflated
// (replaced before they were written).
func (m *Metrics) StreamQuotes(delivered, conflated int) {
	if delivered > 0 {
		m.streamQuotes.Add(float64(delivered))
	}
	if conflated > 0 {
		m.streamConflated.Add(float64(conflated))
	}
}

// ConnectionRefused counts a connection refused for its address's cap.
func (m *Metrics) ConnectionRefused() { m.connsRefused.Inc() }

// EventsDropped counts events a subscriber of the event spine could not
// queue.
func (m *Metrics) EventsDropped(subscriber string, n int) {
	m.eventsDropped.WithLabelValues(subscriber).Add(float64(n))
}

// PairAttempt counts an attempt to exchange a pairing code, by result.
func (m *Metrics) PairAttempt(result string) { m.pairAttempts.WithLabelValues(result).Inc() }

// WebhookAlert counts one request to the TradingView webhook by outcome.
func (m *Metrics) WebhookAlert(outcome string) { m.webhookAlerts.WithLabelValues(outcome).Inc() }

// StreamClosed counts a closed stream socket by the close code sent.
func (m *Metrics) StreamClosed(code int) { m.streamCloses.WithLabelValues(strconv.Itoa(code)).Inc() }

// Middleware counts and times requests to next, which must be the
// http.ServeMux whose patterns name the routes. Tunnel upgrades are counted
// but not timed: their "latency" is the tunnel's lifetime.
func (m *Metrics) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &httpapi.StatusRecorder{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		status := sw.Status
		if status == 0 {
			status = http.StatusOK
		}
		m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
		if status != http.StatusSwitchingProtocols && route != "GET "+protocol.ConnectPath {
			m.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
		}
	})
}
