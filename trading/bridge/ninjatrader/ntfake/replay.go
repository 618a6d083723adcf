package ntfake

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tradebridge/trading/bridge/ninjatrader/ntwire"
)

// ReplayTimeout is how long a Replayer waits for the agent's next
// connection or message before it fails the test.
const ReplayTimeout = 10 * time.Second

// The kinds of transcript lines.
const (
	stepExpect  = ">"
	stepSend    = "<"
	stepDrop    = "drop"
	stepRestart = "restart"
	stepWait    = "wait"
	stepQuiet   = "quiet"
)

// variable matches a placeholder string of a transcript: "$name".
var variable = regexp.MustCompile(`^\$[A-Za-z][A-Za-z0-9_]*$`)

// Placeholders the Replayer binds itself.
const (
	varSecret = "secret"
	varID     = "id"
)

// step is one line of a transcript.
type step struct {
	line int
	kind string
	text string        // the message as written, for error messages
	msg  any           // the message, decoded (numbers as json.Number)
	d    time.Duration // of wait and quiet
}

// Replayer is a fake add-on that plays a transcript (see the package
// documentation for the format). Make one with Replay.
type Replayer struct {
	t     testing.TB
	name  string
	dir   string
	steps []step

	done     chan struct{} // the replay ended, played out or failed
	stop     chan struct{} // Close was called
	wg       sync.WaitGroup
	finished atomic.Bool  // every line was played
	line     atomic.Int64 // the line being played
	once     sync.Once

	mu     sync.Mutex
	ln     net.Listener
	secret string
	conns  map[net.Conn]struct{}
}

// Replay starts a Replayer of the transcript at path: it listens on
// 127.0.0.1, writes the discovery file into dir and serves the agent's
// connections in turn as the transcript says. A transcript that does not
// parse fails the test at once (t.Fatalf); an agent that departs from it
// fails the test (t.Errorf) and ends the replay. Close is registered with
// t.Cleanup.
func Replay(t testing.TB, path, dir string) *Replayer {
	t.Helper()
	steps, err := parseTranscript(path)
	if err != nil {
		t.Fatalf("ntfake: %v", err)
	}
	r := &Replayer{
		t:     t,
		name:  filepath.Base(path),
		dir:   dir,
		steps: steps,
		done:  make(chan struct{}),
		stop:  make(chan struct{}),
		conns: make(map[net.Conn]struct{}),
	}
	if err := r.listen(); err != nil {
		t.Fatalf("ntfake: %v", err)
	}
	r.wg.Add(1)
	go r.run()
	t.Cleanup(r.Close)
	return r
}

// Done is closed when the replay ends: every line played, or the agent
// departed from the transcript (the test has then failed).
func (r *Replayer) Done() <-chan struct{} { return r.done }

// Addr returns the address the replayer listens on.
func (r *Replayer) Addr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln == nil {
		return ""
	}
	return r.ln.Addr().String()
}

// Secret returns the discovery file's current secret.
func (r *Replayer) Secret() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.secret
}

// DiscoveryPath returns the path of the discovery file.
func (r *Replayer) DiscoveryPath() string { return filepath.Join(r.dir, ntwire.DiscoveryFileName) }

// Close stops the replay, closes every connection, removes the discovery
// file and waits for the replayer's goroutines. Closing before the
// transcript was played out fails the test, unless it failed already. It
// is idempotent.
func (r *Replayer) Close() {
	r.once.Do(func() {
		close(r.stop)
		r.mu.Lock()
		if r.ln != nil {
			_ = r.ln.Close()
		}
		for c := range r.conns {
			_ = c.Close()
		}
		r.mu.Unlock()
		r.wg.Wait()
		_ = os.Remove(r.DiscoveryPath())
		if !r.finished.Load() && !r.t.Failed() {
			r.t.Errorf("ntfake: transcript %s: closed at line %d before the agent played it out", r.name, r.line.Load())
		}
	})
}

// errorf fails the test with the transcript's name and the line.
func (r *Replayer) errorf(line int, format string, args ...any) {
	r.t.Errorf("ntfake: transcript %s, line %d: %s", r.name, line, fmt.Sprintf(format, args...))
}

// stopping reports whether Close was called.
func (r *Replayer) stopping() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

// listen opens a new listener with a new secret and writes the discovery
// file.
func (r *Replayer) listen() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	secret := newSecret()
	if _, err := writeDiscovery(r.dir, ntwire.Discovery{
		Version: ntwire.Version, Port: ln.Addr().(*net.TCPAddr).Port, Secret: secret,
		PID: os.Getpid(), AddonVersion: DefaultAddonVersion, StartedAt: time.Now().UTC().Format(time.RFC3339),
	}); err != nil {
		_ = ln.Close()
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping() {
		_ = ln.Close()
		return errors.New("closed")
	}
	r.ln, r.secret = ln, secret
	return nil
}

// run plays the transcript.
func (r *Replayer) run() {
	defer r.wg.Done()
	defer close(r.done)
	vars := map[string]any{}
	var cur *replayConn
	for _, st := range r.steps {
		r.line.Store(int64(st.line))
		if cur == nil && (st.kind == stepExpect || st.kind == stepSend || st.kind == stepQuiet) {
			if cur = r.accept(st.line); cur == nil {
				return
			}
		}
		switch st.kind {
		case stepExpect:
			got, err := cur.next(ReplayTimeout, r.stop)
			if err != nil {
				r.fail(st, err, "want %s", st.text)
				return
			}
			if !r.match(st.msg, got.generic, vars) {
				r.errorf(st.line, "the agent sent %s, want %s", got.text, st.text)
				return
			}
			if got.msg.ID != 0 {
				vars[varID] = json.Number(strconv.FormatUint(got.msg.ID, 10))
			}
		case stepSend:
			b, err := json.Marshal(r.substitute(st.msg, vars))
			if err != nil {
				r.errorf(st.line, "cannot encode the message: %v", err)
				return
			}
			if err := cur.write(b); err != nil {
				if !r.stopping() {
					r.errorf(st.line, "cannot send to the agent: %v", err)
				}
				return
			}
		case stepDrop:
			if cur != nil {
				cur.close()
				cur = nil
			}
		case stepRestart:
			if cur != nil {
				cur.close()
				cur = nil
			}
			r.mu.Lock()
			_ = r.ln.Close()
			r.mu.Unlock()
			_ = os.Remove(r.DiscoveryPath())
			if err := r.listen(); err != nil {
				if !r.stopping() {
					r.errorf(st.line, "cannot restart: %v", err)
				}
				return
			}
		case stepWait:
			t := time.NewTimer(st.d)
			select {
			case <-t.C:
			case <-r.stop:
				t.Stop()
				return
			}
		case stepQuiet:
			got, err := cur.next(st.d, r.stop)
			switch {
			case errors.Is(err, errReplayTimeout):
			case err != nil:
				r.fail(st, err, "want silence")
				return
			default:
				r.errorf(st.line, "the agent sent %s, want silence", got.text)
				return
			}
		}
	}
	if cur != nil {
		cur.discard.Store(true)
	}
	r.finished.Store(true)
}

// fail reports why no message came, unless the replayer is closing.
func (r *Replayer) fail(st step, err error, format string, args ...any) {
	if errors.Is(err, errReplayStopped) {
		return
	}
	r.errorf(st.line, "%v; %s", err, fmt.Sprintf(format, args...))
}

// accept waits for the agent's next connection.
func (r *Replayer) accept(line int) *replayConn {
	r.mu.Lock()
	ln := r.ln
	r.mu.Unlock()
	if tl, ok := ln.(*net.TCPListener); ok {
		_ = tl.SetDeadline(time.Now().Add(ReplayTimeout))
	}
	c, err := ln.Accept()
	if err != nil {
		if !r.stopping() {
			r.errorf(line, "the agent did not connect within %v: %v", ReplayTimeout, err)
		}
		return nil
	}
	r.mu.Lock()
	if r.stopping() {
		r.mu.Unlock()
		_ = c.Close()
		return nil
	}
	r.conns[c] = struct{}{}
	r.mu.Unlock()
	rc := &replayConn{conn: c, notify: make(chan struct{}, 1), ended: make(chan struct{})}
	r.wg.Add(1)
	go rc.read(&r.wg)
	return rc
}

// match reports whether got contains want (see the package documentation),
// capturing placeholders into vars.
func (r *Replayer) match(want, got any, vars map[string]any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !r.match(wv, gv, vars) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !r.match(w[i], g[i], vars) {
				return false
			}
		}
		return true
	case string:
		if !variable.MatchString(w) {
			g, ok := got.(string)
			return ok && g == w
		}
		name := w[1:]
		if name == varSecret {
			g, ok := got.(string)
			return ok && g == r.Secret()
		}
		if v, ok := vars[name]; ok {
			return equalJSON(v, got)
		}
		vars[name] = got
		return true
	case json.Number:
		g, ok := got.(json.Number)
		return ok && equalNumbers(w, g)
	default: // bool, nil
		return want == got
	}
}

// substitute returns v with its placeholders replaced by their values.
func (r *Replayer) substitute(v any, vars map[string]any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = r.substitute(e, vars)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = r.substitute(e, vars)
		}
		return out
	case string:
		if !variable.MatchString(x) {
			return x
		}
		if x[1:] == varSecret {
			return r.Secret()
		}
		return vars[x[1:]] // bound: parseTranscript checked it
	}
	return v
}

// equalJSON compares two decoded JSON values.
func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k := range x {
			if !equalJSON(x[k], y[k]) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		return ok && equalNumbers(x, y)
	}
	return a == b
}

// equalNumbers compares two JSON numbers exactly.
func equalNumbers(a, b json.Number) bool {
	x, ok1 := new(big.Rat).SetString(string(a))
	y, ok2 := new(big.Rat).SetString(string(b))
	return ok1 && ok2 && x.Cmp(y) == 0
}

// parseTranscript reads a transcript and checks it: every message is a
// JSON object with a type, every directive is known, and every
// placeholder of a "<" line is captured by an earlier ">" line.
func parseTranscript(path string) ([]step, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	name := filepath.Base(path)
	bound := map[string]bool{varSecret: true}
	var steps []step
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), ntwire.MaxLine)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("transcript %s, line %d: %s", name, n, fmt.Sprintf(format, args...))
		}
		st := step{line: n}
		switch {
		case strings.HasPrefix(line, ">"), strings.HasPrefix(line, "<"):
			st.kind, st.text = line[:1], strings.TrimSpace(line[1:])
			d := json.NewDecoder(strings.NewReader(st.text))
			d.UseNumber()
			var obj map[string]any
			if err := d.Decode(&obj); err != nil || d.More() {
				return nil, bad("not one JSON object")
			}
			if typ, ok := obj["type"].(string); !ok || typ == "" {
				return nil, bad("a message needs a type")
			}
			st.msg = obj
			names := placeholders(obj, nil)
			if st.kind == stepExpect {
				for _, v := range names {
					if v == varID {
						return nil, bad("$id is captured, not matched")
					}
					bound[v] = true
				}
				bound[varID] = true
			} else {
				for _, v := range names {
					if !bound[v] {
						return nil, bad("$%s is not captured by an earlier > line", v)
					}
				}
				var m ntwire.Message
				if err := json.Unmarshal([]byte(st.text), &m); err != nil && len(names) == 0 {
					return nil, bad("not a protocol message: %v", err)
				}
			}
		case strings.HasPrefix(line, "!"):
			f := strings.Fields(line[1:])
			if len(f) == 0 {
				return nil, bad("an empty directive")
			}
			st.kind = f[0]
			switch st.kind {
			case stepDrop, stepRestart:
				if len(f) != 1 {
					return nil, bad("%s takes no argument", st.kind)
				}
			case stepWait, stepQuiet:
				if len(f) != 2 {
					return nil, bad("%s takes a duration", st.kind)
				}
				if st.d, err = time.ParseDuration(f[1]); err != nil || st.d <= 0 {
					return nil, bad("%s takes a positive duration", st.kind)
				}
			default:
				return nil, bad("unknown directive")
			}
		default:
			return nil, bad("a line starts with '#', '>', '<' or '!'")
		}
		steps = append(steps, st)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("transcript %s: %w", name, err)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("transcript %s: empty", name)
	}
	return steps, nil
}

// placeholders appends the placeholder names in v to names.
func placeholders(v any, names []string) []string {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			names = placeholders(e, names)
		}
	case []any:
		for _, e := range x {
			names = placeholders(e, names)
		}
	case string:
		if variable.MatchString(x) {
			names = append(names, x[1:])
		}
	}
	return names
}

var (
	errReplayTimeout   = errors.New("the agent sent nothing in time")
	errReplayClosed    = errors.New("the agent closed the connection")
	errReplayMalformed = errors.New("the agent sent a line that is not a protocol message")
	errReplayStopped   = errors.New("replayer closed")
)

// replayConn is one agent connection of a Replayer. A reader goroutine
// answers the agent's pings, drops its pongs and queues the rest.
type replayConn struct {
	conn    net.Conn
	wmu     sync.Mutex
	discard atomic.Bool // the transcript is over: drop what comes

	mu     sync.Mutex
	queue  []received
	notify chan struct{} // a message was queued
	ended  chan struct{} // the reader stopped
	err    error         // why, once ended is closed
}

// received is a message of the agent.
type received struct {
	msg     ntwire.Message
	generic any    // the message as decoded JSON, for matching
	text    string // the message for error messages, secret hidden
	err     error  // errReplayMalformed
}

func (c *replayConn) read(wg *sync.WaitGroup) {
	defer wg.Done()
	rd := ntwire.NewReader(c.conn)
	for {
		m, err := rd.Read()
		if errors.Is(err, ntwire.ErrMalformed) {
			c.push(received{err: errReplayMalformed})
			continue
		}
		if err != nil {
			c.mu.Lock()
			c.err = errReplayClosed
			c.mu.Unlock()
			close(c.ended)
			return
		}
		switch m.Type {
		case ntwire.TypePing:
			b, _ := json.Marshal(ntwire.Message{Type: ntwire.TypePong, ID: m.ID})
			_ = c.write(b)
			continue
		case ntwire.TypePong:
			continue
		}
		b, _ := json.Marshal(m)
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var g any
		_ = d.Decode(&g)
		shown := m
		if shown.Secret != "" {
			shown.Secret = "…"
		}
		text, _ := json.Marshal(shown)
		c.push(received{msg: m, generic: g, text: string(text)})
	}
}

func (c *replayConn) push(m received) {
	if c.discard.Load() {
		return
	}
	c.mu.Lock()
	c.queue = append(c.queue, m)
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// next returns the agent's next message, waiting up to d.
func (c *replayConn) next(d time.Duration, stop <-chan struct{}) (received, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		c.mu.Lock()
		if len(c.queue) > 0 {
			m := c.queue[0]
			c.queue = c.queue[1:]
			c.mu.Unlock()
			return m, m.err
		}
		c.mu.Unlock()
		select {
		case <-c.notify:
		case <-c.ended:
			c.mu.Lock()
			n := len(c.queue)
			c.mu.Unlock()
			if n == 0 {
				return received{}, c.err
			}
		case <-t.C:
			return received{}, errReplayTimeout
		case <-stop:
			return received{}, errReplayStopped
		}
	}
}

// write sends one line.
func (c *replayConn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.conn.SetWriteDeadline(time.Now().Add(ReplayTimeout))
	_, err := c.conn.Write(append(b, '\n'))
	return err
}

func (c *replayConn) close() { _ = c.conn.Close() }
