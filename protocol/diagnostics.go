package protocol

import "time"

// Diagnostics is what an agent tells support staff about itself: the
// result of FnDiagnostics and the data of EventDiagnostics. It carries no
// secret: the agent token appears only as TokenID, and nothing the
// platform or a caller sent is copied into it except connection and
// account names. Since protocol version 5.
type Diagnostics struct {
	// At is when the agent collected it.
	At           time.Time `json:"at"`
	AgentVersion string    `json:"agentVersion"`
	// OS is the operating system and architecture ("windows/amd64") and,
	// where the agent can read it, the system's version.
	OS string `json:"os"`
	// StartedAt is when the agent's process started; UptimeSeconds is
	// At − StartedAt.
	StartedAt     time.Time `json:"startedAt"`
	UptimeSeconds int64     `json:"uptimeSeconds"`
	// Service reports that the agent runs as a system service (Windows
	// service, systemd unit), not in a terminal.
	Service bool             `json:"service"`
	Config  DiagnosticConfig `json:"config"`
	Tunnel  TunnelDiagnostic `json:"tunnel"`
	Bridge  BridgeDiagnostic `json:"bridge"`
	// Errors are the recent error and warning log lines, grouped by
	// message, most recent first, at most MaxDiagnosticErrors.
	Errors []ErrorCount `json:"errors"`
}

// MaxDiagnosticErrors bounds Diagnostics.Errors.
const MaxDiagnosticErrors = 50

// DiagnosticConfig is the agent's configuration with its secrets left
// out.
type DiagnosticConfig struct {
	RelayURL string `json:"relayUrl"`
	Platform string `json:"platform"`
	// TokenID is the first 12 hex digits of the SHA-256 of the agent
	// token: the id `relay tokens list` shows, never the token.
	TokenID string `json:"tokenId"`
	// ConfigFile is the configuration file the agent read, if any.
	ConfigFile string `json:"configFile,omitempty"`
	DataDir    string `json:"dataDir,omitempty"`
	LogFile    string `json:"logFile,omitempty"`
	// Proxy is the proxy setting ("direct" or the proxy's URL, without
	// user or password) and ProxyPAC the PAC script's URL setting; empty
	// when not set.
	Proxy    string `json:"proxy,omitempty"`
	ProxyPAC string `json:"proxyPac,omitempty"`
}

// TunnelDiagnostic is the state of the agent's connection to the relay.
type TunnelDiagnostic struct {
	Connected   bool       `json:"connected"`
	SessionID   string     `json:"sessionId,omitempty"`
	ConnectedAt *time.Time `json:"connectedAt,omitempty"`
	// RTTMillis is the last measured round trip to the relay over the
	// tunnel; 0 when none was measured yet.
	RTTMillis float64 `json:"rttMillis"`
	// ClockSkewMillis is the relay's clock minus the agent's, estimated
	// at the last handshake; positive when the agent's clock is behind.
	ClockSkewMillis int64 `json:"clockSkewMillis"`
	// Reconnects counts the connections made after the first since the
	// agent started.
	Reconnects int `json:"reconnects"`
	// LastError is why the last connection attempt or connection ended,
	// a sentence of the agent's; empty when none did.
	LastError string `json:"lastError,omitempty"`
	// Proxy is the proxy the last connection or attempt went through,
	// and where the agent found it; nil before the first attempt.
	Proxy *ProxyDiagnostic `json:"proxy,omitempty"`
}

// ProxyDiagnostic is the proxy the agent reaches the relay through.
type ProxyDiagnostic struct {
	// Source is where the agent found it: "config" (its proxy setting),
	// "environment" (HTTPS_PROXY), "winhttp" (the machine's WinHTTP
	// proxy), "pac" (WPAD or a PAC script) or "direct" (nothing named
	// one). A source that chose no proxy for the relay (a bypass list,
	// "direct" in the setting, DIRECT in a PAC script) is reported with
	// no URL.
	Source string `json:"source"`
	// URL is the proxy, without user or password; empty for a direct
	// connection.
	URL string `json:"url,omitempty"`
}

// BridgeDiagnostic is the state of the trading platform as the agent
// sees it.
type BridgeDiagnostic struct {
	// Kind is the platform kind ("sim", "ninjatrader").
	Kind string `json:"kind"`
	// Reachable reports that the agent reaches the platform (for
	// NinjaTrader: the add-on answers).
	Reachable bool `json:"reachable"`
	// Detail says why the platform is not reachable, or how it is
	// reached; a sentence of the agent's.
	Detail string `json:"detail,omitempty"`
	// Connections are the platform's connections with their status and
	// account names.
	Connections []Connection `json:"connections"`
}

// ErrorCount is one recent error or warning message with how often it
// was logged.
type ErrorCount struct {
	Level   string    `json:"level"`
	Message string    `json:"message"`
	Count   int       `json:"count"`
	First   time.Time `json:"first"`
	Last    time.Time `json:"last"`
}
