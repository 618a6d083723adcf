// Package tunnel is the agent's end of the relay tunnel. The agent never
// listens on a port: Client dials the relay's /v1/agent/connect over
// WebSocket, authenticates with the agent token, runs a yamux session over
// it, says Hello, and then serves the RPCs the relay sends on the streams it
// opens. When the tunnel drops, Client reconnects by itself with exponential
// backoff and full jitter (internal/backoff).
package tunnel

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/yamux"
	"go.uber.org/zap"

	"tradebridge/agent/sysproxy"
	"tradebridge/internal/backoff"
	"tradebridge/internal/lifecycle"
	"tradebridge/protocol"
	"tradebridge/transport"
)

// Handler runs one RPC. It returns the JSON result or a wire error; ctx ends
// at the request's deadline, on a Cancel frame, or when the Client closes.
type Handler interface {
	Handle(ctx context.Context, req *protocol.Request) (json.RawMessage, *protocol.Error)
}

// Options configure a Client.
type Options struct {
	// RelayURL is the relay's base URL: http://127.0.0.1:8080 or
	// https://relay.example. The tunnel address (ws:// or wss://) is
	// derived from it.
	RelayURL string
	// Token is the agent token. It is sent only in the Authorization header
	// and never logged.
	Token string
	// Hello describes the platform for the handshake; it is called before
	// every connection so it reports current connections and accounts.
	Hello func(ctx context.Context) (protocol.Hello, error)
	// Handler serves RPCs.
	Handler Handler
	Logger  *zap.Logger
	// BackoffBase and BackoffCap shape reconnect delays (defaults 0.5 s and
	// 30 s); after StableAfter connected (default 30 s) the delay starts
	// over from BackoffBase.
	BackoffBase, BackoffCap, StableAfter time.Duration
	// MaxConcurrent bounds RPCs running at once (default 256). Beyond it the
	// agent stops reading requests, which slows the relay down instead of
	// piling up work.
	MaxConcurrent int
	// HTTPClient dials the relay; nil uses a client with sane timeouts
	// that goes through Proxy and uses TLSConfig. A client given here
	// chooses its own proxy, which Status then does not report.
	HTTPClient *http.Client
	// Proxy chooses the proxy to the relay; nil uses one that follows the
	// environment and, on Windows, the machine's proxy settings
	// (sysproxy.New with no setting).
	Proxy *sysproxy.Resolver
	// TLSConfig configures TLS to the relay; nil verifies the relay's
	// certificate against the system's roots.
	TLSConfig *tls.Config
	// OnConnect, when set, is called after each handshake, once
	// SendEvent works and the first round trip is measured (the agent
	// re-sends the engines' states and its diagnostics then). It runs on
	// the session's goroutine and must not block.
	OnConnect func()
	// PingEvery is how often the round trip to the relay is measured
	// (Status().RTTMillis) while connected; default 15 s. It is measured
	// once right after each handshake too.
	PingEvery time.Duration
}

// Client keeps the agent connected to the relay. Create it with New, run it
// with Run, stop it with Close.
type Client struct {
	opts  Options
	log   *zap.Logger
	wsURL string

	// life holds Run and the running RPCs; its context, which Close
	// ends, is the parent of every call.
	life lifecycle.Group
	sem  chan struct{}

	connected atomic.Bool
	// relayVersion is the protocol version of the last Welcome.
	relayVersion atomic.Int64
	ctlMu        sync.Mutex
	control      *protocol.Writer // the live session's control stream, or nil
	eventSeq     atomic.Uint64

	statusMu sync.Mutex
	status   protocol.TunnelDiagnostic // Connected is c.connected's
	proxy    *sysproxy.Choice          // the proxy of the current attempt
	sessions int                       // handshakes that succeeded
}

// Errors that describe why a connection attempt failed.
var (
	// ErrUnauthorized: the relay refused the agent token.
	ErrUnauthorized = errors.New("tunnel: relay refused the agent token")
	// ErrVersionUnsupported: the relay does not speak our protocol version.
	ErrVersionUnsupported = errors.New("tunnel: relay does not support this protocol version")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("tunnel: client closed")
)

// New validates opts and returns a Client.
func New(opts Options) (*Client, error) {
	if opts.Token == "" {
		return nil, errors.New("tunnel: Options.Token is required")
	}
	if opts.Handler == nil || opts.Hello == nil {
		return nil, errors.New("tunnel: Options.Handler and Options.Hello are required")
	}
	wsURL, err := ConnectURL(opts.RelayURL)
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = 500 * time.Millisecond
	}
	if opts.BackoffCap <= 0 {
		opts.BackoffCap = 30 * time.Second
	}
	if opts.StableAfter <= 0 {
		opts.StableAfter = 30 * time.Second
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 256
	}
	if opts.PingEvery <= 0 {
		opts.PingEvery = 15 * time.Second
	}
	c := &Client{
		opts:  opts,
		log:   opts.Logger.Named("tunnel"),
		wsURL: wsURL,
		sem:   make(chan struct{}, opts.MaxConcurrent),
	}
	if c.opts.HTTPClient == nil {
		if c.opts.Proxy == nil {
			if c.opts.Proxy, err = sysproxy.New(sysproxy.Options{Logger: opts.Logger}); err != nil {
				return nil, err
			}
		}
		t := &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSClientConfig:       c.opts.TLSConfig,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 15 * time.Second,
			ForceAttemptHTTP2:     false, // WebSocket needs HTTP/1.1
		}
		c.opts.Proxy.Configure(t)
		t.Proxy = c.chooseProxy
		c.opts.HTTPClient = &http.Client{Transport: t}
	}
	return c, nil
}

// chooseProxy chooses the proxy of a connection attempt and notes it for
// Status.
func (c *Client) chooseProxy(req *http.Request) (*url.URL, error) {
	choice := c.opts.Proxy.Choose(req.Context(), req.URL)
	c.statusMu.Lock()
	c.proxy = &choice
	report := choice.Report()
	c.status.Proxy = &report
	c.statusMu.Unlock()
	return choice.URL, nil
}

// currentProxy is the proxy the current attempt chose; nil when none
// was chosen by the Client.
func (c *Client) currentProxy() *sysproxy.Choice {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	return c.proxy
}

// ConnectURL derives the tunnel's WebSocket address from the relay's base
// URL: http becomes ws, https becomes wss, and the connect path is appended
// to any base path.
func ConnectURL(relayURL string) (string, error) {
	u, err := url.Parse(relayURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("tunnel: relay URL must look like https://relay.example or http://127.0.0.1:8080")
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("tunnel: relay URL scheme must be http or https")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("tunnel: relay URL must not carry credentials, a query or a fragment")
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + protocol.ConnectPath
	return u.String(), nil
}

// Connected reports whether a tunnel is up.
func (c *Client) Connected() bool { return c.connected.Load() }

// RelayProtocolVersion returns the protocol version the relay's Welcome
// named on the current connection (the last one while none is up); 0
// before the first. Features of a later version than the relay's are not
// used with it (an event it would not know).
func (c *Client) RelayProtocolVersion() int { return int(c.relayVersion.Load()) }

// Status describes the connection for diagnostics: whether it is up, its
// session and since when, the last round trip measured, the clock skew
// estimated at the last handshake, how many times the Client reconnected
// and why the last connection or attempt ended.
func (c *Client) Status() protocol.TunnelDiagnostic {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	st := c.status
	if st.ConnectedAt != nil {
		at := *st.ConnectedAt
		st.ConnectedAt = &at
	}
	if st.Proxy != nil {
		p := *st.Proxy
		st.Proxy = &p
	}
	return st
}

// updateStatus changes the status under its lock.
func (c *Client) updateStatus(f func(st *protocol.TunnelDiagnostic)) {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	f(&c.status)
}

// setLastError records why a connection or an attempt ended, as a
// sentence without the token.
func (c *Client) setLastError(why string) {
	why = redactText(why, c.opts.Token)
	c.updateStatus(func(st *protocol.TunnelDiagnostic) { st.LastError = why })
}

// Run connects and serves until ctx ends or Close is called. It reconnects
// after every failure and returns nil when stopped.
func (c *Client) Run(ctx context.Context) error {
	ctx, leave, ok := c.life.Enter(ctx)
	if !ok {
		return nil
	}
	defer leave()

	b := backoff.Backoff{Min: c.opts.BackoffBase, Max: c.opts.BackoffCap}
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		start := time.Now()
		up, code, err := c.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if up && time.Since(start) >= c.opts.StableAfter {
			b.Reset()
		}
		delay := b.Next()
		c.setLastError(endSentence(err, code))
		switch {
		case errors.Is(err, ErrUnauthorized):
			delay = b.Patient()
			c.log.Error("the relay refused the agent token; check the token in the agent's configuration", zap.Duration("retryIn", delay))
		case errors.Is(err, sysproxy.ErrProxyAuth):
			delay = b.Patient()
			p := c.proxyReport()
			c.log.Error("the proxy asks for authentication, which the agent cannot give; "+
				"let the relay's address through the proxy without authentication, or set the agent's proxy setting",
				zap.String("proxy", p.URL), zap.String("proxySource", p.Source), zap.Duration("retryIn", delay))
		case errors.Is(err, ErrVersionUnsupported) || code == protocol.CloseVersionUnsupported:
			delay = b.Patient()
			c.log.Error("the relay does not support this agent's protocol version; upgrade the agent", zap.Duration("retryIn", delay))
		case code == protocol.CloseReplaced:
			delay = b.Patient()
			c.log.Warn("another agent connected with the same account and replaced this one; is the agent running twice?", zap.Duration("retryIn", delay))
		case code == protocol.CloseRevoked:
			delay = b.Patient()
			c.log.Error("the agent token was revoked", zap.Duration("retryIn", delay))
		case err != nil:
			c.log.Warn("tunnel connection failed", zap.Error(err), zap.Duration("retryIn", delay))
		default:
			c.log.Info("tunnel closed; reconnecting", zap.Int("closeStatus", code), zap.String("reason", protocol.CloseReason(code)), zap.Duration("retryIn", delay))
		}
		timer.Reset(delay)
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
	}
}

// endSentence says why a connection or an attempt ended: err of a failed
// attempt, or the close code the relay sent (-1 when none).
func endSentence(err error, code int) string {
	switch {
	case errors.Is(err, ErrUnauthorized):
		return "the relay refused the agent token"
	case errors.Is(err, sysproxy.ErrProxyAuth):
		return "connecting failed: " + sysproxy.ErrProxyAuth.Error()
	case errors.Is(err, ErrVersionUnsupported) || code == protocol.CloseVersionUnsupported:
		return "the relay does not support this agent's protocol version"
	case code == protocol.CloseReplaced:
		return "another agent connected with the same account and replaced this one"
	case code == protocol.CloseRevoked:
		return "the agent token was revoked"
	case err != nil:
		return "connecting failed: " + strings.TrimPrefix(err.Error(), "tunnel: ")
	case code == protocol.CloseShuttingDown:
		return "the relay shut down"
	case code >= 0:
		if r := protocol.CloseReason(code); r != "" {
			return fmt.Sprintf("the relay closed the tunnel (%d %s)", code, r)
		}
		return fmt.Sprintf("the relay closed the tunnel (%d)", code)
	}
	return "the connection to the relay was lost"
}

// Close stops Run, cancels running RPCs and waits for every goroutine of the
// Client. It is idempotent.
func (c *Client) Close() error {
	c.life.Close()
	return nil
}

// SendEvent sends an event to the relay on the live tunnel. It returns
// ErrClosed-like errors when no tunnel is up; events are not queued across
// reconnects (the relay re-reads state after a reconnect).
func (c *Client) SendEvent(kind string, data any) error {
	raw, err := protocol.Marshal(data)
	if err != nil {
		return fmt.Errorf("tunnel: encode event: %w", err)
	}
	c.ctlMu.Lock()
	w := c.control
	c.ctlMu.Unlock()
	if w == nil {
		return errNotConnected
	}
	return w.WriteFrame(protocol.TypeEvent, protocol.Event{Seq: c.eventSeq.Add(1), Kind: kind, Data: raw})
}

var errNotConnected = errors.New("tunnel: not connected")

// proxyReport is the proxy of the last attempt, as Status reports it.
func (c *Client) proxyReport() protocol.ProxyDiagnostic {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	if c.status.Proxy == nil {
		return protocol.ProxyDiagnostic{}
	}
	return *c.status.Proxy
}

// session runs one connection. It reports whether the handshake succeeded,
// the WebSocket close code the relay sent (-1 if none), and the error that
// ended a failed attempt.
func (c *Client) session(ctx context.Context) (bool, int, error) {
	c.statusMu.Lock()
	c.proxy = nil
	c.statusMu.Unlock()
	dialCtx, cancelDial := context.WithTimeout(ctx, 20*time.Second)
	ws, resp, err := websocket.Dial(dialCtx, c.wsURL, &websocket.DialOptions{
		HTTPClient:      c.opts.HTTPClient,
		HTTPHeader:      http.Header{"Authorization": []string{"Bearer " + c.opts.Token}},
		Subprotocols:    []string{protocol.Subprotocol(protocol.ProtocolVersion)},
		CompressionMode: websocket.CompressionDisabled,
	})
	cancelDial()
	if err != nil {
		if resp != nil {
			if resp.Body != nil {
				resp.Body.Close()
			}
			switch resp.StatusCode {
			case http.StatusUnauthorized:
				return false, -1, ErrUnauthorized
			case http.StatusProxyAuthRequired:
				return false, -1, &sysproxy.ProxyError{Status: resp.StatusCode}
			case http.StatusBadRequest:
				return false, -1, ErrVersionUnsupported
			}
			return false, -1, fmt.Errorf("tunnel: relay answered HTTP %d", resp.StatusCode)
		}
		return false, -1, fmt.Errorf("tunnel: dial: %w", redact(err, c.opts.Token))
	}
	sessCtx, cancelSess := context.WithCancel(ctx)
	defer cancelSess()
	conn := transport.NewConn(sessCtx, ws)
	defer conn.CloseWith(int(websocket.StatusNormalClosure), "")

	sess, err := yamux.Client(conn, transport.YamuxConfig(c.log))
	if err != nil {
		return false, -1, fmt.Errorf("tunnel: yamux: %w", err)
	}
	defer sess.Close()
	stopOnCancel := context.AfterFunc(sessCtx, func() { sess.Close() })
	defer stopOnCancel()

	control, welcome, skew, err := c.handshake(ctx, sess)
	if err != nil {
		sess.Close()
		<-sess.CloseChan()
		return false, conn.CloseStatus(), err
	}
	log := c.log.With(zap.String("session", welcome.SessionID))
	log.Info("tunnel connected", zap.String("relay", redactURL(c.wsURL)))
	if p := c.currentProxy(); p != nil && p.URL != nil {
		log.Info("the tunnel goes through a proxy", zap.String("proxy", sysproxy.Redact(p.URL)), zap.String("proxySource", string(p.Source)))
	}
	if skew > clockSkewWarn || skew < -clockSkewWarn {
		log.Warn("the computer's clock differs from the relay's; set the clock to synchronize automatically",
			zap.Int64("relayMinusAgentMillis", skew))
	}
	rtt := c.ping(log, sess)

	c.ctlMu.Lock()
	c.control = protocol.NewWriter(control)
	c.ctlMu.Unlock()
	now := time.Now()
	c.statusMu.Lock()
	c.sessions++
	c.status.Connected = true
	c.status.SessionID = welcome.SessionID
	c.status.ConnectedAt = &now
	c.status.ClockSkewMillis = skew
	c.status.Reconnects = c.sessions - 1
	if rtt > 0 {
		c.status.RTTMillis = millis(rtt)
	}
	c.statusMu.Unlock()
	c.relayVersion.Store(int64(welcome.ProtocolVersion))
	c.connected.Store(true)
	if c.opts.OnConnect != nil {
		c.opts.OnConnect()
	}

	var streams sync.WaitGroup
	// The round trip is measured again every PingEvery until the session
	// ends.
	streams.Add(1)
	go func() {
		defer streams.Done()
		t := time.NewTicker(c.opts.PingEvery)
		defer t.Stop()
		for {
			select {
			case <-sess.CloseChan():
				return
			case <-t.C:
				if rtt := c.ping(log, sess); rtt > 0 {
					c.updateStatus(func(st *protocol.TunnelDiagnostic) { st.RTTMillis = millis(rtt) })
				}
			}
		}
	}()
	// The relay never sends on the control stream after Welcome; reading
	// it notices the session's end and keeps yamux's window open.
	streams.Add(1)
	go func() {
		defer streams.Done()
		_, _ = io.Copy(io.Discard, control)
	}()
	for {
		s, err := sess.AcceptStream()
		if err != nil {
			break
		}
		streams.Add(1)
		go func() {
			defer streams.Done()
			c.serveStream(log, s)
		}()
	}
	c.connected.Store(false)
	c.updateStatus(func(st *protocol.TunnelDiagnostic) {
		st.Connected, st.SessionID, st.ConnectedAt = false, "", nil
	})
	c.ctlMu.Lock()
	c.control = nil
	c.ctlMu.Unlock()
	sess.Close()
	streams.Wait()
	return true, conn.CloseStatus(), nil
}

// clockSkewWarn is the clock skew the agent warns about: beyond it, the
// times of the agent's records (orders, fills, logs) and the relay's
// disagree enough to confuse whoever compares them.
const clockSkewWarn = 5000 // milliseconds

// ping measures one round trip over the session; 0 when it failed (the
// keepalive ends a session whose peer does not answer).
func (c *Client) ping(log *zap.Logger, sess *yamux.Session) time.Duration {
	rtt, err := sess.Ping()
	if err != nil {
		log.Debug("measuring the round trip to the relay failed", zap.Error(err))
		return 0
	}
	return max(rtt, time.Microsecond)
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// handshake opens the control stream, sends Hello and reads Welcome. It
// returns the clock skew estimated from Welcome.ServerTime, the relay's
// clock minus the agent's at the midpoint of Hello sent and Welcome read,
// in milliseconds; 0 when the relay sent no time.
func (c *Client) handshake(ctx context.Context, sess *yamux.Session) (net.Conn, protocol.Welcome, int64, error) {
	var w protocol.Welcome
	hello, err := c.opts.Hello(ctx)
	if err != nil {
		return nil, w, 0, fmt.Errorf("tunnel: describing platform: %w", err)
	}
	hello.ProtocolVersion = protocol.ProtocolVersion
	control, err := sess.OpenStream()
	if err != nil {
		return nil, w, 0, fmt.Errorf("tunnel: open control stream: %w", err)
	}
	sent := time.Now()
	if err := protocol.NewWriter(control).WriteFrame(protocol.TypeHello, hello); err != nil {
		control.Close()
		return nil, w, 0, fmt.Errorf("tunnel: send hello: %w", err)
	}
	_ = control.SetReadDeadline(time.Now().Add(15 * time.Second))
	t, payload, err := protocol.NewReader(control, 64<<10).ReadFrame()
	read := time.Now()
	if err != nil {
		control.Close()
		return nil, w, 0, fmt.Errorf("tunnel: read welcome: %w", err)
	}
	if t != protocol.TypeWelcome {
		control.Close()
		return nil, w, 0, fmt.Errorf("tunnel: expected welcome, got %s", t)
	}
	if err := protocol.Decode(payload, &w); err != nil {
		control.Close()
		return nil, w, 0, err
	}
	_ = control.SetReadDeadline(time.Time{})
	return control, w, clockSkew(w.ServerTime, sent, read), nil
}

// clockSkew estimates the relay's clock minus the agent's, in
// milliseconds, from the relay's time serverMillis (Unix ms) read between
// sent and read: the relay wrote it, on average, halfway. 0 when the relay
// sent no time.
func clockSkew(serverMillis int64, sent, read time.Time) int64 {
	if serverMillis == 0 {
		return 0
	}
	mid := sent.Add(read.Sub(sent) / 2)
	return serverMillis - mid.UnixMilli()
}

// serveStream answers the requests of one relay-opened stream until it ends.
// Calls still running when the stream ends finish on their own deadline, so
// a write's result is recorded for a retry over the next tunnel.
func (c *Client) serveStream(log *zap.Logger, s net.Conn) {
	defer s.Close()
	w := protocol.NewWriter(s)
	fr := protocol.NewReader(s, 0)
	var mu sync.Mutex
	running := make(map[uint64]context.CancelFunc)
	for {
		t, payload, err := fr.ReadFrame()
		if err != nil {
			if errors.Is(err, protocol.ErrFrameTooLarge) || errors.Is(err, protocol.ErrMalformedFrame) {
				log.Warn("relay sent a bad frame; closing stream", zap.Error(err))
			}
			return
		}
		switch t {
		case protocol.TypeRequest:
			req := new(protocol.Request)
			if err := protocol.Decode(payload, req); err != nil {
				log.Warn("relay sent a malformed request; closing stream", zap.Error(err))
				return
			}
			select {
			case c.sem <- struct{}{}:
			case <-c.life.Done():
				return
			}
			timeout := time.Duration(req.TimeoutMs) * time.Millisecond
			if timeout <= 0 {
				timeout = protocol.DefaultTimeoutMs * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(c.life.Context(), timeout)
			mu.Lock()
			running[req.ID] = cancel
			mu.Unlock()
			answer := func(resp *protocol.Response) {
				defer func() { <-c.sem }()
				mu.Lock()
				delete(running, req.ID)
				mu.Unlock()
				cancel()
				if err := w.WriteFrame(protocol.TypeResponse, resp); err != nil {
					log.Debug("reply not delivered; the tunnel is gone", zap.String("fn", req.Fn), zap.Uint64("id", req.ID))
				}
			}
			if !c.life.Go(func(context.Context) { answer(c.run(ctx, req)) }) {
				// Close has begun: the call is answered cancelled.
				answer(&protocol.Response{ID: req.ID, Error: ctxError(ctx)})
			}
		case protocol.TypeCancel:
			var cn protocol.Cancel
			if err := protocol.Decode(payload, &cn); err != nil {
				return
			}
			mu.Lock()
			if cancel := running[cn.ID]; cancel != nil {
				cancel()
			}
			mu.Unlock()
		default:
			log.Warn("relay sent an unexpected frame; closing stream", zap.Stringer("type", t))
			return
		}
	}
}

// run calls the handler and shapes its outcome as a Response.
func (c *Client) run(ctx context.Context, req *protocol.Request) *protocol.Response {
	result, perr := c.opts.Handler.Handle(ctx, req)
	if perr == nil && ctx.Err() != nil {
		perr = ctxError(ctx)
	}
	if perr != nil {
		return &protocol.Response{ID: req.ID, Error: perr}
	}
	if result == nil {
		result = json.RawMessage("null")
	}
	return &protocol.Response{ID: req.ID, Result: result}
}

func ctxError(ctx context.Context) *protocol.Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return protocol.NewError(protocol.CodeDeadlineExceeded, "the call did not finish in time")
	}
	return protocol.NewError(protocol.CodeCancelled, "the call was cancelled")
}

// redact removes the token from an error text, in case a library echoes
// request headers.
func redact(err error, token string) error {
	if token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(redactText(err.Error(), token))
}

func redactText(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "[REDACTED]")
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	u.User = nil
	u.RawQuery = ""
	return u.String()
}
