package manage

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// validNews returns an enabled lockout with one event.
func validNews() protocol.NewsLockout {
	n := newsKind.Default()
	n.Enabled = true
	n.Events = []protocol.NewsEvent{{At: time.Date(2025, 3, 7, 13, 30, 0, 0, time.UTC), Title: "Nonfarm payrolls", Impact: ImpactHigh}}
	return n
}

func TestNewsKindDeclaration(t *testing.T) {
	t.Parallel()
	require.Equal(t, "news-lockout", newsKind.Name)
	require.Equal(t, "news-lockout", newsKind.Path)
	require.True(t, newsKind.Singleton)
	require.True(t, newsKind.NeedsAgent)
	d := newsKind.Default()
	require.False(t, d.Enabled)
	require.Equal(t, 5, d.MinutesBefore)
	require.Equal(t, 5, d.MinutesAfter)
	require.Equal(t, protocol.NewsBlock, d.Action)
	require.NotNil(t, d.Events)
	require.NotNil(t, d.Roots)
	// The default is valid as it is.
	require.Nil(t, validateNews(&Change[protocol.NewsLockout]{Op: OpPatch, New: &d, Snap: &Snapshot{}}))
}

func TestNewsHooks(t *testing.T) {
	t.Parallel()
	mod := func(f func(*protocol.NewsLockout)) protocol.NewsLockout {
		n := validNews()
		f(&n)
		return n
	}
	bad := func(f ...httpapi.FieldError) miscWant {
		return miscWant{http.StatusUnprocessableEntity, errcode.ValidationFailed, f}
	}
	fe := func(p, code string, limit any) httpapi.FieldError {
		return httpapi.FieldError{Path: p, Code: code, Limit: limit}
	}
	manyEvents := make([]protocol.NewsEvent, MaxNewsEvents+1)
	for i := range manyEvents {
		manyEvents[i] = validNews().Events[0]
	}
	manyRoots := make([]string, MaxNewsRoots+1)
	for i := range manyRoots {
		manyRoots[i] = "ES"
	}
	tests := []struct {
		name      string
		news      protocol.NewsLockout
		want      miscWant
		wantRoots []string
	}{
		{name: "valid", news: validNews(), wantRoots: []string{}},
		{name: "roots upper-cased, repeats dropped", news: mod(func(n *protocol.NewsLockout) { n.Roots = []string{"es", "NQ", "Es", "m2k"} }),
			wantRoots: []string{"ES", "NQ", "M2K"}},
		{name: "100 events", news: mod(func(n *protocol.NewsLockout) { n.Events = manyEvents[:MaxNewsEvents] }), wantRoots: []string{}},
		{name: "too many events", news: mod(func(n *protocol.NewsLockout) { n.Events = manyEvents }),
			want: bad(fe("events", errcode.FieldCodeLessThanEqual, MaxNewsEvents))},
		{name: "enabled without events", news: mod(func(n *protocol.NewsLockout) { n.Events = nil }),
			want: bad(fe("events", errcode.FieldCodeRequiredWhenEnabled, nil))},
		{name: "disabled without events", news: mod(func(n *protocol.NewsLockout) { n.Events = nil; n.Enabled = false }), wantRoots: []string{}},
		{name: "title empty", news: mod(func(n *protocol.NewsLockout) { n.Events[0].Title = " " }),
			want: bad(fe("events.0.title", errcode.FieldCodeRequired, nil))},
		{name: "title of 200 characters", news: mod(func(n *protocol.NewsLockout) { n.Events[0].Title = strings.Repeat("é", 200) }),
			wantRoots: []string{}},
		{name: "title too long", news: mod(func(n *protocol.NewsLockout) { n.Events[0].Title = strings.Repeat("é", 201) }),
			want: bad(fe("events.0.title", errcode.FieldCodeOutOfRange, MaxNewsTitle))},
		{name: "unknown impact", news: mod(func(n *protocol.NewsLockout) { n.Events[0].Impact = "huge" }),
			want: bad(httpapi.FieldError{Path: "events.0.impact", Code: errcode.FieldCodeNotAllowed,
				Allowed: []string{ImpactLow, ImpactMedium, ImpactHigh}})},
		{name: "no time", news: mod(func(n *protocol.NewsLockout) { n.Events[0].At = time.Time{} }),
			want: bad(fe("events.0.at", errcode.FieldCodeRequired, nil))},
		{name: "minutes at their bounds", news: mod(func(n *protocol.NewsLockout) { n.MinutesBefore, n.MinutesAfter = 0, 240 }),
			wantRoots: []string{}},
		{name: "minutes out of range", news: mod(func(n *protocol.NewsLockout) { n.MinutesBefore, n.MinutesAfter = -1, 241 }),
			want: bad(fe("minutesBefore", errcode.FieldCodeGreaterThanEqual, 0), fe("minutesAfter", errcode.FieldCodeLessThanEqual, MaxNewsMinutes))},
		{name: "bad root", news: mod(func(n *protocol.NewsLockout) { n.Roots = []string{"ES", "E-S", "TOOLONG"} }),
			want: bad(httpapi.FieldError{Path: "roots.1", Code: errcode.FieldCodeStringPatternMismatch, Pattern: RootPattern},
				httpapi.FieldError{Path: "roots.2", Code: errcode.FieldCodeStringPatternMismatch, Pattern: RootPattern})},
		{name: "too many roots", news: mod(func(n *protocol.NewsLockout) { n.Roots = manyRoots }),
			want: bad(fe("roots", errcode.FieldCodeLessThanEqual, MaxNewsRoots))},
		{name: "flatten action", news: mod(func(n *protocol.NewsLockout) { n.Action = protocol.NewsFlatten }), wantRoots: []string{}},
		{name: "unknown action", news: mod(func(n *protocol.NewsLockout) { n.Action = "panic" }),
			want: bad(httpapi.FieldError{Path: "action", Code: errcode.FieldCodeNotAllowed,
				Allowed: []string{protocol.NewsBlock, protocol.NewsFlatten}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := tt.news
			for _, op := range []Op{OpPut, OpPatch} {
				m := n
				m.Roots = append([]string(nil), n.Roots...)
				old := newsKind.Default()
				c := &Change[protocol.NewsLockout]{Op: op, Old: &old, New: &m, Snap: &Snapshot{}}
				miscCheck(t, tt.want, miscHooks(newsKind, c))
				if tt.want.code == "" {
					require.Equal(t, tt.wantRoots, m.Roots)
					require.NotNil(t, m.Events)
				}
			}
		})
	}
}
