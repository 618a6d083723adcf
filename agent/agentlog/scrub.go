package agentlog

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"sync/atomic"
)

// tokenPattern matches the relay's tokens (tb_agent_…, tb_api_…).
var tokenPattern = regexp.MustCompile(`tb_[a-z]+_[A-Za-z0-9_-]{20,}`)

// Redacted replaces a token or secret in a log line.
const Redacted = "[redacted]"

// minSecret is the shortest secret scrubbed literally.
const minSecret = 8

// scrubber removes tokens and the configured secrets from log lines.
type scrubber struct {
	secrets atomic.Pointer[[]string]
}

// set replaces the literal secrets, adding their JSON-escaped forms.
func (s *scrubber) set(secrets []string) {
	var list []string
	for _, sec := range secrets {
		if len(sec) < minSecret {
			continue
		}
		list = append(list, sec)
		if b, err := json.Marshal(sec); err == nil {
			if esc := string(b[1 : len(b)-1]); esc != sec {
				list = append(list, esc)
			}
		}
	}
	s.secrets.Store(&list)
}

// string scrubs a line.
func (s *scrubber) string(line string) string {
	if strings.Contains(line, "tb_") {
		line = tokenPattern.ReplaceAllString(line, Redacted)
	}
	if list := s.secrets.Load(); list != nil {
		for _, sec := range *list {
			line = strings.ReplaceAll(line, sec, Redacted)
		}
	}
	return line
}

// bytes scrubs a line, returning p itself when it holds nothing to scrub.
func (s *scrubber) bytes(p []byte) []byte {
	dirty := bytes.Contains(p, []byte("tb_"))
	if list := s.secrets.Load(); !dirty && list != nil {
		for _, sec := range *list {
			if bytes.Contains(p, []byte(sec)) {
				dirty = true
				break
			}
		}
	}
	if !dirty {
		return p
	}
	return []byte(s.string(string(p)))
}
