package agentlog

import (
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// notableKey marks a line for the system's log; encoders skip the field.
const notableKey = "agentlog.notable"

// Notable marks an Info line for the system's log (the service started or
// stopped, the agent connected): zap's logger.Info("…", agentlog.Notable()).
// It writes nothing into the line itself.
func Notable() zap.Field { return zap.Field{Key: notableKey, Type: zapcore.SkipType} }

func hasNotable(fields []zapcore.Field) bool {
	for _, f := range fields {
		if f.Key == notableKey && f.Type == zapcore.SkipType {
			return true
		}
	}
	return false
}

// maxRepeats bounds the messages remembered for EventRepeat.
const maxRepeats = 256

// eventShared is what the copies of an eventCore made by With share.
type eventShared struct {
	out      EventLogger
	messages map[string]bool
	repeat   time.Duration
	now      func() time.Time
	scrub    *scrubber

	mu   sync.Mutex
	sent map[string]*sentLine // by level and message
}

type sentLine struct {
	at      time.Time
	skipped int
}

// eventCore sends warnings, errors and notable Info lines to the system's
// log, as "logger: message {fields}" without time or level (the system's
// log has its own).
type eventCore struct {
	*eventShared
	enc     zapcore.Encoder
	notable bool // a With carried Notable
}

func newEventCore(out EventLogger, messages []string, repeat time.Duration, now func() time.Time, scrub *scrubber) *eventCore {
	sh := &eventShared{out: out, messages: map[string]bool{}, repeat: repeat, now: now, scrub: scrub,
		sent: map[string]*sentLine{}}
	for _, m := range messages {
		sh.messages[m] = true
	}
	enc := zapcore.NewConsoleEncoder(zapcore.EncoderConfig{MessageKey: "msg", NameKey: "logger",
		EncodeName: zapcore.FullNameEncoder, EncodeDuration: zapcore.StringDurationEncoder,
		ConsoleSeparator: ": ", SkipLineEnding: true})
	return &eventCore{eventShared: sh, enc: enc}
}

func (c *eventCore) Enabled(l zapcore.Level) bool { return l >= zapcore.InfoLevel }

func (c *eventCore) With(fields []zapcore.Field) zapcore.Core {
	clone := &eventCore{eventShared: c.eventShared, enc: c.enc.Clone(), notable: c.notable || hasNotable(fields)}
	for _, f := range fields {
		f.AddTo(clone.enc)
	}
	return clone
}

func (c *eventCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *eventCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	if e.Level < zapcore.WarnLevel && !c.notable && !c.messages[e.Message] && !hasNotable(fields) {
		return nil
	}
	note, ok := c.admit(e)
	if !ok {
		return nil
	}
	buf, err := c.enc.EncodeEntry(e, fields)
	if err != nil {
		return err
	}
	text := c.scrub.string(buf.String()) + note
	buf.Free()
	switch {
	case e.Level >= zapcore.ErrorLevel:
		return c.out.Error(text)
	case e.Level == zapcore.WarnLevel:
		return c.out.Warning(text)
	default:
		return c.out.Info(text)
	}
}

// admit reports whether e goes to the system's log now (the same message
// at the same level went less than repeat ago: no), and the note that
// says how many copies were left out since the last one sent.
func (c *eventCore) admit(e zapcore.Entry) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	key := e.Level.String() + "\x00" + e.Message
	last := c.sent[key]
	if last != nil && now.Sub(last.at) < c.repeat {
		last.skipped++
		return "", false
	}
	note := ""
	if last != nil && last.skipped > 0 {
		note = fmt.Sprintf(" (%d more since %s, left out)", last.skipped, last.at.Format(time.RFC3339))
	}
	if len(c.sent) >= maxRepeats && last == nil {
		for k, s := range c.sent {
			if now.Sub(s.at) >= c.repeat {
				delete(c.sent, k)
			}
		}
		if len(c.sent) >= maxRepeats {
			clear(c.sent)
		}
	}
	c.sent[key] = &sentLine{at: now}
	return note, true
}

func (c *eventCore) Sync() error { return nil }
