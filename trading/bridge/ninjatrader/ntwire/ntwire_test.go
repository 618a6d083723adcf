package ntwire

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The constants are the protocol's: pinned here, and each named in the
// protocol's document.
func TestConstantsArePinned(t *testing.T) {
	require.Equal(t, 1, Version)
	require.Equal(t, map[string]string{
		"hello": TypeHello, "welcome": TypeWelcome, "refused": TypeRefused, "request": TypeRequest,
		"reply": TypeReply, "event": TypeEvent, "ping": TypePing, "pong": TypePong, "bye": TypeBye,
	}, map[string]string{
		TypeHello: TypeHello, TypeWelcome: TypeWelcome, TypeRefused: TypeRefused, TypeRequest: TypeRequest,
		TypeReply: TypeReply, TypeEvent: TypeEvent, TypePing: TypePing, TypePong: TypePong, TypeBye: TypeBye,
	})
	require.Equal(t, []string{"bad_request", "unknown_method", "account_not_found", "order_not_found",
		"instrument_unknown", "order_rejected", "template_not_found", "strategy_not_found",
		"strategy_class_unknown", "strategy_terminal", "not_connected", "internal"}, Codes)
	require.Equal(t, []string{"snapshot", "submitOrder", "cancelOrder", "changeOrder", "flatten",
		"instrument", "quote", "subscribe", "unsubscribe", "bars", "subscribeBars", "unsubscribeBars",
		"atmTemplates", "startStrategy", "setStrategyState"}, Methods)
	require.Equal(t, []string{"order", "execution", "position", "account", "connection", "quote", "bar", "strategy"}, Kinds)
	require.Equal(t, []string{"bad_secret", "version_unsupported", "busy", "bad_hello"},
		[]string{RefusedBadSecret, RefusedVersionUnsupported, RefusedBusy, RefusedBadHello})
	require.Equal(t, []string{"platform_closing", "addon_stopping"}, []string{ByePlatformClosing, ByeAddonStopping})
	require.Equal(t, "ninjatrader-addon.json", DiscoveryFileName)
}

// Every code, method, kind and message type appears in the document, in
// backquotes, so the document and the code cannot drift apart unnoticed.
func TestDocumentNamesEverything(t *testing.T) {
	doc, err := os.ReadFile("../../../../docs/ninjatrader-protocol.md")
	require.NoError(t, err)
	names := append(append(append([]string{}, Codes...), Methods...), Kinds...)
	names = append(names, TypeHello, TypeWelcome, TypeRefused, TypeRequest, TypeReply, TypeEvent, TypePing,
		TypePong, TypeBye, RefusedBadSecret, RefusedVersionUnsupported, RefusedBusy, RefusedBadHello,
		ByePlatformClosing, ByeAddonStopping)
	for _, n := range names {
		require.Contains(t, string(doc), "`"+n+"`", "the protocol document names %s", n)
	}
	require.Regexp(t, regexp.MustCompile(`# The NinjaTrader add-on protocol, version 1\b`), string(doc))
}

func TestReaderLines(t *testing.T) {
	t.Parallel()
	in := "{\"type\":\"ping\",\"id\":1}\r\n\n  \n{\"type\":\"pong\",\"id\":1,\"extra\":true}\n{\"id\":2}\n{\"type\":\"ping\",\"id\":3}\n{\"type\":\"ping\""
	r := NewReader(strings.NewReader(in))
	m, err := r.Read()
	require.NoError(t, err)
	require.Equal(t, Message{Type: TypePing, ID: 1}, m)
	m, err = r.Read()
	require.NoError(t, err, "unknown fields are ignored; blank lines skipped")
	require.Equal(t, Message{Type: TypePong, ID: 1}, m)
	_, err = r.Read()
	require.ErrorIs(t, err, ErrMalformed, "a message needs a type")
	m, err = r.Read()
	require.NoError(t, err, "the line after a malformed one reads")
	require.Equal(t, uint64(3), m.ID)
	_, err = r.Read()
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "a last line without its newline is cut off")
	_, err = r.Read()
	require.ErrorIs(t, err, io.EOF)
}

func TestReaderBoundsLines(t *testing.T) {
	t.Parallel()
	long := `{"type":"ping","x":"` + strings.Repeat("a", 200) + "\"}\n"
	r := NewReaderSize(strings.NewReader(long), 100)
	_, err := r.Read()
	require.ErrorIs(t, err, ErrLineTooLong)
	r = NewReaderSize(strings.NewReader(long), 300)
	_, err = r.Read()
	require.NoError(t, err)
}

func TestWriterOneLinePerMessage(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	require.NoError(t, w.Write(Message{Type: TypeRequest, ID: 7, Method: MethodSnapshot, TimeoutMs: 1000}))
	require.NoError(t, w.Write(Message{Type: TypeRefused, Code: RefusedBusy, Text: "another agent is connected"}))
	require.Equal(t, `{"type":"request","id":7,"method":"snapshot","timeoutMs":1000}`+"\n"+
		`{"type":"refused","code":"busy","message":"another agent is connected"}`+"\n", buf.String())
}

func TestOrderNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, id, tag, want string
	}{
		{"Entry", "a1b2", "", "Entry|a1b2"},
		{"", "a1b2", "", "|a1b2"},
		{"Entry", "cp-x.y:z_1", "scalper", "Entry|cp-x.y:z_1|scalper"},
	} {
		s := OrderName(tc.name, tc.id, tc.tag)
		require.Equal(t, tc.want, s)
		name, id, tag, ok := ParseOrderName(s)
		require.True(t, ok)
		require.Equal(t, []string{tc.name, tc.id, tc.tag}, []string{name, id, tag})
	}
	for _, foreign := range []string{"Stop1", "Target1", "Entry", "a|b|c|d", "x|bad id", "x|a1|", "x|" + strings.Repeat("a", 65)} {
		_, _, _, ok := ParseOrderName(foreign)
		require.False(t, ok, foreign)
	}
	require.True(t, ValidOrderID(strings.Repeat("a", 64)))
	require.False(t, ValidOrderID(""))
	require.False(t, ValidOrderID("a|b"))
}

func TestNameFits(t *testing.T) {
	t.Parallel()
	require.True(t, NameFits("cp-0123456789abcdef0123", "scalper"))
	require.True(t, NameFits(strings.Repeat("a", 49), ""))
	require.False(t, NameFits(strings.Repeat("a", 50), ""))
	require.False(t, NameFits(strings.Repeat("a", 40), strings.Repeat("t", 9)))
}

func TestValidSessionID(t *testing.T) {
	t.Parallel()
	require.True(t, ValidSessionID("7c1e0b5a9f3d4e21"))
	require.True(t, ValidSessionID("a_b-C123"))
	require.False(t, ValidSessionID("short"))
	require.False(t, ValidSessionID(strings.Repeat("a", 65)))
	require.False(t, ValidSessionID("7c1e0b5a:9f3d4e21"))
}
