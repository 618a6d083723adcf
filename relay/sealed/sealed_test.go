package sealed_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"tradebridge/relay/sealed"
)

// keyLine returns a key file line for id with every key byte b.
func keyLine(id string, b byte) string {
	return id + " " + base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune(b)), sealed.KeySize)))
}

func ring(t *testing.T, lines ...string) *sealed.Keyring {
	t.Helper()
	k, err := sealed.Parse([]byte(strings.Join(lines, "\n")))
	require.NoError(t, err)
	return k
}

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	k := ring(t, keyLine("k1", 1))
	for _, tc := range []struct {
		name       string
		plain, aad []byte
	}{
		{"text", []byte(`{"password":"hunter2"}`), []byte("user-1\x00demo")},
		{"empty plaintext", []byte{}, []byte("aad")},
		{"no aad", []byte("secret"), nil},
		{"binary", []byte{0, 1, 2, 255}, []byte{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := k.Seal(tc.plain, tc.aad)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(s, "v1.k1."), s)
			require.Equal(t, "k1", k.SealedWith(s))
			got, err := k.Open(s, tc.aad)
			require.NoError(t, err)
			require.Equal(t, string(tc.plain), string(got))

			again, err := k.Seal(tc.plain, tc.aad)
			require.NoError(t, err)
			require.NotEqual(t, s, again, "a fresh nonce each time")
		})
	}
	s, err := k.Seal([]byte("hunter2"), nil)
	require.NoError(t, err)
	require.NotContains(t, s, "hunter2")
	require.NotContains(t, s, base64.RawURLEncoding.EncodeToString([]byte("hunter2")))
}

// A value opens only with the aad it was sealed with, unchanged, with a
// key of the ring; each failure has its own error, and no error carries
// the plaintext or the sealed text.
func TestOpenRefusals(t *testing.T) {
	t.Parallel()
	k := ring(t, keyLine("k1", 1))
	s, err := k.Seal([]byte("hunter2"), []byte("user-1\x00demo"))
	require.NoError(t, err)
	payload := s[len("v1.k1."):]
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	other := ring(t, keyLine("k2", 2))
	foreign, err := other.Seal([]byte("hunter2"), []byte("user-1\x00demo"))
	require.NoError(t, err)

	for _, tc := range []struct {
		name   string
		sealed string
		aad    string
		want   error
	}{
		{"wrong aad", s, "user-2\x00demo", sealed.ErrTampered},
		{"no aad", s, "", sealed.ErrTampered},
		{"payload changed", "v1.k1." + flip(payload, 20), "user-1\x00demo", sealed.ErrTampered},
		{"payload's last byte changed", "v1.k1." + flip(payload, len(payload)-2), "user-1\x00demo", sealed.ErrTampered},
		{"payload truncated", s[:len(s)-4], "user-1\x00demo", sealed.ErrTampered},
		{"payload too short", "v1.k1.AAAA", "user-1\x00demo", sealed.ErrTampered},
		{"key id swapped to another known key", "v1.k2." + payload, "user-1\x00demo", sealed.ErrUnknownKey},
		{"unknown key", foreign, "user-1\x00demo", sealed.ErrUnknownKey},
		{"other version", "v2.k1." + payload, "user-1\x00demo", sealed.ErrMalformed},
		{"no version", payload, "user-1\x00demo", sealed.ErrMalformed},
		{"bad key id", "v1.K!.AAAA", "user-1\x00demo", sealed.ErrMalformed},
		{"not base64url", "v1.k1.hunter2+/==", "user-1\x00demo", sealed.ErrMalformed},
		{"empty", "", "", sealed.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := k.Open(tc.sealed, []byte(tc.aad))
			require.ErrorIs(t, err, tc.want)
			require.Nil(t, got)
			require.NotContains(t, err.Error(), "hunter2")
			if len(tc.sealed) > 8 {
				require.NotContains(t, err.Error(), tc.sealed[6:])
			}
		})
	}

	// A key id swapped to one the ring holds still fails: the header is
	// authenticated.
	both := ring(t, keyLine("k1", 1), keyLine("k2", 2))
	_, err = both.Open("v1.k2."+payload, []byte("user-1\x00demo"))
	require.ErrorIs(t, err, sealed.ErrTampered)
}

// Rotation: a new primary seals, the old key still opens what it sealed,
// and a ring without the old key refuses its values.
func TestRotation(t *testing.T) {
	t.Parallel()
	old := ring(t, keyLine("k1", 1))
	before, err := old.Seal([]byte("hunter2"), []byte("a"))
	require.NoError(t, err)

	rotated := ring(t, "# rotated", keyLine("k2", 2), "", keyLine("k1", 1))
	require.Equal(t, "k2", rotated.Primary())
	require.Equal(t, []string{"k2", "k1"}, rotated.IDs())
	after, err := rotated.Seal([]byte("hunter2"), []byte("a"))
	require.NoError(t, err)
	require.Equal(t, "k2", rotated.SealedWith(after))
	require.Equal(t, "k1", rotated.SealedWith(before))
	for _, s := range []string{before, after} {
		got, err := rotated.Open(s, []byte("a"))
		require.NoError(t, err)
		require.Equal(t, "hunter2", string(got))
	}

	retired := ring(t, keyLine("k2", 2))
	_, err = retired.Open(before, []byte("a"))
	require.ErrorIs(t, err, sealed.ErrUnknownKey)
	_, err = old.Open(after, []byte("a"))
	require.ErrorIs(t, err, sealed.ErrUnknownKey)
	require.Empty(t, old.SealedWith("not sealed"))
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	secret := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("s", sealed.KeySize)))
	for _, tc := range []struct {
		name, text, want string
	}{
		{"empty", "", "no key"},
		{"comments only", "# nothing\n\n", "no key"},
		{"one field", "k1\n", "line 1"},
		{"three fields", "# c\nk1 " + secret + " extra\n", "line 2"},
		{"bad id", "Key_1 " + secret, "key id"},
		{"long id", strings.Repeat("k", 33) + " " + secret, "key id"},
		{"short key", "k1 " + base64.StdEncoding.EncodeToString([]byte("short")), "32 bytes"},
		{"long key", "k1 " + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("s", 33))), "32 bytes"},
		{"not base64", "k1 " + strings.Repeat("!", 44), "32 bytes"},
		{"base64url", "k1 " + base64.URLEncoding.EncodeToString([]byte(strings.Repeat("\xff", 32))), "32 bytes"},
		{"repeated id", "k1 " + secret + "\nk1 " + secret, "line 2 repeats"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k, err := sealed.Parse([]byte(tc.text))
			require.ErrorIs(t, err, sealed.ErrMalformed)
			require.ErrorContains(t, err, tc.want)
			require.Nil(t, k)
			require.NotContains(t, err.Error(), secret, "errors never repeat a key")
		})
	}
	k, err := sealed.Parse([]byte("  # indented comment\n\tk-1\t" + secret + "  \r\n"))
	require.NoError(t, err, "blanks around fields and CRLF line ends are fine")
	require.Equal(t, "k-1", k.Primary())
}

func TestNewKeyLineAndGenerate(t *testing.T) {
	t.Parallel()
	a, err := sealed.NewKeyLine("k1")
	require.NoError(t, err)
	b, err := sealed.NewKeyLine("k1")
	require.NoError(t, err)
	require.NotEqual(t, a, b, "fresh keys")
	_, err = sealed.Parse([]byte(a))
	require.NoError(t, err)
	_, err = sealed.NewKeyLine("K 1")
	require.ErrorIs(t, err, sealed.ErrMalformed)

	g, err := sealed.Generate("mem")
	require.NoError(t, err)
	s, err := g.Seal([]byte("x"), nil)
	require.NoError(t, err)
	got, err := g.Open(s, nil)
	require.NoError(t, err)
	require.Equal(t, "x", string(got))
}

// LoadOrCreate creates a missing key file, the user's alone, with one
// key; reads it back the same; refuses a file open to others.
func TestLoadOrCreate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "data", "secret.keys")
	k, err := sealed.LoadOrCreate(path)
	require.NoError(t, err, "the missing directory is created")
	require.Len(t, k.IDs(), 1)
	require.True(t, sealed.ValidKeyID(k.Primary()))
	s, err := k.Seal([]byte("hunter2"), []byte("a"))
	require.NoError(t, err)

	again, err := sealed.LoadOrCreate(path)
	require.NoError(t, err)
	require.Equal(t, k.IDs(), again.IDs())
	got, err := again.Open(s, []byte("a"))
	require.NoError(t, err, "the same key is read back")
	require.Equal(t, "hunter2", string(got))
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")

	if runtime.GOOS == "windows" {
		return
	}
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, sealed.FileMode, fi.Mode().Perm())
	di, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), di.Mode().Perm())

	for _, mode := range []os.FileMode{0o644, 0o640, 0o602} {
		require.NoError(t, os.Chmod(path, mode))
		_, err = sealed.LoadOrCreate(path)
		require.ErrorIs(t, err, sealed.ErrInsecureFile, "%v", mode)
	}
	require.NoError(t, os.Chmod(path, 0o400))
	_, err = sealed.LoadOrCreate(path)
	require.NoError(t, err, "read-only for its owner is fine")
}

// Processes creating the key file at once all read the one key that won.
func TestLoadOrCreateConcurrently(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "secret.keys")
	const n = 8
	rings := make([]*sealed.Keyring, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { rings[i], errs[i] = sealed.LoadOrCreate(path) })
	}
	wg.Wait()
	s, err := rings[0].Seal([]byte("x"), nil)
	require.NoError(t, err)
	for i := range n {
		require.NoError(t, errs[i])
		_, err := rings[i].Open(s, nil)
		require.NoError(t, err, "ring %d holds the same key", i)
	}
}

func TestLoadOrCreateRefusesAMalformedFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "secret.keys")
	require.NoError(t, os.WriteFile(path, []byte("k1 hunter2hunter2\n"), 0o600))
	_, err := sealed.LoadOrCreate(path)
	require.ErrorIs(t, err, sealed.ErrMalformed)
	require.NotContains(t, err.Error(), "hunter2")
	body, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "k1 hunter2hunter2\n", string(body), "an existing file is never rewritten")
}
