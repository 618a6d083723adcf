package alertcmd

import (
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics, that Redact never leaves a
// parsed key in the text, and that a parsed alert's Calls never panics
// nor fails.
func FuzzParse(f *testing.F) {
	for _, c := range alertCases {
		f.Add([]byte(c.body), c.contentType)
	}
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		a, err := Parse(body, contentType)
		red := Redact(body, contentType)
		if a.Key != "" {
			if b, _ := Parse([]byte(red), contentType); b.Key != "" {
				t.Fatalf("the redacted text still has a key")
			}
			// A key long enough not to occur by chance, written once.
			if len(a.Key) >= 8 && strings.Count(string(body), a.Key) == 1 && strings.Contains(red, a.Key) {
				t.Fatalf("Redact left the key in %q", red)
			}
		}
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %T", err)
			}
			return
		}
		if _, err := a.Calls(); err != nil {
			t.Fatalf("Calls of a parsed alert: %v", err)
		}
	})
}
