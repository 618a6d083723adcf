package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"go.uber.org/zap"
)

// DialOptions configures Dial.
type DialOptions struct {
	// URL chooses the store: "" or "sqlite" for SQLite in Dir,
	// postgres://… or postgresql://… for PostgreSQL.
	URL string
	// Dir is the data directory of the SQLite store.
	Dir string
	// Logger receives migration notices. Nil means no logging.
	Logger *zap.Logger
}

// ErrUnknownStore reports a DialOptions.URL that names no store.
var ErrUnknownStore = errors.New("store: unknown store")

// Dial opens the store that opts.URL names: SQLite in opts.Dir (Open), or
// the PostgreSQL database at the URL (OpenPostgres).
func Dial(ctx context.Context, opts DialOptions) (Store, error) {
	switch {
	case opts.URL == "" || opts.URL == "sqlite":
		s, err := Open(ctx, Options{Dir: opts.Dir, Logger: opts.Logger})
		if err != nil {
			return nil, err
		}
		return s, nil
	case hasScheme(opts.URL, "postgres") || hasScheme(opts.URL, "postgresql"):
		s, err := OpenPostgres(ctx, PostgresOptions{URL: opts.URL, Logger: opts.Logger})
		if err != nil {
			return nil, err
		}
		return s, nil
	default:
		return nil, fmt.Errorf(`%w %q: want "sqlite" or a postgres:// URL`, ErrUnknownStore, Redact(opts.URL))
	}
}

// Describe names the store opts opens, for the messages of commands and
// logs: "sqlite:" and the database file's absolute path, or the
// PostgreSQL URL with its password redacted (Redact).
func (opts DialOptions) Describe() string {
	if opts.URL == "" || opts.URL == "sqlite" {
		path := filepath.Join(opts.Dir, FileName)
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		return "sqlite:" + path
	}
	return Redact(opts.URL)
}

func hasScheme(u, scheme string) bool {
	return len(u) > len(scheme)+3 && strings.EqualFold(u[:len(scheme)+3], scheme+"://")
}

// Redact returns the store URL u fit for logs and errors: its password,
// and any password= query parameter, replaced by "xxxxx". What does not
// parse as a URL is replaced whole.
func Redact(u string) string {
	if u == "" || u == "sqlite" {
		return u
	}
	p, err := url.Parse(u)
	if err != nil || p.Opaque != "" {
		return "(a store URL that does not parse)"
	}
	q := p.Query()
	for k := range q {
		if strings.EqualFold(k, "password") {
			q.Set(k, "xxxxx")
		}
	}
	p.RawQuery = q.Encode()
	return p.Redacted()
}
