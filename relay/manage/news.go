package manage

import (
	"slices"
	"strings"
	"unicode/utf8"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// Limits of the news lockout.
const (
	// MaxNewsEvents bounds the lockout's events.
	MaxNewsEvents = 100
	// MaxNewsTitle bounds an event's title, in characters.
	MaxNewsTitle = 200
	// MaxNewsMinutes bounds minutesBefore and minutesAfter.
	MaxNewsMinutes = 240
	// MaxNewsRoots bounds the lockout's roots.
	MaxNewsRoots = 50
	// DefaultNewsMinutes is the default of minutesBefore and minutesAfter.
	DefaultNewsMinutes = 5
)

// Impacts of a news event.
const (
	ImpactLow    = "low"
	ImpactMedium = "medium"
	ImpactHigh   = "high"
)

// RootPattern is the form of an instrument root (protocol.ValidRoot).
const RootPattern = `^[A-Za-z0-9]{1,6}$`

// newsKind is the news-lockout kind of the Management API: one resource
// per user, replaced by PUT or changed by PATCH, off by default.
var newsKind = &Kind[protocol.NewsLockout]{
	Name:       "news-lockout",
	Path:       "news-lockout",
	Singleton:  true,
	NeedsAgent: true,
	Default: func() protocol.NewsLockout {
		return protocol.NewsLockout{
			Events:        []protocol.NewsEvent{},
			MinutesBefore: DefaultNewsMinutes,
			MinutesAfter:  DefaultNewsMinutes,
			Roots:         []string{},
			Action:        protocol.NewsBlock,
		}
	},
	Meta:     func(v *protocol.NewsLockout) *protocol.Meta { return &v.Meta },
	Validate: validateNews,
}

// validateNews checks the lockout, upper-cases its roots and drops a root
// listed twice.
func validateNews(c *Change[protocol.NewsLockout]) *httpapi.Error {
	n := c.New
	var f fieldErrs
	if n.Events == nil {
		n.Events = []protocol.NewsEvent{}
	}
	if len(n.Events) > MaxNewsEvents {
		f.limit("events", errcode.FieldCodeLessThanEqual, MaxNewsEvents)
	} else {
		for i, e := range n.Events {
			switch l := utf8.RuneCountInString(e.Title); {
			case strings.TrimSpace(e.Title) == "":
				f.add(path("events", i, "title"), errcode.FieldCodeRequired)
			case l > MaxNewsTitle:
				f.limit(path("events", i, "title"), errcode.FieldCodeOutOfRange, MaxNewsTitle)
			}
			if e.Impact != ImpactLow && e.Impact != ImpactMedium && e.Impact != ImpactHigh {
				f.allowed(path("events", i, "impact"), ImpactLow, ImpactMedium, ImpactHigh)
			}
			if e.At.IsZero() {
				f.add(path("events", i, "at"), errcode.FieldCodeRequired)
			}
		}
	}
	if n.Enabled && len(n.Events) == 0 {
		f.add("events", errcode.FieldCodeRequiredWhenEnabled)
	}
	intBetween(&f, "minutesBefore", n.MinutesBefore, 0, MaxNewsMinutes)
	intBetween(&f, "minutesAfter", n.MinutesAfter, 0, MaxNewsMinutes)
	if n.Roots == nil {
		n.Roots = []string{}
	}
	if len(n.Roots) > MaxNewsRoots {
		f.limit("roots", errcode.FieldCodeLessThanEqual, MaxNewsRoots)
	} else {
		roots := make([]string, 0, len(n.Roots))
		for i, r := range n.Roots {
			if !protocol.ValidRoot(r) {
				f.pattern(path("roots", i), RootPattern)
				continue
			}
			if r = strings.ToUpper(r); !slices.Contains(roots, r) {
				roots = append(roots, r)
			}
		}
		if len(f) == 0 {
			n.Roots = roots
		}
	}
	if n.Action != protocol.NewsBlock && n.Action != protocol.NewsFlatten {
		f.allowed("action", protocol.NewsBlock, protocol.NewsFlatten)
	}
	return f.err()
}
