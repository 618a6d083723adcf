package diag

import (
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"go.uber.org/zap/zapcore"

	"tradebridge/protocol"
)

// maxMessage bounds the length of a recorded message, in bytes.
const maxMessage = 256

// Recorder counts the warnings and errors the agent logs, grouped by
// level and message, for Diagnostics.Errors. It keeps at most
// protocol.MaxDiagnosticErrors groups, dropping the one logged least
// recently to make room. It never keeps a log entry's fields, whose values
// may hold anything (an order, a path, a caller's text): only the
// message, which the agent's code writes as a constant sentence, and even
// that is passed through the token pattern and cut at 256 bytes.
//
// Tee Core into the agent's logger to feed it. A Recorder is safe for
// concurrent use.
type Recorder struct {
	mu     sync.Mutex
	groups map[groupKey]*protocol.ErrorCount
	now    func() time.Time
}

type groupKey struct {
	level   zapcore.Level
	message string
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{groups: make(map[groupKey]*protocol.ErrorCount), now: time.Now}
}

// Core returns a zapcore.Core that records the Recorder's entries: warn
// level and above.
func (r *Recorder) Core() zapcore.Core { return recorderCore{r} }

// Errors returns the recorded groups, the most recently logged first.
func (r *Recorder) Errors() []protocol.ErrorCount {
	r.mu.Lock()
	out := make([]protocol.ErrorCount, 0, len(r.groups))
	for _, g := range r.groups {
		out = append(out, *g)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Last.Equal(out[j].Last) {
			return out[i].Last.After(out[j].Last)
		}
		return out[i].Message < out[j].Message
	})
	return out
}

// record counts one entry.
func (r *Recorder) record(level zapcore.Level, message string, at time.Time) {
	if at.IsZero() {
		at = r.now()
	}
	at = at.UTC()
	message = cleanMessage(message)
	k := groupKey{level, message}
	r.mu.Lock()
	defer r.mu.Unlock()
	if g := r.groups[k]; g != nil {
		g.Count++
		if at.After(g.Last) {
			g.Last = at
		}
		return
	}
	if len(r.groups) >= protocol.MaxDiagnosticErrors {
		var oldest groupKey
		var first = true
		for key, g := range r.groups {
			if first || g.Last.Before(r.groups[oldest].Last) {
				oldest, first = key, false
			}
		}
		delete(r.groups, oldest)
	}
	r.groups[k] = &protocol.ErrorCount{Level: level.String(), Message: message, Count: 1, First: at, Last: at}
}

// cleanMessage removes anything token-like from a message and bounds its
// length on a rune boundary.
func cleanMessage(s string) string {
	s = tokenPattern.ReplaceAllString(s, Redacted)
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// recorderCore is the Recorder's zapcore.Core. Its fields are dropped:
// With returns the same core.
type recorderCore struct{ r *Recorder }

func (c recorderCore) Enabled(l zapcore.Level) bool { return l >= zapcore.WarnLevel }

func (c recorderCore) With([]zapcore.Field) zapcore.Core { return c }

func (c recorderCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c recorderCore) Write(e zapcore.Entry, _ []zapcore.Field) error {
	c.r.record(e.Level, e.Message, e.Time)
	return nil
}

func (c recorderCore) Sync() error { return nil }
