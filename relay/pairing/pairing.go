// Package pairing pairs a PC's agent with a user through a one-time code
// instead of a copied token, and lets an agent give its token back:
//
//	POST   /v1/agent/pair   {"code":"ABCD-EFGH"}  → {"token":"tb_agent_…","userId":"usr_…"}
//	DELETE /v1/agent/token  (Authorization: Bearer tb_agent_…) → 204
//
// A code (Mint) is 8 characters of protocol.PairingCodeAlphabet drawn
// from crypto/rand without bias, shown XXXX-XXXX; it is accepted for TTL
// (10 minutes), once, with or without its dash, in any case, surrounding
// spaces trimmed. The store keeps only its hash (the hex SHA-256 of the
// normalized code), looked up by that hash and compared again in constant
// time. Redeeming a code stores a new agent token for its user in the same
// transaction that deletes the code, so that two exchanges of one code at
// once give one token.
//
// POST /v1/agent/pair takes no token. It charges the relay's per-address
// budget and then its own (Budget: 10 attempts a minute per client
// address; 429 rate_limited with Retry-After, policy "pair"), reads the
// body strictly (one member, code; anything else is refused), and answers
// a wrong, expired or used code, and one not of the codes' form, with the
// one 401 pairing_code_invalid. Every attempt is counted by result
// (relay_agent_pair_attempts_total) and a refused one is logged with the
// client address, never the code; no answer repeats what was sent.
//
// DELETE /v1/agent/token admits like the agents' tunnel (the address's
// budget, then an agent token: 401 unauthorized when missing or no longer
// valid) and revokes that token; the relay stops accepting it within its
// token cache's TTL, and the tunnel re-verification closes a tunnel that
// uses it, as for any revoked token.
package pairing

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"tradebridge/protocol"
	"tradebridge/relay/auth"
	"tradebridge/relay/store"
)

// TTL is how long a code is accepted after it is minted.
const TTL = 10 * time.Minute

// KeepPerUser bounds the codes a user has waiting: minting one more
// forgets the oldest.
const KeepPerUser = 5

// ErrInvalidCode refuses a code that is wrong, expired, already used, not
// of the codes' form, or whose user is disabled; it never says which.
var ErrInvalidCode = errors.New("pairing: the code is wrong, expired or already used")

// Store is what pairing needs of the store; store.Store implements it.
type Store interface {
	PutPairingCode(ctx context.Context, c store.PairingCode, keepPerUser int) error
	RedeemPairingCode(ctx context.Context, hash string, now time.Time, t store.Token) (store.PairingCode, error)
	RevokeToken(ctx context.Context, hash string, at time.Time) error
}

// Code is a minted code as `relay agents pair-code` prints it and the
// dashboard shows it.
type Code struct {
	// Code is the code as shown: XXXX-XXXX.
	Code string `json:"code"`
	// ExpiresAt is when it stops being accepted.
	ExpiresAt time.Time `json:"expiresAt"`
}

// Mint mints a code for the user, valid from now for TTL;
// store.ErrNotFound when there is no such user.
func Mint(ctx context.Context, st Store, userID string, now time.Time) (Code, error) {
	now = now.UTC().Truncate(time.Millisecond)
	for range 3 {
		raw, err := newCode()
		if err != nil {
			return Code{}, err
		}
		c := store.PairingCode{Hash: Hash(raw), UserID: userID, CreatedAt: now, Expires: now.Add(TTL)}
		err = st.PutPairingCode(ctx, c, KeepPerUser)
		if errors.Is(err, store.ErrConflict) {
			continue // the same code is waiting already: draw again
		}
		if err != nil {
			return Code{}, err
		}
		return Code{Code: Format(raw), ExpiresAt: c.Expires}, nil
	}
	return Code{}, errors.New("pairing: could not draw a code that is not in use")
}

// Exchange redeems a code as the caller typed it for a new agent token of
// its user. ErrInvalidCode when the code is refused; another error when
// the store failed.
func Exchange(ctx context.Context, st Store, input string, now time.Time) (protocol.PairResponse, error) {
	code, ok := Normalize(input)
	if !ok {
		return protocol.PairResponse{}, ErrInvalidCode
	}
	hash := Hash(code)
	tok, err := auth.NewToken(auth.KindAgent)
	if err != nil {
		return protocol.PairResponse{}, err
	}
	now = now.UTC().Truncate(time.Millisecond)
	t := store.Token{Hash: auth.Hash(tok), Kind: string(auth.KindAgent), CreatedAt: now}
	c, err := st.RedeemPairingCode(ctx, hash, now, t)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return protocol.PairResponse{}, ErrInvalidCode
	case err != nil:
		return protocol.PairResponse{}, fmt.Errorf("pairing: redeeming a code: %w", err)
	}
	if !equal(c.Hash, hash) {
		// The store found a code by another hash than the one asked
		// for: take nothing from it.
		if err := st.RevokeToken(ctx, t.Hash, now); err != nil {
			return protocol.PairResponse{}, fmt.Errorf("pairing: revoking a token minted for a mismatched code: %w", err)
		}
		return protocol.PairResponse{}, ErrInvalidCode
	}
	return protocol.PairResponse{Token: tok, UserID: c.UserID}, nil
}

// equal compares two hashes in constant time.
func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// newCode draws PairingCodeLen characters of the alphabet from
// crypto/rand, each uniformly: a byte is used only when it is below the
// largest multiple of the alphabet's size that fits a byte.
func newCode() (string, error) {
	const alphabet = protocol.PairingCodeAlphabet
	const limit = 256 - 256%len(alphabet)
	out := make([]byte, 0, protocol.PairingCodeLen)
	var buf [32]byte
	for len(out) < protocol.PairingCodeLen {
		if _, err := rand.Read(buf[:]); err != nil {
			return "", fmt.Errorf("pairing: random: %w", err)
		}
		for _, b := range buf {
			if int(b) < limit && len(out) < protocol.PairingCodeLen {
				out = append(out, alphabet[int(b)%len(alphabet)])
			}
		}
	}
	return string(out), nil
}

// Format shows a normalized code as XXXX-XXXX.
func Format(code string) string {
	if len(code) != protocol.PairingCodeLen {
		return code
	}
	return code[:4] + "-" + code[4:]
}

// Normalize turns a code as typed (surrounding spaces, any case, with or
// without the dash between its halves) into its 8 characters, and
// reports whether it is of the codes' form.
func Normalize(input string) (string, bool) {
	s := strings.ToUpper(strings.TrimSpace(input))
	if len(s) == protocol.PairingCodeLen+1 && s[4] == '-' {
		s = s[:4] + s[5:]
	}
	if len(s) != protocol.PairingCodeLen {
		return "", false
	}
	for i := range len(s) {
		if strings.IndexByte(protocol.PairingCodeAlphabet, s[i]) < 0 {
			return "", false
		}
	}
	return s, true
}

// Hash is the stored form of a normalized code: the hex SHA-256 of the
// code after a prefix naming its use.
func Hash(code string) string {
	sum := sha256.Sum256([]byte("tradebridge pairing code\x00" + code))
	return hex.EncodeToString(sum[:])
}
