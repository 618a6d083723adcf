package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"tradebridge/relay/agentcall"
)

// Handler serves the calls of a routed service for one user.
type Handler func(ctx context.Context, fn, requestID string, args json.RawMessage) (json.RawMessage, error)

// Route is a routed service: calls for a user reach the one node that
// serves the user (Serve), from any node (Forward), with the machinery of
// Cluster.Call (heartbeats, parts, errors). It implements broker.Router.
type Route struct {
	c       *Cluster
	service string
}

// Route returns the routed service named service ("broker"). Every node
// of a service must use the same name.
func (c *Cluster) Route(service string) *Route { return &Route{c: c, service: service} }

// Serve makes this node answer the calls forwarded for userID with h until
// stop is called (stop is idempotent). Each call runs on a goroutine of its
// own, with the caller's deadline and trace id in its context; h's errors
// travel to Forward's caller as Cluster.Call's do. Two nodes serving the
// same user share its calls (one node each call); the broker's lease keeps
// it to one. It fails with agentcall.ErrClosed once the Cluster is closed.
func (r *Route) Serve(userID string, h func(ctx context.Context, fn, requestID string, args json.RawMessage) (json.RawMessage, error)) (stop func(), err error) {
	if userID == "" || h == nil {
		return nil, errors.New("cluster: Route.Serve needs a user and a handler")
	}
	c := r.c
	subject := c.subj.service(r.service, userID)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, agentcall.ErrClosed
	}
	sub, err := c.nc.ChanQueueSubscribe(subject, QueueGroup, c.reqCh)
	if err != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("cluster: serving %s for a user: %w", r.service, err)
	}
	t := &target{kind: targetService, user: userID, sub: sub, h: h}
	c.targets[subject] = t // the latest Serve answers
	c.services[t] = true
	c.mu.Unlock()
	// Forward reaches this node once Serve returns.
	c.flush()
	return func() {
		c.mu.Lock()
		if !c.services[t] {
			c.mu.Unlock()
			return
		}
		delete(c.services, t)
		if c.targets[subject] == t {
			delete(c.targets, subject)
		}
		c.mu.Unlock()
		// Calls that reach this node until the server knows are answered
		// agentcall.ErrNotConnected, not dropped.
		_ = sub.Drain()
	}, nil
}

// Forward runs fn on the node serving userID (this one, with no NATS, when
// it does) and returns what its handler returned. When no node serves
// userID it returns agentcall.ErrNotConnected at once; when the serving node
// goes away during the call, agentcall.ErrConnectionLost.
func (r *Route) Forward(ctx context.Context, userID, fn, requestID string, args json.RawMessage) (json.RawMessage, error) {
	c := r.c
	subject := c.subj.service(r.service, userID)
	c.mu.Lock()
	t := c.targets[subject]
	c.mu.Unlock()
	if t != nil {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.opts.DefaultTimeout)
			defer cancel()
		}
		return t.h(ctx, fn, requestID, args)
	}
	if userID == "" {
		return nil, agentcall.ErrNotConnected
	}
	return c.request(ctx, subject, OpCall, fn, requestID, args)
}
