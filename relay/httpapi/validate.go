package httpapi

import (
	"errors"
	"strconv"
	"sync"
	"unicode/utf8"
)

// DefaultMaxDepth is the nesting limit of ReadJSON, and of Validate when
// given a maxDepth below 1.
const DefaultMaxDepth = 32

// Sentinels matched with errors.Is against the errors of Validate and the
// causes of ReadJSON's *Error. Every *SyntaxError matches ErrInvalidJSON;
// ErrDuplicateKey and ErrTooDeep additionally single out the two refusals
// that go beyond the RFC 8259 grammar.
var (
	ErrInvalidJSON  = errors.New("invalid JSON")
	ErrDuplicateKey = errors.New("duplicate object key")
	ErrTooDeep      = errors.New("nesting too deep")
)

// SyntaxError describes why Validate refused a document. Its text is fixed
// and never quotes the document, so it is safe to log and to show.
type SyntaxError struct {
	// Offset is the byte offset in the document where the problem was found.
	Offset int64
	// Reason is a fixed description such as "unexpected end of input".
	Reason string

	kind error // ErrDuplicateKey, ErrTooDeep or nil
}

func (e *SyntaxError) Error() string {
	return "httpapi: invalid JSON at byte " + strconv.FormatInt(e.Offset, 10) + ": " + e.Reason
}

// Is reports whether target is ErrInvalidJSON or the specific sentinel of
// this error.
func (e *SyntaxError) Is(target error) bool {
	return target == ErrInvalidJSON || (e.kind != nil && target == e.kind)
}

// Reasons of SyntaxError.
const (
	reasonEnd       = "unexpected end of input"
	reasonChar      = "unexpected character"
	reasonTrailing  = "data after the top-level value"
	reasonUTF8      = "invalid UTF-8"
	reasonControl   = "unescaped control character in string"
	reasonEscape    = "invalid escape in string"
	reasonSurrogate = "invalid or unpaired surrogate escape in string"
	reasonNumber    = "invalid number"
	reasonNaN       = "NaN and Infinity are not JSON numbers"
	reasonDuplicate = "duplicate object key"
	reasonDepth     = "nesting too deep"
)

// Validate reports whether data is exactly one JSON value per RFC 8259,
// surrounded by optional whitespace, with these further rules the service
// imposes:
//
//   - strings, keys included, must be valid UTF-8, and \u escapes must not
//     leave a surrogate unpaired;
//   - no object may hold two keys that are equal after unescaping, at any
//     depth;
//   - arrays and objects may nest at most maxDepth deep (DefaultMaxDepth
//     when maxDepth < 1).
//
// Any top-level value is accepted; ReadJSON additionally requires an object.
// The error is nil or a *SyntaxError, which matches ErrInvalidJSON with
// errors.Is. Validate is a single pass over data that does not allocate for
// typical documents; it never modifies or retains data.
func Validate(data []byte, maxDepth int) error {
	if maxDepth < 1 {
		maxDepth = DefaultMaxDepth
	}
	v := validatorPool.Get().(*validator)
	err := v.validate(data, maxDepth)
	v.release()
	return err
}

// linearKeys is the number of keys an object may hold before duplicate
// detection switches from comparing against every earlier key to a set.
const linearKeys = 16

// keyRef locates a key's unescaped bytes: in the document when the key has
// no escapes, else in the validator's arena.
type keyRef struct {
	off, n  int
	inArena bool
}

// frame is one open array or object.
type frame struct {
	object bool
	keys   int                 // index in validator.keys of the object's first key
	arena  int                 // length of validator.arena when the object opened
	set    map[string]struct{} // the object's keys once there are more than linearKeys
}

type validator struct {
	data  []byte
	stack []frame
	keys  []keyRef
	arena []byte
}

var validatorPool = sync.Pool{New: func() any { return new(validator) }}

// release forgets the document and returns v to the pool, unless it grew
// too large to be worth keeping.
func (v *validator) release() {
	v.data = nil
	for i := range v.stack {
		v.stack[i].set = nil
	}
	if cap(v.stack) > 1024 || cap(v.keys) > 4096 || cap(v.arena) > 64<<10 {
		return
	}
	v.stack, v.keys, v.arena = v.stack[:0], v.keys[:0], v.arena[:0]
	validatorPool.Put(v)
}

func fail(off int, reason string) *SyntaxError {
	return &SyntaxError{Offset: int64(off), Reason: reason}
}

// States of the scanner loop.
const (
	wantValue      = iota // a value must start at i
	wantKey               // a key (and a colon) must start at i
	wantAfterValue        // a value ended before i
)

func (v *validator) validate(data []byte, maxDepth int) error {
	v.data = data
	n := len(data)
	i := skipSpace(data, 0)
	state := wantValue
	for {
		switch state {
		case wantValue:
			if i >= n {
				return fail(i, reasonEnd)
			}
			switch c := data[i]; {
			case c == '{' || c == '[':
				if len(v.stack) >= maxDepth {
					return &SyntaxError{Offset: int64(i), Reason: reasonDepth, kind: ErrTooDeep}
				}
				v.stack = append(v.stack, frame{object: c == '{', keys: len(v.keys), arena: len(v.arena)})
				i = skipSpace(data, i+1)
				if i < n && data[i] == c+2 { // '}' is '{'+2 and ']' is '['+2
					i++
					v.pop()
					state = wantAfterValue
				} else if c == '{' {
					state = wantKey
				}
			case c == '"':
				end, _, err := scanString(data, i)
				if err != nil {
					return err
				}
				i = end
				state = wantAfterValue
			case c == '-' || isDigit(c):
				end, err := scanNumber(data, i)
				if err != nil {
					return err
				}
				i = end
				state = wantAfterValue
			case c == 't':
				if i, state = literal(data, i, "true"), wantAfterValue; i < 0 {
					return fail(-i-1, reasonChar)
				}
			case c == 'f':
				if i, state = literal(data, i, "false"), wantAfterValue; i < 0 {
					return fail(-i-1, reasonChar)
				}
			case c == 'n':
				if i, state = literal(data, i, "null"), wantAfterValue; i < 0 {
					return fail(-i-1, reasonChar)
				}
			case c == 'N' || c == 'I':
				return fail(i, reasonNaN)
			default:
				return fail(i, reasonChar)
			}

		case wantKey:
			if i >= n {
				return fail(i, reasonEnd)
			}
			if data[i] != '"' {
				return fail(i, reasonChar)
			}
			end, escaped, err := scanString(data, i)
			if err != nil {
				return err
			}
			if err := v.addKey(i, end, escaped); err != nil {
				return err
			}
			i = skipSpace(data, end)
			if i >= n {
				return fail(i, reasonEnd)
			}
			if data[i] != ':' {
				return fail(i, reasonChar)
			}
			i = skipSpace(data, i+1)
			state = wantValue

		case wantAfterValue:
			i = skipSpace(data, i)
			if len(v.stack) == 0 {
				if i != n {
					return fail(i, reasonTrailing)
				}
				return nil
			}
			if i >= n {
				return fail(i, reasonEnd)
			}
			top := &v.stack[len(v.stack)-1]
			switch c := data[i]; {
			case c == ',':
				i = skipSpace(data, i+1)
				if top.object {
					state = wantKey
				} else {
					state = wantValue
				}
			case top.object && c == '}', !top.object && c == ']':
				i++
				v.pop()
			default:
				return fail(i, reasonChar)
			}
		}
	}
}

// pop closes the innermost container, forgetting its keys.
func (v *validator) pop() {
	f := &v.stack[len(v.stack)-1]
	if f.object {
		v.keys = v.keys[:f.keys]
		v.arena = v.arena[:f.arena]
		f.set = nil
	}
	v.stack = v.stack[:len(v.stack)-1]
}

// addKey records the key whose quoted form is data[start:end] in the
// innermost object and refuses it if the object already holds an equal key.
func (v *validator) addKey(start, end int, escaped bool) error {
	f := &v.stack[len(v.stack)-1]
	var k keyRef
	if escaped {
		k = keyRef{off: len(v.arena), inArena: true}
		v.arena = appendUnescaped(v.arena, v.data[start+1:end-1])
		k.n = len(v.arena) - k.off
	} else {
		k = keyRef{off: start + 1, n: end - start - 2}
	}
	b := v.keyBytes(k)
	dup := func() error {
		return &SyntaxError{Offset: int64(start), Reason: reasonDuplicate, kind: ErrDuplicateKey}
	}
	switch held := len(v.keys) - f.keys; {
	case held == 0:
	case f.set != nil:
		if _, ok := f.set[string(b)]; ok {
			return dup()
		}
		f.set[string(b)] = struct{}{}
		return nil
	case held < linearKeys:
		for _, o := range v.keys[f.keys:] {
			if string(v.keyBytes(o)) == string(b) {
				return dup()
			}
		}
	default:
		f.set = make(map[string]struct{}, 2*linearKeys)
		for _, o := range v.keys[f.keys:] {
			f.set[string(v.keyBytes(o))] = struct{}{}
		}
		if _, ok := f.set[string(b)]; ok {
			return dup()
		}
		f.set[string(b)] = struct{}{}
		return nil
	}
	v.keys = append(v.keys, k)
	return nil
}

func (v *validator) keyBytes(k keyRef) []byte {
	if k.inArena {
		return v.arena[k.off : k.off+k.n]
	}
	return v.data[k.off : k.off+k.n]
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

// literal matches word at data[i:] and returns the offset after it, or
// -(offset of the first wrong byte)-1.
func literal(data []byte, i int, word string) int {
	for j := 0; j < len(word); j++ {
		if i+j >= len(data) || data[i+j] != word[j] {
			return -(i + j) - 1
		}
	}
	return i + len(word)
}

// scanNumber checks the number starting at data[i] against the RFC 8259
// grammar, -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, and returns the
// offset after it.
func scanNumber(data []byte, i int) (int, error) {
	n := len(data)
	if data[i] == '-' {
		i++
		if i < n && data[i] == 'I' {
			return 0, fail(i, reasonNaN)
		}
	}
	switch {
	case i >= n:
		return 0, fail(i, reasonEnd)
	case data[i] == '0':
		i++
	case isDigit(data[i]):
		for i < n && isDigit(data[i]) {
			i++
		}
	default:
		return 0, fail(i, reasonNumber)
	}
	if i < n && data[i] == '.' {
		i++
		if i >= n || !isDigit(data[i]) {
			return 0, fail(i, reasonNumber)
		}
		for i < n && isDigit(data[i]) {
			i++
		}
	}
	if i < n && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < n && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= n || !isDigit(data[i]) {
			return 0, fail(i, reasonNumber)
		}
		for i < n && isDigit(data[i]) {
			i++
		}
	}
	if i < n && isDigit(data[i]) { // a leading zero followed by digits
		return 0, fail(i, reasonNumber)
	}
	return i, nil
}

// scanString checks the string whose opening quote is data[i] and returns
// the offset after its closing quote and whether it holds escapes.
func scanString(data []byte, i int) (end int, escaped bool, err error) {
	n := len(data)
	i++
	for i < n {
		c := data[i]
		switch {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i, err = scanEscape(data, i); err != nil {
				return 0, false, err
			}
		case c < 0x20:
			return 0, false, fail(i, reasonControl)
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, false, fail(i, reasonUTF8)
			}
			i += size
		}
	}
	return 0, false, fail(i, reasonEnd)
}

// scanEscape checks the escape whose backslash is data[i] and returns the
// offset after it. A \u escape of a high surrogate must be followed at once
// by a \u escape of a low surrogate; a low surrogate may not stand alone.
func scanEscape(data []byte, i int) (int, error) {
	if i+1 >= len(data) {
		return 0, fail(i+1, reasonEnd)
	}
	switch data[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2, nil
	case 'u':
	default:
		return 0, fail(i, reasonEscape)
	}
	r, err := hex4(data, i+2)
	if err != nil {
		return 0, err
	}
	switch {
	case r < 0xD800 || r > 0xDFFF:
		return i + 6, nil
	case r >= 0xDC00:
		return 0, fail(i, reasonSurrogate)
	}
	if i+7 >= len(data) || data[i+6] != '\\' || data[i+7] != 'u' {
		return 0, fail(i, reasonSurrogate)
	}
	lo, err := hex4(data, i+8)
	if err != nil {
		return 0, err
	}
	if lo < 0xDC00 || lo > 0xDFFF {
		return 0, fail(i, reasonSurrogate)
	}
	return i + 12, nil
}

// hex4 decodes the four hex digits at data[i:].
func hex4(data []byte, i int) (rune, error) {
	var r rune
	for j := i; j < i+4; j++ {
		if j >= len(data) {
			return 0, fail(j, reasonEnd)
		}
		c := data[j]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, fail(j, reasonEscape)
		}
		r = r<<4 | rune(c)
	}
	return r, nil
}

// appendUnescaped appends the unescaped form of s, the contents of a string
// that scanString accepted, to dst.
func appendUnescaped(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch s[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, _ := hex4(s, i+2)
			if r >= 0xD800 && r < 0xDC00 {
				lo, _ := hex4(s, i+8)
				r = (r-0xD800)<<10 | (lo - 0xDC00) + 0x10000
				i += 6
			}
			dst = utf8.AppendRune(dst, r)
			i += 6
			continue
		default: // '"', '\\', '/'
			dst = append(dst, s[i+1])
		}
		i += 2
	}
	return dst
}
