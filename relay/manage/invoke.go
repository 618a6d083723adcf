package manage

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"

	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// Invoke runs a Management API route in process, for the relay's other
// doors (the TradingView webhook's kill_switch=, the dashboard, MCP),
// which admitted their caller themselves: path is the route's path under
// Prefix ("controls/kill-switch") or the whole path, body its JSON (nil
// for none). It answers what the route answers over HTTP: the status and
// the response's body.
//
// What runs is the route's own code after the HTTP admission: the
// route's gate (management closed for the user, a feature withheld from
// the plan, the service modes), load shedding, the budgets of the
// request's class (kill, write, resource, read: the Management API's
// rules hold whichever door asks), then the body's checks and the read or
// the change, under the user's write lock, stored, pushed and recorded in
// the activity log with source src. What it skips is the calling door's
// business: the per-address budget, the token, the plan's door (elite:
// the caller's door decides who may ask), the token budget and the
// in-flight limit, which the caller's own admission stands for.
func (s *Server) Invoke(ctx context.Context, p auth.Principal, src protocol.ActivitySource, method, path string, body []byte) (status int, answer []byte) {
	return s.InvokeIf(ctx, p, src, method, path, "", body)
}

// InvokeIf is Invoke with the request's If-Match header (an ETag the
// caller read, "" for none): a change of a resource that changed since is
// 412 precondition_failed with its current ETag, as over HTTP. The
// dashboard's editors send the ETag of the resource they showed.
func (s *Server) InvokeIf(ctx context.Context, p auth.Principal, src protocol.ActivitySource, method, path, ifMatch string, body []byte) (status int, answer []byte) {
	path = strings.TrimPrefix(strings.TrimPrefix(path, Prefix), "/")
	rt, id := s.lookupRoute(method, path)
	w := &memoryWriter{header: http.Header{}}
	if rt == nil {
		writeErr(w, notFound())
		return w.result()
	}
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	url := Prefix
	if path != "" {
		url += "/" + path
	}
	r, err := http.NewRequestWithContext(WithSource(ctx, src), method, url, rd)
	if err != nil {
		writeErr(w, &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.InvalidPath, Detail: "the path is not a management route"})
		return w.result()
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	if ifMatch != "" {
		r.Header.Set("If-Match", ifMatch)
	}
	if e := s.gate(rt, p); e != nil {
		writeErr(w, e)
		return w.result()
	}
	if rt.hasID() && !validID(id) {
		writeErr(w, &httpapi.Error{Status: http.StatusBadRequest, Code: errcode.InvalidPath,
			Detail: "the id in the path is not a resource id"})
		return w.result()
	}
	s.running.Add(1)
	defer s.running.Add(-1)
	in := s.readInput(w, r, rt)
	cl := classify(rt, in)
	if cl != classStop && cl != classKill {
		if e := s.busy(); e != nil {
			writeErr(w, e)
			return w.result()
		}
	}
	if !s.opts.Admitter.Charge(w, p, s.charges(p.UserID, rt, cl, id)...) {
		return w.result()
	}
	s.serveAdmitted(w, r, rt, admitted{p: p, id: id, in: in, done: func() {}})
	return w.result()
}

// lookupRoute returns the route of method and path (under Prefix, without
// its leading slash) and the resource id the path names; nil when none.
func (s *Server) lookupRoute(method, path string) (*route, string) {
	parts := strings.Split(path, "/")
	for _, rt := range s.routes {
		if rt.method != method {
			continue
		}
		want := strings.Split(rt.path, "/")
		if rt.path == "" {
			want = []string{""}
		}
		if len(want) != len(parts) {
			continue
		}
		id, ok := "", true
		for i, w := range want {
			switch {
			case w == "{id}":
				id = parts[i]
			case w != parts[i]:
				ok = false
			}
		}
		if ok {
			return rt, id
		}
	}
	return nil, ""
}

// memoryWriter is the http.ResponseWriter of an invoked route: what the
// route answers, kept in memory.
type memoryWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (m *memoryWriter) Header() http.Header { return m.header }

func (m *memoryWriter) WriteHeader(status int) {
	if m.status == 0 {
		m.status = status
	}
}

func (m *memoryWriter) Write(p []byte) (int, error) {
	if m.status == 0 {
		m.status = http.StatusOK
	}
	return m.body.Write(p)
}

// result is the status and body answered.
func (m *memoryWriter) result() (int, []byte) {
	if m.status == 0 {
		m.status = http.StatusOK
	}
	return m.status, m.body.Bytes()
}
