package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/agentcall"
)

// callMux receives the replies of this node's requests: one subscription
// to <inbox>.*, each request waiting on the token that ends its reply
// subject.
type callMux struct {
	c      *Cluster
	prefix string // <inbox>.
	sub    *nats.Subscription

	mu      sync.Mutex
	next    uint64
	pending map[string]*pendingCall
}

type pendingCall struct {
	ch   chan *nats.Msg
	done chan struct{}
}

func (m *callMux) start(c *Cluster) error {
	m.c = c
	m.pending = make(map[string]*pendingCall)
	inbox := c.nc.NewInbox()
	m.prefix = inbox + "."
	sub, err := c.nc.Subscribe(inbox+".*", m.deliver)
	if err != nil {
		return fmt.Errorf("cluster: subscribing to replies: %w", err)
	}
	// Results may come in parts of the server's max payload: let a few
	// of the largest wait.
	_ = sub.SetPendingLimits(-1, 256<<20)
	m.sub = sub
	return nil
}

func (m *callMux) stop() {
	if m.sub != nil {
		_ = m.sub.Unsubscribe()
	}
}

// deliver hands a reply to the request waiting for it; replies nobody
// waits for any more are dropped.
func (m *callMux) deliver(msg *nats.Msg) {
	tok := strings.TrimPrefix(msg.Subject, m.prefix)
	m.mu.Lock()
	p := m.pending[tok]
	m.mu.Unlock()
	if p == nil {
		return
	}
	select {
	case p.ch <- msg:
	case <-p.done:
	}
}

// open registers a request and returns its reply subject.
func (m *callMux) open() (string, *pendingCall) {
	p := &pendingCall{ch: make(chan *nats.Msg, 4), done: make(chan struct{})}
	m.mu.Lock()
	m.next++
	tok := strconv.FormatUint(m.next, 36)
	m.pending[tok] = p
	m.mu.Unlock()
	return m.prefix + tok, p
}

func (m *callMux) close(reply string, p *pendingCall) {
	m.mu.Lock()
	delete(m.pending, strings.TrimPrefix(reply, m.prefix))
	m.mu.Unlock()
	close(p.done)
}

// request sends op on subject and waits for its result: the caller's
// side of every node-to-node call.
func (c *Cluster) request(ctx context.Context, subject, op, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
	if c.isClosed() {
		return nil, agentcall.ErrClosed
	}
	if c.nc.Status() != nats.CONNECTED {
		c.busDown("a call", nil)
		return nil, ErrBusDown
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.DefaultTimeout)
		defer cancel()
	}
	deadline, _ := ctx.Deadline()
	left := time.Until(deadline)
	if left <= 0 {
		return nil, agentcall.ErrTimeout
	}
	reply, p := c.calls.open()
	defer c.calls.close(reply, p)
	msg := &nats.Msg{Subject: subject, Reply: reply, Data: args, Header: nats.Header{}}
	msg.Header.Set(HeaderVersion, versionString)
	msg.Header.Set(HeaderOp, op)
	msg.Header.Set(HeaderOrigin, c.opts.Node)
	msg.Header.Set(HeaderTimeout, timeoutHeader(left))
	if fn != "" {
		msg.Header.Set(HeaderFn, fn)
	}
	if requestID != "" {
		msg.Header.Set(HeaderRequestID, requestID)
	}
	if tr := agentcall.TraceFrom(ctx); tr != "" {
		msg.Header.Set(HeaderTrace, tr)
	}
	if protocol.CallOptionsOf(ctx).BypassWindows {
		msg.Header.Set(HeaderBypassWindows, "1")
	}
	if err := c.nc.PublishMsg(msg); err != nil {
		if errors.Is(err, nats.ErrMaxPayload) {
			return nil, fmt.Errorf("cluster: the call's arguments exceed the bus's max payload: %w", err)
		}
		c.busDown("a call", err)
		return nil, ErrBusDown
	}
	silence := time.NewTimer(c.opts.HeartbeatTimeout)
	defer silence.Stop()
	var parts [][]byte
	size := 0
	for {
		select {
		case m := <-p.ch:
			if noResponders(m) {
				return nil, agentcall.ErrNotConnected
			}
			silence.Reset(c.opts.HeartbeatTimeout)
			switch replyKind(m) {
			case KindHeartbeat:
			case KindError:
				var w wireError
				if err := json.Unmarshal(m.Data, &w); err != nil {
					return nil, fmt.Errorf("%w: %v", ErrProtocol, err)
				}
				return nil, w.decode()
			case KindResult:
				ph := m.Header.Get(HeaderPart)
				if ph == "" && parts == nil {
					return m.Data, nil
				}
				i, n, err := parsePart(ph)
				if err != nil || i != len(parts)+1 {
					return nil, fmt.Errorf("%w: part %q out of order", ErrProtocol, ph)
				}
				if size += len(m.Data); size > c.opts.MaxReply {
					return nil, ErrReplyTooLarge
				}
				parts = append(parts, m.Data)
				if i == n {
					out := make([]byte, 0, size)
					for _, b := range parts {
						out = append(out, b...)
					}
					return out, nil
				}
			default:
				return nil, fmt.Errorf("%w: reply kind %q", ErrProtocol, replyKind(m))
			}
		case <-silence.C:
			// The serving node stopped answering: it may have run the
			// call.
			c.log.Info("the serving node went silent during a call", zap.String("fn", fn))
			return nil, agentcall.ErrConnectionLost
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, agentcall.ErrTimeout
			}
			return nil, ctx.Err()
		case <-c.ctx.Done():
			return nil, agentcall.ErrConnectionLost
		}
	}
}

var versionString = strconv.Itoa(ProtocolVersion)

// dispatch serves one request to a subject this node serves.
func (c *Cluster) dispatch(m *nats.Msg) {
	if m.Reply == "" {
		return
	}
	c.mu.Lock()
	t := c.targets[m.Subject]
	c.mu.Unlock()
	if v := m.Header.Get(HeaderVersion); v != versionString {
		c.replyError(m.Reply, &RemoteError{Detail: fmt.Sprintf("node %s speaks cluster protocol version %d, not %q", c.opts.Node, ProtocolVersion, v)})
		return
	}
	if t == nil || (t.kind != targetAgent && t.kind != targetService) {
		// Left meanwhile: nothing ran.
		c.replyError(m.Reply, agentcall.ErrNotConnected)
		return
	}
	switch op := m.Header.Get(HeaderOp); {
	case op == OpInfo && t.kind == targetAgent:
		info, ok := c.opts.Local.Info(t.user)
		if !ok {
			c.replyError(m.Reply, agentcall.ErrNotConnected)
			return
		}
		c.replyResult(m.Reply, mustJSON(infoToWire(info)))
	case op == OpCall:
		if !c.goTracked(func() { c.serve(m, t) }) {
			c.replyError(m.Reply, agentcall.ErrNotConnected)
		}
	default:
		c.replyError(m.Reply, &RemoteError{Detail: fmt.Sprintf("unknown operation %q", op)})
	}
}

// serve runs one call and answers it, with heartbeats while it runs.
func (c *Cluster) serve(m *nats.Msg, t *target) {
	timeout, ok := parseTimeout(m.Header.Get(HeaderTimeout))
	if !ok {
		timeout = c.opts.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	if tr := m.Header.Get(HeaderTrace); tr != "" {
		ctx = agentcall.WithTrace(ctx, tr)
	}
	if m.Header.Get(HeaderBypassWindows) == "1" {
		ctx = protocol.WithCallOptions(ctx, protocol.CallOptions{BypassWindows: true})
	}
	hb := c.heartbeat(m.Reply)
	fn, rid := m.Header.Get(HeaderFn), m.Header.Get(HeaderRequestID)
	var res json.RawMessage
	var err error
	switch {
	case t.kind == targetService:
		res, err = t.h(ctx, fn, rid, m.Data)
	case fn == protocol.FnSetSubscriptions:
		origin := m.Header.Get(HeaderOrigin)
		if origin == "" {
			err = &RemoteError{Detail: "a subscription set without its origin node"}
			break
		}
		res, err = c.holderSetSubscriptions(ctx, t.user, origin, m.Data)
	default:
		res, err = c.opts.Local.Call(ctx, t.user, fn, rid, m.Data)
	}
	hb.stop()
	if err != nil && c.ctx.Err() != nil {
		// This node is leaving: the call was cut short, whatever it did.
		err = agentcall.ErrConnectionLost
	}
	if err != nil {
		c.replyError(m.Reply, err)
		return
	}
	c.replyResult(m.Reply, res)
}

// beat sends heartbeats to a reply subject until stopped.
type beat struct {
	mu      sync.Mutex
	stopped bool
	t       *time.Timer
}

func (c *Cluster) heartbeat(reply string) *beat {
	b := &beat{}
	every := c.opts.HeartbeatInterval
	b.mu.Lock()
	defer b.mu.Unlock()
	b.t = time.AfterFunc(every, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.stopped {
			return
		}
		msg := &nats.Msg{Subject: reply, Header: nats.Header{HeaderKind: []string{KindHeartbeat}}}
		_ = c.nc.PublishMsg(msg)
		b.t.Reset(every)
	})
	return b
}

func (b *beat) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	b.t.Stop()
}

// replyError sends err as a wire error.
func (c *Cluster) replyError(reply string, err error) {
	msg := &nats.Msg{Subject: reply, Header: nats.Header{HeaderKind: []string{KindError}}, Data: mustJSON(encodeError(err))}
	if e := c.nc.PublishMsg(msg); e != nil {
		c.busDown("answering a call", e)
	}
}

// replyResult sends res, in parts when it exceeds a part's size.
func (c *Cluster) replyResult(reply string, res json.RawMessage) {
	part := c.partSize()
	if len(res) <= part {
		msg := &nats.Msg{Subject: reply, Header: nats.Header{HeaderKind: []string{KindResult}}, Data: res}
		if err := c.nc.PublishMsg(msg); err != nil {
			c.busDown("answering a call", err)
		}
		return
	}
	n := (len(res) + part - 1) / part
	for i := range n {
		chunk := res[i*part : min((i+1)*part, len(res))]
		msg := &nats.Msg{Subject: reply, Data: chunk, Header: nats.Header{
			HeaderKind: []string{KindResult},
			HeaderPart: []string{partHeader(i+1, n)},
		}}
		if err := c.nc.PublishMsg(msg); err != nil {
			// The caller hears no more and gives the call up.
			c.busDown("answering a call", err)
			return
		}
	}
}

// partSize is the largest part of a result.
func (c *Cluster) partSize() int {
	p := int(c.nc.MaxPayload()) - headerRoom
	if p < 1024 {
		p = 1024 // not connected yet: small parts go through anything
	}
	if c.opts.MaxPart > 0 && c.opts.MaxPart < p {
		p = c.opts.MaxPart
	}
	return p
}

func parseUint(s string) (uint64, bool) {
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}
