// Package sealed encrypts the secrets the relay keeps at rest: the broker
// logins of relay/broker's links, sealed before they reach relay/store. It
// is AES-256-GCM under a key ring read from the relay's key file, so that
// a copy of the database alone reveals no password, and keys can be
// rotated: the ring's first key seals, every key of the ring opens.
//
// A sealed value is text, "v1.<key id>.<base64url(nonce || ciphertext)>",
// authenticated together with its header and the caller's additional data
// (aad), which binds a value to its place (a link's user and environment):
// a value copied to another place does not open.
package sealed

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// Errors of the package. They never include key material, plaintext or
// the sealed text.
var (
	// ErrUnknownKey reports a value sealed with a key the ring does not
	// hold.
	ErrUnknownKey = errors.New("sealed: the value was sealed with a key that is not in the key file")
	// ErrMalformed reports text that is not a sealed value, or a key file
	// that is not in the key file format.
	ErrMalformed = errors.New("sealed: malformed")
	// ErrTampered reports a value that does not authenticate: changed,
	// truncated, or opened with other additional data than it was sealed
	// with.
	ErrTampered = errors.New("sealed: the value does not authenticate (changed, or sealed for another place)")
	// ErrInsecureFile reports a key file that users other than its owner
	// may read or write.
	ErrInsecureFile = errors.New("sealed: the key file is open to other users; make it the relay user's alone (chmod 600) and consider rotating its keys")
)

// FileMode is the mode of a key file LoadOrCreate creates.
const FileMode os.FileMode = 0o600

// KeySize is the size of a key: AES-256.
const KeySize = 32

// version is the prefix of every sealed value of this format.
const version = "v1"

var idPattern = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)

// ValidKeyID reports whether id can name a key: 1 to 32 of a-z, 0-9 and
// '-'.
func ValidKeyID(id string) bool { return idPattern.MatchString(id) }

// Keyring holds AES-256-GCM keys by id. The first key is the primary: it
// seals; every key opens. A Keyring never changes once built and is safe
// for concurrent use.
type Keyring struct {
	primary string
	ids     []string
	aeads   map[string]cipher.AEAD
}

// newKeyring builds a ring from the keys in order; the first is the
// primary.
func newKeyring(ids []string, keys [][]byte) (*Keyring, error) {
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: the key file holds no key", ErrMalformed)
	}
	k := &Keyring{primary: ids[0], ids: ids, aeads: make(map[string]cipher.AEAD, len(ids))}
	for i, id := range ids {
		block, err := aes.NewCipher(keys[i])
		if err != nil {
			return nil, fmt.Errorf("%w: a key is not %d bytes", ErrMalformed, KeySize)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		k.aeads[id] = aead
	}
	return k, nil
}

// Parse reads a key file: one key a line, "<id> <base64 of 32 bytes>"
// (standard base64 with padding; id as ValidKeyID), the primary first.
// Lines starting with '#' and blank lines are skipped. Errors name the
// line, never its content.
func Parse(text []byte) (*Keyring, error) {
	var ids []string
	var keys [][]byte
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("%w: key file line %d is not \"<id> <base64 key>\"", ErrMalformed, n)
		}
		id := fields[0]
		if !ValidKeyID(id) {
			return nil, fmt.Errorf("%w: key file line %d: a key id is 1 to 32 of a-z, 0-9 and '-'", ErrMalformed, n)
		}
		if seen[id] {
			return nil, fmt.Errorf("%w: key file line %d repeats a key id", ErrMalformed, n)
		}
		key, err := base64.StdEncoding.DecodeString(fields[1])
		if err != nil || len(key) != KeySize {
			return nil, fmt.Errorf("%w: key file line %d: a key is the standard base64 of %d bytes", ErrMalformed, n, KeySize)
		}
		seen[id] = true
		ids = append(ids, id)
		keys = append(keys, key)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: key file: %v", ErrMalformed, err)
	}
	return newKeyring(ids, keys)
}

// NewKeyLine returns a key file line with a fresh random key named id,
// without a newline.
func NewKeyLine(id string) (string, error) {
	if !ValidKeyID(id) {
		return "", fmt.Errorf("%w: a key id is 1 to 32 of a-z, 0-9 and '-'", ErrMalformed)
	}
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("sealed: generate a key: %w", err)
	}
	return id + " " + base64.StdEncoding.EncodeToString(key), nil
}

// Generate returns a ring of one fresh key named id, held in memory only
// (tests, tools).
func Generate(id string) (*Keyring, error) {
	line, err := NewKeyLine(id)
	if err != nil {
		return nil, err
	}
	return Parse([]byte(line))
}

// LoadOrCreate reads the key file at path, or creates it (mode FileMode,
// its directory 0700 when missing) with one fresh key when there is none.
// Two processes creating it at once end up with the same file. On systems
// with POSIX modes a file that others may read or write is refused with
// ErrInsecureFile.
func LoadOrCreate(path string) (*Keyring, error) {
	text, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := create(path); err != nil {
			return nil, err
		}
		text, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("sealed: read the key file: %w", err)
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("sealed: %w", err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			return nil, ErrInsecureFile
		}
	}
	return Parse(text)
}

// create writes a key file with one fresh key at path, unless one
// appears there first: the key is written and synced to a temporary file
// that is then linked to path, so no reader ever sees half a file.
func create(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("sealed: create the key file's directory: %w", err)
	}
	line, err := NewKeyLine("key-" + time.Now().UTC().Format("2006-01-02"))
	if err != nil {
		return err
	}
	body := "# tradebridge relay secret keys: \"<id> <base64 of 32 bytes>\", the first seals, all open.\n" +
		"# Keep this file secret and backed up: without it the broker links in the database cannot be opened.\n" +
		line + "\n"
	tmp, err := os.CreateTemp(dir, ".secret-keys-*")
	if err != nil {
		return fmt.Errorf("sealed: create the key file: %w", err)
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the link, or a leftover to clean
	if err := tmp.Chmod(FileMode); err != nil && runtime.GOOS != "windows" {
		tmp.Close()
		return fmt.Errorf("sealed: create the key file: %w", err)
	}
	if _, err := tmp.WriteString(body); err != nil {
		tmp.Close()
		return fmt.Errorf("sealed: write the key file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sealed: write the key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("sealed: write the key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("sealed: create the key file: %w", err)
	}
	if d, err := os.Open(dir); err == nil { // make the new name durable
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Primary returns the id of the key that seals.
func (k *Keyring) Primary() string { return k.primary }

// IDs returns the ids of the ring's keys, the primary first.
func (k *Keyring) IDs() []string { return append([]string(nil), k.ids...) }

// header is the sealed value's prefix up to its payload, authenticated
// with it.
func header(id string) string { return version + "." + id + "." }

// Seal encrypts plaintext with the primary key, authenticating aad with
// it, and returns the sealed text.
func (k *Keyring) Seal(plaintext, aad []byte) (string, error) {
	aead := k.aeads[k.primary]
	h := header(k.primary)
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("sealed: generate a nonce: %w", err)
	}
	out := aead.Seal(nonce, nonce, plaintext, append([]byte(h), aad...))
	return h + base64.RawURLEncoding.EncodeToString(out), nil
}

// split returns a sealed value's key id and payload.
func split(s string) (id string, payload []byte, err error) {
	parts := strings.SplitN(s, ".", 3)
	if len(parts) != 3 || parts[0] != version || !ValidKeyID(parts[1]) {
		return "", nil, fmt.Errorf("%w: not a sealed value", ErrMalformed)
	}
	payload, err = base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "", nil, fmt.Errorf("%w: not a sealed value", ErrMalformed)
	}
	return parts[1], payload, nil
}

// Open decrypts a value of Seal with the key it names, checking it was
// sealed with the same aad. ErrMalformed, ErrUnknownKey, ErrTampered.
func (k *Keyring) Open(sealed string, aad []byte) ([]byte, error) {
	id, payload, err := split(sealed)
	if err != nil {
		return nil, err
	}
	aead, ok := k.aeads[id]
	if !ok {
		return nil, ErrUnknownKey
	}
	if len(payload) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrTampered
	}
	n := aead.NonceSize()
	plain, err := aead.Open(nil, payload[:n], payload[n:], append([]byte(header(id)), aad...))
	if err != nil {
		return nil, ErrTampered
	}
	return plain, nil
}

// SealedWith returns the id of the key a sealed value names, or "" when
// the text is not a sealed value.
func (k *Keyring) SealedWith(sealed string) string {
	parts := strings.SplitN(sealed, ".", 3)
	if len(parts) != 3 || parts[0] != version || !ValidKeyID(parts[1]) {
		return ""
	}
	return parts[1]
}
