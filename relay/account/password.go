package account

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Argon2Params are the argon2id parameters of new password hashes. A
// stored hash keeps its own: changing them changes new hashes only.
type Argon2Params struct {
	// Memory is in KiB. Default 64 MiB (65536).
	Memory uint32
	// Time is the number of passes. Default 3.
	Time uint32
	// Threads is the parallelism. Default 2.
	Threads uint8
}

// DefaultArgon2 are RFC 9106's second recommended parameters.
var DefaultArgon2 = Argon2Params{Memory: 64 * 1024, Time: 3, Threads: 2}

// DefaultMaxHashing is Options.MaxHashing's default: four passwords hashed
// at once, 256 MiB with DefaultArgon2.
const DefaultMaxHashing = 4

// derive runs the key derivation once a place among Options.MaxHashing is
// free.
func (s *Service) derive(password, salt []byte, p Argon2Params, n uint32) []byte {
	s.hashing <- struct{}{}
	defer func() { <-s.hashing }()
	return s.kdf(password, salt, p.Time, p.Memory, p.Threads, n)
}

// The lengths of a hash's salt and key, in bytes.
const (
	saltLen = 16
	keyLen  = 32
)

// Bounds of the parameters Verify accepts from a stored hash, so that a
// corrupt row cannot make a sign-in allocate without limit.
const (
	maxMemory  = 1 << 22 // 4 GiB
	maxTime    = 100
	maxThreads = 64
)

// errMalformedHash reports a stored hash that is not an argon2id PHC
// string this package reads.
var errMalformedHash = errors.New("account: malformed password hash")

// checkPassword reports ErrWeakPassword for a password of fewer than
// MinPassword or more than MaxPassword characters, or not UTF-8.
func checkPassword(password string) error {
	n := utf8.RuneCountInString(password)
	if !utf8.ValidString(password) || n < MinPassword || n > MaxPassword {
		return ErrWeakPassword
	}
	return nil
}

// Hash returns the argon2id PHC string of password, with a fresh random
// salt and the service's parameters (Options.Argon2);
// ErrWeakPassword for a password out of bounds.
func (s *Service) Hash(password string) (string, error) {
	if err := checkPassword(password); err != nil {
		return "", err
	}
	return s.hash(password)
}

// hash hashes any password, checked or not.
func (s *Service) hash(password string) (string, error) {
	p := s.opts.Argon2
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("account: random: %w", err)
	}
	key := s.derive([]byte(password), salt, p, keyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// Verify reports whether password is the one hash (a PHC string from
// Hash) was made of, comparing in constant time. A malformed hash verifies
// nothing.
func (s *Service) Verify(hash, password string) bool {
	p, salt, want, err := parseHash(hash)
	if err != nil {
		return false
	}
	got := s.derive([]byte(password), salt, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// parseHash reads an argon2id PHC string.
func parseHash(hash string) (Argon2Params, []byte, []byte, error) {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return Argon2Params{}, nil, nil, errMalformedHash
	}
	var v int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &v); err != nil || v != argon2.Version {
		return Argon2Params{}, nil, nil, errMalformedHash
	}
	var p Argon2Params
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil ||
		p.Memory < 8 || p.Memory > maxMemory || p.Time < 1 || p.Time > maxTime || p.Threads < 1 || p.Threads > maxThreads {
		return Argon2Params{}, nil, nil, errMalformedHash
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return Argon2Params{}, nil, nil, errMalformedHash
	}
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(key) < 16 || len(key) > 64 {
		return Argon2Params{}, nil, nil, errMalformedHash
	}
	return p, salt, key, nil
}
