// Package diag holds the parts of what the agent tells support staff about
// itself (protocol.Diagnostics) that do not need a running agent: the
// Recorder that counts the warnings and errors the agent logs, the
// snapshot file in which the running agent keeps its latest diagnostics,
// the description of the operating system, and the Redactor that keeps
// tokens and secrets out of the zip `agent diag` hands to support
// (agent/supportzip).
package diag

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"tradebridge/protocol"
)

// SnapshotName is the name of the diagnostics snapshot file the running
// agent keeps in its data folder, which `agent diag` reads.
const SnapshotName = "diagnostics.json"

// ErrNoSnapshot reports that no snapshot file exists.
var ErrNoSnapshot = errors.New("diag: no diagnostics snapshot")

// WriteSnapshot writes d to path as indented JSON, atomically: into a
// temporary file of the same folder, then renamed over path, so a reader
// never sees half a snapshot.
func WriteSnapshot(path string, d protocol.Diagnostics) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("diag: encoding the snapshot: %w", err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("diag: writing the snapshot: %w", err)
	}
	name := tmp.Name()
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("diag: writing the snapshot: %w", err)
	}
	return nil
}

// ReadSnapshot reads the snapshot at path and returns it with the time the
// file was last written; ErrNoSnapshot when there is none.
func ReadSnapshot(path string) (protocol.Diagnostics, time.Time, error) {
	var d protocol.Diagnostics
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return d, time.Time{}, ErrNoSnapshot
	}
	if err != nil {
		return d, time.Time{}, fmt.Errorf("diag: reading the snapshot: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return d, time.Time{}, fmt.Errorf("diag: reading the snapshot: %w", err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, time.Time{}, fmt.Errorf("diag: the snapshot is not valid JSON: %w", err)
	}
	return d, fi.ModTime(), nil
}

// tokenPattern matches anything that looks like a TradeBridge token
// ("tb_agent_…", "tb_api_…").
var tokenPattern = regexp.MustCompile(`tb_[a-z]+_[A-Za-z0-9_-]{20,}`)

// Redacted replaces what Redactor removes.
const Redacted = "[REDACTED]"

// minSecret is the shortest configured secret Redactor replaces literally:
// shorter ones would turn every log line into noise.
const minSecret = 4

// Redactor removes secrets from text: anything that looks like a token,
// and each configured secret of 4 characters or more literally, with its
// JSON-escaped and base64 forms.
type Redactor struct {
	literals []string // longest first
}

// NewRedactor returns a Redactor of the given secrets (empty ones are
// ignored).
func NewRedactor(secrets ...string) *Redactor {
	seen := make(map[string]bool)
	var lits []string
	add := func(s string) {
		if len(s) >= minSecret && !seen[s] {
			seen[s] = true
			lits = append(lits, s)
		}
	}
	for _, s := range secrets {
		add(s)
		if b, err := json.Marshal(s); err == nil {
			add(string(b[1 : len(b)-1]))
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			if s != "" {
				add(enc.EncodeToString([]byte(s)))
			}
		}
	}
	sort.Slice(lits, func(i, j int) bool { return len(lits[i]) > len(lits[j]) })
	return &Redactor{literals: lits}
}

// Redact returns s without its secrets.
func (r *Redactor) Redact(s string) string {
	for _, lit := range r.literals {
		s = strings.ReplaceAll(s, lit, Redacted)
	}
	if !strings.Contains(s, "tb_") {
		return s // no token shape: spare the pattern
	}
	return tokenPattern.ReplaceAllString(s, Redacted)
}
