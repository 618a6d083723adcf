// Package agentlog is the agent's logger when it runs as a service (and,
// when a log folder is configured, in the foreground): JSON lines in a
// rotating, bounded file; the warnings and errors, and the few lines the
// agent marks as notable (started, stopped, connected), in the system's
// log (the Windows Event Log, syslog or the journal on Linux); and any
// other cores the caller tees in (the console, the diagnostics recorder).
//
// Nothing it writes holds an agent or API token: every line is scrubbed
// of anything shaped like one, and of the secrets the caller names
// (SetSecrets), before it reaches the file or the system's log.
package agentlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"gopkg.in/natefinch/lumberjack.v2"
)

// FileName is the name of the current log file in the log folder; the
// rotated ones are named after it with their rotation time
// (agent-2026-11-25T10-00-00.000.log.gz).
const FileName = "agent.log"

// Defaults of Options.
const (
	DefaultMaxSizeMB   = 10
	DefaultMaxBackups  = 5
	DefaultMaxAgeDays  = 30
	DefaultEventRepeat = 10 * time.Minute
)

// EventLogger is the system's log, as kardianos/service's Logger offers
// it (service.Logger satisfies it).
type EventLogger interface {
	Error(v ...any) error
	Warning(v ...any) error
	Info(v ...any) error
}

// Options configure a Logger.
type Options struct {
	// Dir is the log folder, created (readable by the owner only) when
	// missing; empty writes no file.
	Dir string
	// MaxSizeMB is the size a log file grows to before it is rotated
	// (default 10); MaxBackups how many rotated files are kept (default
	// 5); MaxAgeDays how long they are kept (default 30). The rotated
	// files are gzip-compressed unless NoCompress.
	MaxSizeMB  int
	MaxBackups int
	MaxAgeDays int
	NoCompress bool
	// Level is the lowest level written to the file; default Info.
	Level zapcore.LevelEnabler
	// EventLog is the system's log; nil writes none. It receives the
	// warnings and errors, and the Info lines marked Notable or whose
	// message is one of EventMessages.
	EventLog      EventLogger
	EventMessages []string
	// EventRepeat is how long the same message at the same level is sent
	// to EventLog once only (a relay that stays unreachable must not fill
	// the Event Log); the next copy after it says how many were left out.
	// Default 10 minutes.
	EventRepeat time.Duration
	// Cores are teed in as they are (the console, the diagnostics
	// recorder); they are not scrubbed.
	Cores []zapcore.Core
	// Now is the clock of EventRepeat; default time.Now.
	Now func() time.Time
}

// Logger is the agent's logger. Close it last: it flushes and closes the
// file.
type Logger struct {
	log    *zap.Logger
	file   *lumberjack.Logger
	out    *fileWriter
	path   string
	scrub  *scrubber
	closed sync.Once
	err    error
}

// New builds the logger; it opens the log file now, so that a folder it
// cannot write to is reported here.
func New(opts Options) (*Logger, error) {
	if opts.MaxSizeMB < 0 || opts.MaxBackups < 0 || opts.MaxAgeDays < 0 || opts.EventRepeat < 0 {
		return nil, errors.New("agentlog: sizes, counts, ages and durations must not be negative")
	}
	if opts.MaxSizeMB == 0 {
		opts.MaxSizeMB = DefaultMaxSizeMB
	}
	if opts.MaxBackups == 0 {
		opts.MaxBackups = DefaultMaxBackups
	}
	if opts.MaxAgeDays == 0 {
		opts.MaxAgeDays = DefaultMaxAgeDays
	}
	if opts.EventRepeat == 0 {
		opts.EventRepeat = DefaultEventRepeat
	}
	if opts.Level == nil {
		opts.Level = zapcore.InfoLevel
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	l := &Logger{scrub: newScrubber()}
	var cores []zapcore.Core
	if opts.Dir != "" {
		if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
			return nil, fmt.Errorf("agentlog: creating the log folder: %w", err)
		}
		l.path = filepath.Join(opts.Dir, FileName)
		f, err := os.OpenFile(l.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("agentlog: opening the log file: %w", err)
		}
		f.Close()
		l.file = &lumberjack.Logger{Filename: l.path, MaxSize: opts.MaxSizeMB, MaxBackups: opts.MaxBackups,
			MaxAge: opts.MaxAgeDays, Compress: !opts.NoCompress}
		l.out = &fileWriter{w: l.file, scrub: l.scrub}
		enc := zap.NewProductionEncoderConfig()
		enc.EncodeTime = zapcore.ISO8601TimeEncoder
		cores = append(cores, zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(l.out), opts.Level))
	}
	if opts.EventLog != nil {
		cores = append(cores, newEventCore(opts.EventLog, opts.EventMessages, opts.EventRepeat, opts.Now, l.scrub))
	}
	cores = append(cores, opts.Cores...)
	l.log = zap.New(zapcore.NewTee(cores...), zap.ErrorOutput(zapcore.Lock(os.Stderr)))
	return l, nil
}

// Logger is the zap logger to hand to the agent.
func (l *Logger) Logger() *zap.Logger { return l.log }

// File is the path of the current log file, or "" when none is written.
func (l *Logger) File() string { return l.path }

// SetSecrets names the secrets (the agent token, the NinjaTrader secret)
// scrubbed from every line from now on, in place of the previous ones.
// Secrets shorter than 8 characters are not scrubbed: they would blank
// out ordinary words.
func (l *Logger) SetSecrets(secrets ...string) { l.scrub.set(secrets) }

// Close flushes and closes the log file; lines logged after it reach the
// other cores only. It is idempotent.
func (l *Logger) Close() error {
	l.closed.Do(func() {
		_ = l.log.Sync() // the console's Sync fails on a terminal; nothing to do about it
		if l.out != nil {
			l.out.mu.Lock()
			l.out.closed = true
			l.out.mu.Unlock()
			l.err = l.file.Close()
		}
	})
	return l.err
}

// fileWriter writes scrubbed lines to the rotating file until closed.
type fileWriter struct {
	mu     sync.Mutex // orders writes with Close
	w      *lumberjack.Logger
	scrub  *scrubber
	closed bool
}

func (f *fileWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return len(p), nil
	}
	if _, err := f.w.Write(f.scrub.bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
