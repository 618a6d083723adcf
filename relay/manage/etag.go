package manage

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// ETags and ids of management resources.
//
// A resource's ETag is its store version, quoted: "3". It is strong: it
// changes with every stored change. A singleton never written has version
// 0 and ETag "0".

// etagOf returns the ETag of a resource at version.
func etagOf(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

// ifMatch evaluates the request's If-Match header (RFC 9110 13.1.1)
// against a resource at version that exists or not: absent, it holds;
// "*" holds for an existing resource; otherwise one of its comma-separated
// entity tags must strongly equal the resource's. A weak tag (W/) never
// matches.
func ifMatch(h http.Header, version int64, exists bool) bool {
	values := h.Values("If-Match")
	if len(values) == 0 {
		return true
	}
	want := etagOf(version)
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			tag := strings.TrimSpace(part)
			switch {
			case tag == "*":
				if exists {
					return true
				}
			case exists && tag == want:
				return true
			}
		}
	}
	return false
}

// preconditionFailed is the 412 answered when If-Match does not hold; it
// carries the resource's current ETag (header and meta.etag).
func preconditionFailed(version int64) *httpapi.Error {
	return &httpapi.Error{Status: http.StatusPreconditionFailed, Code: errcode.PreconditionFailed,
		Detail: "If-Match does not match the resource's current ETag; read it and retry", ETag: etagOf(version)}
}

// IDPattern is the form of a management resource's id: three letters
// naming its kind, an underscore and 20 hexadecimal digits
// ("cop_0123456789abcdef0123").
const IDPattern = `^[a-z]{3}_[0-9a-f]{20}$`

var idRE = regexp.MustCompile(IDPattern)

// validID reports whether id has the form of IDPattern.
func validID(id string) bool { return len(id) == 24 && idRE.MatchString(id) }

// idPrefixes are the three letters of each kind's ids.
var idPrefixes = map[string]string{
	"copier":              "cop",
	"monitor":             "mon",
	"account-group":       "grp",
	"atm-template":        "atm",
	"controls":            "ctl",
	"news-lockout":        "nws",
	"connection-settings": "cns",
	"alert":               "alr",
}

// prefixOf returns the id prefix of the kind: its letters from idPrefixes,
// else the first three letters of its name.
func prefixOf(kind string) string {
	if p, ok := idPrefixes[kind]; ok {
		return p
	}
	p := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r
		}
		return -1
	}, kind)
	return (p + "xxx")[:3]
}

// newID returns a fresh random id of the kind (crypto/rand, 80 bits).
func newID(kind string) string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return prefixOf(kind) + "_" + hex.EncodeToString(b[:])
}

// singletonID is the id of a user's singleton resource of the kind: the
// same before and after its first write, derived from the user and kind
// so that it reveals nothing else.
func singletonID(userID, kind string) string {
	sum := sha256.Sum256([]byte("tradebridge/manage/singleton\x00" + userID + "\x00" + kind))
	return prefixOf(kind) + "_" + hex.EncodeToString(sum[:10])
}
