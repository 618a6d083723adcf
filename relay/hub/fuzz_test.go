package hub

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"tradebridge/protocol"
)

// FuzzNegotiate offers two Sec-WebSocket-Protocol header lines and checks
// the subprotocol negotiation of the agents' door:
//
//   - splitComma splits as strings.Split on commas, trimming spaces and
//     tabs and dropping empty parts, would;
//   - protocol.ParseSubprotocol accepts only our prefix followed by
//     decimal digits without leading zeros, a positive version whose
//     Subprotocol is the very string it parsed;
//   - negotiate reports an offer exactly when some part is one of ours,
//     and picks the highest version this relay speaks, or 0.
func FuzzNegotiate(f *testing.F) {
	v1 := protocol.Subprotocol(1)
	for _, h := range [][2]string{
		{v1, ""},
		{"tradebridge.tunnel.v2, " + v1, ""},
		{"chat", "\t" + v1 + "\t,"},
		{"tradebridge.tunnel.v0", "tradebridge.tunnel.v01"},
		{"tradebridge.tunnel.v99999999999", "tradebridge.tunnel.v"},
		{"tradebridge.tunnel.v1x,,  ,", "TRADEBRIDGE.TUNNEL.V1"},
		{"tradebridge.tunnel.v-1", "tradebridge.tunnel.v١"},
	} {
		f.Add(h[0], h[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		var want []string
		for _, line := range []string{a, b} {
			parts := splitComma(line)
			var oracle []string
			for _, p := range strings.Split(line, ",") {
				if p = strings.Trim(p, " \t"); p != "" {
					oracle = append(oracle, p)
				}
			}
			if !slices.Equal(parts, oracle) {
				t.Fatalf("splitComma(%q) = %q, want %q", line, parts, oracle)
			}
			want = append(want, parts...)
		}

		best, offered := 0, false
		for _, s := range want {
			v, ok := protocol.ParseSubprotocol(s)
			if !ok {
				continue
			}
			digits := strings.TrimPrefix(s, protocol.SubprotocolPrefix)
			if v <= 0 || digits == s || strings.Trim(digits, "0123456789") != "" ||
				protocol.Subprotocol(v) != s {
				t.Fatalf("ParseSubprotocol(%q) = %d", s, v)
			}
			if back, ok := protocol.ParseSubprotocol(protocol.Subprotocol(v)); !ok || back != v {
				t.Fatalf("ParseSubprotocol(Subprotocol(%d)) = %d, %v", v, back, ok)
			}
			offered = true
			if v >= protocol.MinProtocolVersion && v <= protocol.ProtocolVersion && v > best {
				best = v
			}
		}

		r := &http.Request{Header: http.Header{}}
		r.Header.Add("Sec-WebSocket-Protocol", a)
		r.Header.Add("Sec-WebSocket-Protocol", b)
		if got := websocketSubprotocols(r); !slices.Equal(got, want) {
			t.Fatalf("websocketSubprotocols = %q, want %q", got, want)
		}
		v, o := negotiate(r)
		if v != best || o != offered {
			t.Fatalf("negotiate(%q, %q) = %d, %v; want %d, %v", a, b, v, o, best, offered)
		}
	})
}
