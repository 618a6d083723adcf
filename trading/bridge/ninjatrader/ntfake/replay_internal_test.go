package ntfake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/internal/testkit"
	"tradebridge/protocol"
	"tradebridge/trading/bridge/ninjatrader/ntwire"
)

// Timeouts of the replayer's tests.
const (
	mirrorRead = testkit.Medium
	mirrorWait = testkit.Medium
	mirrorTick = 10 * time.Millisecond
)

// transcriptsDir holds the transcripts the bridge's tests play.
const transcriptsDir = "../testdata/transcripts"

// Every transcript plays out against a scripted agent that sends what the
// transcript expects, and every record it sends decodes strictly into the
// protocol's types.
func TestTranscripts(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join(transcriptsDir, "*.txt"))
	require.NoError(t, err)
	require.Len(t, paths, 4)
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := Replay(t, path, dir)
			steps, err := parseTranscript(path)
			require.NoError(t, err)
			mirror(t, steps, dir)
			select {
			case <-r.Done():
			case <-time.After(mirrorWait):
				t.Fatal("the replay did not end")
			}
			r.Close()
		})
	}
}

// mirror plays the agent's side of a transcript: it sends what ">" lines
// expect and checks that the replayer sends what "<" lines say.
func mirror(t *testing.T, steps []step, dir string) {
	vars := map[string]any{}
	methods := map[uint64]string{} // request id → method
	var (
		c       net.Conn
		rd      *ntwire.Reader
		id      uint64
		lastKey string // the discovery file's port and secret when last dialled
		restart bool   // the next connection needs a new discovery file
	)
	connect := func() {
		var d ntwire.Discovery
		require.Eventually(t, func() bool {
			b, err := os.ReadFile(filepath.Join(dir, ntwire.DiscoveryFileName))
			if err != nil || json.Unmarshal(b, &d) != nil {
				return false
			}
			return !restart || fmt.Sprint(d.Port, d.Secret) != lastKey
		}, mirrorWait, mirrorTick)
		restart = false
		lastKey = fmt.Sprint(d.Port, d.Secret)
		var err error
		c, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", d.Port))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		rd, id = ntwire.NewReader(c), 0
		vars[varSecret] = d.Secret
	}
	expectClosed := func() {
		_ = c.SetReadDeadline(time.Now().Add(mirrorRead))
		_, err := rd.Read()
		require.Error(t, err)
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "the replayer did not close the connection")
		_ = c.Close()
	}
	for _, st := range steps {
		switch st.kind {
		case stepExpect:
			if c == nil {
				connect()
			}
			m := fill(st.msg, vars).(map[string]any)
			if m["type"] == ntwire.TypeRequest {
				id++
				m["id"] = id
				methods[id] = m["method"].(string)
			}
			b, err := json.Marshal(m)
			require.NoError(t, err)
			_, err = c.Write(append(b, '\n'))
			require.NoError(t, err)
			if id != 0 {
				vars[varID] = json.Number(fmt.Sprint(id))
			}
		case stepSend:
			if c == nil {
				connect()
			}
			_ = c.SetReadDeadline(time.Now().Add(mirrorRead))
			m, err := rd.Read()
			require.NoError(t, err, "line %d", st.line)
			b, err := json.Marshal(m)
			require.NoError(t, err)
			got := decodeGeneric(t, b)
			want := decodeGeneric(t, mustMarshal(t, fill(st.msg, vars)))
			require.True(t, equalJSON(want, got), "line %d: got %s", st.line, b)
			checkRecords(t, st.line, m, methods)
		case stepDrop, stepRestart:
			expectClosed()
			c, restart = nil, st.kind == stepRestart
		case stepWait, stepQuiet:
		}
	}
}

// fill replaces placeholders like the replayer does, inventing a value
// for each one a ">" line captures.
func fill(v any, vars map[string]any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = fill(e, vars)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = fill(e, vars)
		}
		return out
	case string:
		if !variable.MatchString(x) {
			return x
		}
		if _, ok := vars[x[1:]]; !ok {
			vars[x[1:]] = "mirror-" + x[1:]
		}
		return vars[x[1:]]
	}
	return v
}

func decodeGeneric(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v))
	return v
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// checkRecords decodes the records of a message from the add-on strictly.
func checkRecords(t *testing.T, line int, m ntwire.Message, methods map[uint64]string) {
	t.Helper()
	strictly := func(data []byte, out any) {
		d := json.NewDecoder(bytes.NewReader(data))
		d.DisallowUnknownFields()
		require.NoError(t, d.Decode(out), "line %d: %s", line, data)
	}
	switch m.Type {
	case ntwire.TypeWelcome:
		require.Regexp(t, `^[A-Za-z0-9_-]{8,64}$`, m.SessionID, "line %d", line)
		require.NotZero(t, m.ProtocolVersion)
	case ntwire.TypeEvent:
		require.NotZero(t, m.Seq, "line %d", line)
		var out any
		switch m.Kind {
		case ntwire.KindOrder:
			out = new(protocol.Order)
		case ntwire.KindExecution:
			out = new(protocol.Execution)
		case ntwire.KindPosition:
			out = new(protocol.Position)
		case ntwire.KindAccount:
			out = new(protocol.Account)
		case ntwire.KindConnection:
			out = new(protocol.Connection)
		case ntwire.KindQuote:
			out = new(protocol.Quote)
		case ntwire.KindStrategy:
			out = new(protocol.Strategy)
		case ntwire.KindBar:
			out = new(ntwire.BarUpdate)
		default:
			t.Fatalf("line %d: unknown event kind", line)
		}
		strictly(m.Data, out)
	case ntwire.TypeReply:
		method, ok := methods[m.ID]
		require.True(t, ok, "line %d: a reply to no request", line)
		if m.Error != nil {
			require.Contains(t, ntwire.Codes, m.Error.Code, "line %d", line)
			return
		}
		var out any
		switch method {
		case ntwire.MethodSnapshot:
			out = new(ntwire.Snapshot)
		case ntwire.MethodSubmitOrder, ntwire.MethodCancelOrder, ntwire.MethodChangeOrder:
			out = new(ntwire.OrderResult)
		default:
			out = new(map[string]any)
		}
		strictly(m.Result, out)
	case ntwire.TypeBye:
		require.Contains(t, []string{ntwire.ByePlatformClosing, ntwire.ByeAddonStopping}, m.Reason, "line %d", line)
	}
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs) > 0
}

func (r *recorder) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

func writeTranscript(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.txt")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

const helloWelcome = `> {"type":"hello","protocolVersion":1,"secret":"$secret"}
< {"type":"welcome","protocolVersion":1,"sessionId":"s1234567"}
`

// rawAgent dials a replayer and says hello.
func rawAgent(t *testing.T, r *Replayer) (net.Conn, *ntwire.Reader, *ntwire.Writer) {
	t.Helper()
	c, err := net.Dial("tcp", r.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	rd, w := ntwire.NewReader(c), ntwire.NewWriter(c)
	require.NoError(t, w.Write(ntwire.Message{Type: ntwire.TypeHello, ProtocolVersion: 1, Secret: r.Secret(), Client: "x"}))
	_ = c.SetReadDeadline(time.Now().Add(mirrorRead))
	m, err := rd.Read()
	require.NoError(t, err)
	require.Equal(t, ntwire.TypeWelcome, m.Type)
	return c, rd, w
}

func TestReplayFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		transcript string
		agent      func(t *testing.T, c net.Conn, rd *ntwire.Reader, w *ntwire.Writer)
		want       string // in the recorded error
	}{
		{
			name:       "unexpected message",
			transcript: helloWelcome + `> {"type":"request","method":"snapshot"}` + "\n",
			agent: func(t *testing.T, c net.Conn, rd *ntwire.Reader, w *ntwire.Writer) {
				require.NoError(t, w.Write(ntwire.Message{Type: ntwire.TypeRequest, ID: 1, Method: ntwire.MethodQuote}))
			},
			want: "line 3: the agent sent",
		},
		{
			name:       "captured value differs",
			transcript: helloWelcome + `> {"type":"request","method":"$m"}` + "\n" + `> {"type":"request","method":"$m"}` + "\n",
			agent: func(t *testing.T, c net.Conn, rd *ntwire.Reader, w *ntwire.Writer) {
				require.NoError(t, w.Write(ntwire.Message{Type: ntwire.TypeRequest, ID: 1, Method: "a"}))
				require.NoError(t, w.Write(ntwire.Message{Type: ntwire.TypeRequest, ID: 2, Method: "b"}))
			},
			want: "line 4",
		},
		{
			name:       "not silent",
			transcript: helloWelcome + "! quiet 5s\n",
			agent: func(t *testing.T, c net.Conn, rd *ntwire.Reader, w *ntwire.Writer) {
				require.NoError(t, w.Write(ntwire.Message{Type: ntwire.TypePing, ID: 1})) // not a failure
				require.NoError(t, w.Write(ntwire.Message{Type: ntwire.TypeRequest, ID: 2, Method: "x"}))
			},
			want: "want silence",
		},
		{
			name:       "agent hangs up",
			transcript: helloWelcome + `> {"type":"request","method":"snapshot"}` + "\n",
			agent: func(t *testing.T, c net.Conn, rd *ntwire.Reader, w *ntwire.Writer) {
				require.NoError(t, c.Close())
			},
			want: "closed the connection",
		},
		{
			name:       "malformed line",
			transcript: helloWelcome + `> {"type":"request","method":"snapshot"}` + "\n",
			agent: func(t *testing.T, c net.Conn, rd *ntwire.Reader, w *ntwire.Writer) {
				_, err := c.Write([]byte("{oops\n"))
				require.NoError(t, err)
			},
			want: "not a protocol message",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{TB: t}
			r := Replay(rec, writeTranscript(t, tt.transcript), t.TempDir())
			c, rd, w := rawAgent(t, r)
			tt.agent(t, c, rd, w)
			select {
			case <-r.Done():
			case <-time.After(mirrorWait):
				t.Fatal("the replay did not end")
			}
			r.Close()
			errs := rec.errors()
			require.Len(t, errs, 1)
			require.Contains(t, errs[0], tt.want)
			require.Contains(t, errs[0], "t.txt")
		})
	}
}

// Pings are answered and not matched; the captured id goes into the reply.
func TestReplayPingsAndIDs(t *testing.T) {
	t.Parallel()
	r := Replay(t, writeTranscript(t, helloWelcome+`> {"type":"request","method":"quote","params":{"instrument":"$in"}}
< {"type":"reply","id":"$id","result":{"instrument":"$in"}}
! wait 10ms
`), t.TempDir())
	c, rd, w := rawAgent(t, r)
	require.NoError(t, w.Write(ntwire.Message{Type: ntwire.TypePing, ID: 5}))
	require.NoError(t, w.Write(ntwire.Message{Type: ntwire.TypePong, ID: 9}))
	require.NoError(t, w.Write(ntwire.Message{Type: ntwire.TypeRequest, ID: 42, Method: ntwire.MethodQuote,
		Params: json.RawMessage(`{"instrument":"ES 12-26","extra":true}`)}))
	_ = c.SetReadDeadline(time.Now().Add(mirrorRead))
	m, err := rd.Read()
	require.NoError(t, err)
	require.Equal(t, ntwire.Message{Type: ntwire.TypePong, ID: 5}, m)
	m, err = rd.Read()
	require.NoError(t, err)
	require.Equal(t, ntwire.TypeReply, m.Type)
	require.Equal(t, uint64(42), m.ID)
	require.JSONEq(t, `{"instrument":"ES 12-26"}`, string(m.Result))
	<-r.Done()
	// After the end the connection stays open and pings are answered.
	require.NoError(t, w.Write(ntwire.Message{Type: ntwire.TypePing, ID: 6}))
	m, err = rd.Read()
	require.NoError(t, err)
	require.Equal(t, ntwire.Message{Type: ntwire.TypePong, ID: 6}, m)
	r.Close()
	r.Close()
	require.NoFileExists(t, r.DiscoveryPath())
}

// Closing a replay that was not played out fails the test.
func TestReplayClosedEarly(t *testing.T) {
	t.Parallel()
	rec := &recorder{TB: t}
	r := Replay(rec, writeTranscript(t, helloWelcome), t.TempDir())
	r.Close()
	errs := rec.errors()
	require.Len(t, errs, 1)
	require.Contains(t, errs[0], "before the agent played it out")
}

func TestParseTranscript(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"empty":               "# nothing\n\n",
		"unknown directive":   "! explode\n",
		"wait without time":   "! wait\n",
		"negative wait":       "! wait -1s\n",
		"drop with argument":  "! drop now\n",
		"not JSON":            "> hello\n",
		"two objects":         `> {"type":"a"} {"type":"b"}` + "\n",
		"no type":             `< {"id":1}` + "\n",
		"unknown line":        "hello\n",
		"uncaptured variable": `< {"type":"reply","id":"$id"}` + "\n",
		"matching the id":     `> {"type":"request","id":"$id"}` + "\n",
		"not a message":       `< {"type":"event","seq":"one"}` + "\n",
	}
	for name, text := range tests {
		_, err := parseTranscript(writeTranscript(t, text))
		require.Error(t, err, name)
		if name != "empty" {
			require.Contains(t, err.Error(), "line 1", name)
		}
	}
	steps, err := parseTranscript(writeTranscript(t, "# c\n"+helloWelcome+"! wait 5ms\n! quiet 1s\n! drop\n! restart\n"))
	require.NoError(t, err)
	var got []string
	for _, s := range steps {
		got = append(got, s.kind)
	}
	require.Equal(t, []string{stepExpect, stepSend, stepWait, stepQuiet, stepDrop, stepRestart}, got)
	require.Equal(t, 2, steps[0].line)
	require.Equal(t, 5*time.Millisecond, steps[2].d)
	require.True(t, strings.HasPrefix(steps[1].text, `{"type":"welcome"`))
}
