package protocol

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// instrumentRE is InstrumentPattern compiled.
var instrumentRE = regexp.MustCompile(InstrumentPattern)

// The parsers that read instrument names before the shared grammar, kept
// as oracles: the relay stream's contract and month-code expressions
// (relay/stream/resolve.go) and the form check of the relay's front doors
// (relay/tradeapi/params.go and relay/stream/frames.go, still in use).
var (
	oldContractRE  = regexp.MustCompile(`^([A-Za-z0-9]{1,6}) (0[1-9]|1[0-2])-([0-9]{2})$`)
	oldMonthCodeRE = regexp.MustCompile(`^([A-Z0-9]{1,6}?)([FGHJKMNQUVXZ])([0-9]{1,2})$`)
	frontDoorRE    = regexp.MustCompile(`^[A-Za-z0-9]{1,6}( (0[1-9]|1[0-2])-[0-9]{2})?$`)
)

// FuzzParseInstrument checks the instrument grammar:
//
//   - a refusal is ErrMalformedInstrument and the zero Instrument;
//   - an accepted name is at most MaxInstrumentLen bytes, String gives it
//     back upper-cased, and that parses to the same Instrument;
//   - the verdict and the result do not depend on ASCII case;
//   - InstrumentPattern matches exactly the accepted names;
//   - on normalized names, the contract and month-code forms are those the
//     relay stream's expressions found before the grammar;
//   - every name the relay's front doors accept is accepted.
func FuzzParseInstrument(f *testing.F) {
	for _, s := range []string{
		"ES 12-26", "es 03-27", "ESZ26", "ESZ6", "esh7", "ES", "M2K", "SR3Z6", "ABCDEFZ26", "ABCDEF 12-26",
		"ESA26", "ES123", "Z6", "", " ES", "ES  12-26", "ES 13-26", "ES 00-26", "ES 12-2026", "ÉS", "ES\x00",
		"ESZ2６", "ABCDEFG", "ES-Z6", "ES 1-26", "ES 12/26", "ſSZ6",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		in, err := ParseInstrument(s)
		if err != nil {
			if !errors.Is(err, ErrMalformedInstrument) || in != (Instrument{}) {
				t.Fatalf("ParseInstrument(%q) = %+v, %v", s, in, err)
			}
		} else {
			if len(s) > MaxInstrumentLen || !ValidRoot(in.Root) || in.Root != strings.ToUpper(in.Root) {
				t.Fatalf("ParseInstrument(%q) = %+v", s, in)
			}
			switch {
			case in.Form == InstrumentRoot && (in.Month != 0 || in.Year != 0 || in.YearDigits != 0),
				in.Form == InstrumentContract && in.YearDigits != 2,
				in.Form == InstrumentMonthCode && (in.YearDigits < 1 || in.YearDigits > 2),
				in.Form != InstrumentRoot && (in.Month < 1 || in.Month > 12 || in.Year < 0 || in.Year > 99 || in.YearDigits == 1 && in.Year > 9):
				t.Fatalf("ParseInstrument(%q) = %+v, out of range", s, in)
			}
			if got := in.String(); got != upperASCII(s) {
				t.Fatalf("ParseInstrument(%q).String() = %q", s, got)
			}
			if again, err := ParseInstrument(in.String()); err != nil || again != in {
				t.Fatalf("ParseInstrument(%q) = %+v, and its String parses to %+v, %v", s, in, again, err)
			}
		}
		for _, cased := range []string{upperASCII(s), lowerASCII(s)} {
			if c, cerr := ParseInstrument(cased); (cerr == nil) != (err == nil) || c != in {
				t.Fatalf("ParseInstrument(%q) = %+v, %v, but ParseInstrument(%q) = %+v, %v", s, in, err, cased, c, cerr)
			}
		}
		if instrumentRE.MatchString(s) != (err == nil) {
			t.Fatalf("InstrumentPattern matches %q: %v; ParseInstrument: %v", s, instrumentRE.MatchString(s), err)
		}
		if frontDoorRE.MatchString(s) && err != nil {
			t.Fatalf("the front doors accept %q, the grammar does not", s)
		}

		n := NormalizeInstrument(s)
		nin, nerr := ParseInstrument(n)
		isContract := nerr == nil && nin.Form == InstrumentContract
		if m := oldContractRE.FindStringSubmatch(n); (m != nil) != isContract ||
			m != nil && (nin.Root != strings.ToUpper(m[1]) || nin.String() != strings.ToUpper(n)) {
			t.Fatalf("%q: the stream's contract expression says %q, the grammar %+v, %v", n, m, nin, nerr)
		}
		isMonthCode := nerr == nil && nin.Form == InstrumentMonthCode
		if m := oldMonthCodeRE.FindStringSubmatch(n); (m != nil && m[1] != "") != isMonthCode ||
			isMonthCode && (nin.Root != m[1] || MonthCode(nin.Month) != m[2][0] || nin.YearDigits != len(m[3])) {
			t.Fatalf("%q: the stream's month-code expression says %q, the grammar %+v, %v", n, m, nin, nerr)
		}
	})
}

// FuzzReadFrame reads a stream of frames with a Reader of a fuzzed size
// limit and checks that
//
//   - each frame read is of a known type, within the limit, and re-encodes
//     with AppendFrame to exactly the bytes it was read from;
//   - the read ends with the error the remaining bytes call for: io.EOF at
//     a frame boundary, io.ErrUnexpectedEOF in a header or payload,
//     ErrFrameTooLarge for a length over the limit (before the type is
//     looked at), ErrMalformedFrame for an unknown type;
//   - Decode of each payload into its type's message either fails with
//     ErrMalformedFrame or gives a value whose encoding decodes to the
//     same encoding again.
func FuzzReadFrame(f *testing.F) {
	var golden []byte
	for _, g := range goldenFrames {
		var buf bytes.Buffer
		if err := NewWriter(&buf).WriteFrame(g.typ, g.v); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes(), uint16(1024))
		golden = append(golden, buf.Bytes()...)
	}
	f.Add(golden, uint16(65535))
	f.Add([]byte{0, 0, 0, 10, byte(TypeEvent)}, uint16(8))                                                // too large
	f.Add([]byte{0, 0, 0, 2, 99, '{', '}'}, uint16(100))                                                  // unknown type
	f.Add([]byte{0, 0, 0, 10, byte(TypeEvent), '{'}, uint16(100))                                         // truncated
	f.Add([]byte{0, 0, 0, 2, byte(TypeRequest), '{', '}', 0, 0}, uint16(100))                             // truncated header
	f.Add([]byte{0, 0, 0, 4, byte(TypeResponse), 'n', 'u', 'l', 'l'}, uint16(100))                        // not an object
	f.Add([]byte{0, 0, 0, 9, byte(TypeCancel), '{', '"', 'i', 'd', '"', ':', '-', '1', '}'}, uint16(100)) // wrong type
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		max := int(limit) + 1
		fr := NewReader(bytes.NewReader(data), max)
		off := 0
		for {
			typ, p, err := fr.ReadFrame()
			rest := data[off:]
			if err != nil {
				var want error
				switch {
				case len(rest) == 0:
					want = io.EOF
				case len(rest) < HeaderSize:
					want = io.ErrUnexpectedEOF
				case binary.BigEndian.Uint32(rest) > uint32(max):
					want = ErrFrameTooLarge
				case !Type(rest[4]).Known():
					want = ErrMalformedFrame
				default:
					want = io.ErrUnexpectedEOF
				}
				if !errors.Is(err, want) {
					t.Fatalf("at byte %d of %d: %v, want %v", off, len(data), err, want)
				}
				if want == ErrFrameTooLarge || want == ErrMalformedFrame {
					if typ != Type(rest[4]) {
						t.Fatalf("at byte %d: type %d, the header says %d", off, typ, rest[4])
					}
				}
				return
			}
			if !typ.Known() || len(p) > max {
				t.Fatalf("at byte %d: frame of type %d and %d bytes read with limit %d", off, typ, len(p), max)
			}
			enc, aerr := AppendFrame(nil, typ, p)
			if aerr != nil || !bytes.HasPrefix(rest, enc) {
				t.Fatalf("at byte %d: the frame re-encodes to %x, read from %x", off, enc, rest[:min(len(rest), len(enc))])
			}
			off += len(enc)
			checkDecode(t, typ, p)
		}
	})
}

// messageOf returns a new message of the type frames of t carry.
func messageOf(t Type) any {
	switch t {
	case TypeHello:
		return new(Hello)
	case TypeWelcome:
		return new(Welcome)
	case TypeRequest:
		return new(Request)
	case TypeResponse:
		return new(Response)
	case TypeCancel:
		return new(Cancel)
	}
	return new(Event)
}

// checkDecode decodes p as a message of t: a refusal must be
// ErrMalformedFrame, an accepted message must re-encode stably.
func checkDecode(t *testing.T, typ Type, p []byte) {
	t.Helper()
	v := messageOf(typ)
	if err := Decode(p, v); err != nil {
		if !errors.Is(err, ErrMalformedFrame) {
			t.Fatalf("Decode(%s %q): %v, not ErrMalformedFrame", typ, p, err)
		}
		return
	}
	enc, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("Decode(%s %q) gave %+v, which does not encode: %v", typ, p, v, err)
	}
	w := messageOf(typ)
	if err := Decode(enc, w); err != nil {
		t.Fatalf("the encoding %s of a decoded %s does not decode: %v", enc, typ, err)
	}
	if enc2, _ := json.Marshal(w); !bytes.Equal(enc, enc2) {
		t.Fatalf("%s re-encodes as %s, then as %s", typ, enc, enc2)
	}
}

// FuzzHello checks the handshake's reading of a Hello payload as the hub
// does it (relay/hub/conn.go: one frame read with a 64 KiB limit, Decode
// into Hello, the version must be the negotiated one): the frame carries
// the payload unchanged; a Hello that passes is a JSON object of this
// protocol version that re-encodes to a Hello equal to it; every refusal
// is ErrMalformedFrame or a version mismatch.
func FuzzHello(f *testing.F) {
	for _, g := range goldenFrames {
		if g.typ == TypeHello {
			b, _ := json.Marshal(g.v)
			f.Add(b)
		}
	}
	for _, s := range []string{
		`{"protocolVersion":1}`, `{"protocolVersion":2,"agentVersion":"9"}`, `null`, `[]`, `"hello"`, ``,
		`{"protocolVersion":1,"protocolVersion":1}`, `{"PROTOCOLVERSION":1}`, `{"protocolVersion":1.0}`,
		`{"protocolVersion":"1"}`, `{"protocolVersion":1,"connections":[{"accounts":["\ud800"]}]}`,
		`{"protocolVersion":1,"platform":"sim","connections":null} `, `{"protocolVersion":1e400}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		const limit = 64 << 10
		frame, err := AppendFrame(nil, TypeHello, payload)
		if err != nil {
			t.Fatal(err)
		}
		typ, p, err := NewReader(bytes.NewReader(frame), limit).ReadFrame()
		if len(payload) > limit {
			if !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("a %d-byte hello: %v", len(payload), err)
			}
			return
		}
		if err != nil || typ != TypeHello || !bytes.Equal(p, payload) {
			t.Fatalf("ReadFrame of a hello: %s, %q, %v", typ, p, err)
		}
		var h Hello
		if err := Decode(p, &h); err != nil {
			if !errors.Is(err, ErrMalformedFrame) {
				t.Fatalf("Decode(%q): %v", p, err)
			}
			return
		}
		if h.ProtocolVersion != ProtocolVersion {
			return // refused: CloseVersionUnsupported
		}
		if t0 := bytes.TrimLeft(p, " \t\r\n"); len(t0) == 0 || t0[0] != '{' {
			t.Fatalf("accepted a hello that is no JSON object: %q", p)
		}
		enc, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		var again Hello
		if err := Decode(enc, &again); err != nil || !reflect.DeepEqual(h, again) {
			t.Fatalf("hello %+v re-encodes as %s, which decodes to %+v, %v", h, enc, again, err)
		}
	})
}

// lowerASCII lower-cases ASCII letters.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
