package agentlog

import (
	"sync/atomic"

	"tradebridge/agent/diag"
)

// Redacted replaces a token or secret in a log line (diag.Redactor's
// marker: the logs and the support zip say the same).
const Redacted = diag.Redacted

// minSecret is the shortest secret scrubbed literally from log lines:
// shorter ones would blank out ordinary words.
const minSecret = 8

// scrubber removes tokens and the configured secrets from log lines with
// a diag.Redactor, which SetSecrets replaces while lines are written.
type scrubber struct {
	red atomic.Pointer[diag.Redactor]
}

func newScrubber() *scrubber {
	s := new(scrubber)
	s.set(nil)
	return s
}

// set replaces the literal secrets.
func (s *scrubber) set(secrets []string) {
	var long []string
	for _, sec := range secrets {
		if len(sec) >= minSecret {
			long = append(long, sec)
		}
	}
	s.red.Store(diag.NewRedactor(long...))
}

// string scrubs a line.
func (s *scrubber) string(line string) string { return s.red.Load().Redact(line) }

// bytes scrubs a line, returning p itself when it holds nothing to scrub.
func (s *scrubber) bytes(p []byte) []byte {
	line := string(p)
	if out := s.string(line); out != line {
		return []byte(out)
	}
	return p
}
