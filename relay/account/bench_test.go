package account

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkSignIn measures what a sign-in costs the relay at the
// production parameters (DefaultArgon2: one argon2id verify of 64 MiB, 3
// passes), for a right password and for an unknown email, which verifies
// against the dummy hash: the two should cost the same.
func BenchmarkSignIn(b *testing.B) {
	for _, c := range []struct{ name, email string }{{"known", "bench@example.com"}, {"unknown", "nobody@example.com"}} {
		b.Run(c.name, func(b *testing.B) {
			r := newRig(b, func(o *Options) { o.Argon2 = Argon2Params{} })
			r.user(b, "bench@example.com", goodPassword)
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				// A fresh address each time keeps the per-address budget out
				// of the measure; the per-account one is refilled by the clock.
				r.clock.Advance(time.Minute)
				_, err := r.s.SignIn(ctx, c.email, goodPassword, fmt.Sprint("192.0.2.", i%250))
				if c.email == "bench@example.com" {
					require.NoError(b, err)
				}
			}
		})
	}
}
