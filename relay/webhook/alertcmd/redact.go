package alertcmd

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// redactText blanks the value of every segment that names the key: the
// text parser's own reading (the segment's field name is "key"), and, so
// that a body the parser refuses leaks nothing either, any "key" written
// as a word and followed by '=' or ':' (quoted or not, as in broken JSON)
// is blanked to the end of its segment.
func redactText(body string) string {
	var b strings.Builder
	b.Grow(len(body))
	for len(body) > 0 {
		i := strings.IndexFunc(body, isSep)
		seg, sep := body, ""
		if i >= 0 {
			seg, sep, body = body[:i], body[i:i+1], body[i+1:]
		} else {
			body = ""
		}
		b.WriteString(redactSegment(seg))
		b.WriteString(sep)
	}
	return b.String()
}

// redactSegment cuts seg after the first "key=" or "key:" whose "key" is
// not part of a longer word.
func redactSegment(seg string) string {
	lower := lowerASCII(seg) // byte for byte: indexes hold in seg
	for from := 0; ; {
		j := strings.Index(lower[from:], "key")
		if j < 0 {
			return seg
		}
		j += from
		from = j + 3
		if j > 0 && isWordByte(lower[j-1]) {
			continue
		}
		k := j + 3
		for k < len(lower) {
			r, n := utf8.DecodeRuneInString(lower[k:])
			if !unicode.IsSpace(r) && r != '"' && r != '\'' {
				break
			}
			k += n
		}
		if k < len(lower) && (lower[k] == '=' || lower[k] == ':') {
			return seg[:k+1]
		}
	}
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// redactJSON replaces the value of every member named key (in any case,
// at any depth, in every value of the body) with "". It reports false
// when the body is not JSON through to its end.
func redactJSON(body []byte) (string, bool) {
	type span struct{ from, to int }
	var spans []span
	dec := json.NewDecoder(bytes.NewReader(body))
	var stack []frame
	pendingKey := false
	for {
		before := int(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF && len(stack) == 0 {
				break
			}
			return "", false
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].object && stack[top].name {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:top]
				markValueDone(stack)
				continue
			}
			name, _ := tok.(string)
			pendingKey = strings.EqualFold(strings.TrimSpace(name), "key")
			stack[top].name = false
			continue
		}
		// tok is a value (or the end of an array).
		start := valueStart(body, before)
		isKey := pendingKey
		pendingKey = false
		switch d, _ := tok.(json.Delim); d {
		case '{', '[':
			if isKey {
				if err := skipNested(dec); err != nil {
					return "", false
				}
				spans = append(spans, span{start, int(dec.InputOffset())})
				markValueDone(stack)
				continue
			}
			stack = append(stack, frame{object: d == '{', name: d == '{'})
		case ']':
			stack = stack[:top]
			markValueDone(stack)
		default:
			if isKey {
				spans = append(spans, span{start, int(dec.InputOffset())})
			}
			markValueDone(stack)
		}
	}
	var b strings.Builder
	last := 0
	for _, s := range spans {
		b.Write(body[last:s.from])
		b.WriteString(`""`)
		last = s.to
	}
	b.Write(body[last:])
	return b.String(), true
}

// frame is an open container of a JSON body: whether it is an object,
// and whether its next token is a member name.
type frame struct{ object, name bool }

// markValueDone notes that a value of the innermost container was read:
// an object's next token is a member name.
func markValueDone(stack []frame) {
	if n := len(stack); n > 0 && stack[n-1].object {
		stack[n-1].name = true
	}
}

// valueStart is where the value that follows offset begins: past white
// space, ':' and ','.
func valueStart(body []byte, offset int) int {
	for offset < len(body) {
		switch body[offset] {
		case ' ', '\t', '\r', '\n', ':', ',':
			offset++
		default:
			return offset
		}
	}
	return offset
}

// lowerASCII lower-cases ASCII letters only, keeping every byte's place.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
