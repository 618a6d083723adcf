package controls

import (
	"sort"
	"strings"
	"time"

	"tradebridge/protocol"
)

// snapshot is what the Engine reads of one configuration, derived once:
// the switches, and the news lockout as merged windows and a set of roots.
// It is never changed after derive.
type snapshot struct {
	cfg     *protocol.Config // the configuration derived from; nil for none
	version int64

	kill, flattenOnKill, blockAll bool

	// windows are the lockout's windows, sorted and merged; none when the
	// lockout is off.
	windows     []window
	newsFlatten bool   // the lockout's action is "flatten"
	newsAction  string // protocol.NewsBlock or protocol.NewsFlatten
	allRoots    bool   // the lockout covers every root
	roots       map[string]bool
	rootList    []string // the roots, upper case, in configuration order
}

// window is a lockout window: [from, until).
type window struct {
	from, until time.Time
	title       string // the events' titles, "; " between them
}

// contains reports whether t is in w.
func (w window) contains(t time.Time) bool { return !t.Before(w.from) && t.Before(w.until) }

// derive builds the snapshot of cfg (nil: no configuration yet, nothing
// refused).
func derive(cfg *protocol.Config) *snapshot {
	s := &snapshot{cfg: cfg}
	if cfg == nil {
		return s
	}
	s.version = cfg.Version
	c := cfg.Controls
	s.kill, s.flattenOnKill, s.blockAll = c.KillSwitch, c.FlattenOnKill, c.BlockAllSignals
	n := cfg.NewsLockout
	if !n.Enabled {
		return s
	}
	// Any action but "flatten" only blocks: refusing entries is the
	// lesser action, and a flatten must be asked for.
	s.newsAction = protocol.NewsBlock
	if strings.EqualFold(strings.TrimSpace(n.Action), protocol.NewsFlatten) {
		s.newsAction, s.newsFlatten = protocol.NewsFlatten, true
	}
	s.allRoots = true
	for _, r := range n.Roots {
		r = strings.ToUpper(strings.TrimSpace(r))
		if r == "" {
			continue
		}
		if s.roots == nil {
			s.roots = make(map[string]bool, len(n.Roots))
		}
		if !s.roots[r] {
			s.roots[r] = true
			s.rootList = append(s.rootList, r)
		}
		s.allRoots = false
	}
	s.windows = mergeWindows(n)
	return s
}

// mergeWindows returns the windows of n's events, sorted by start, with
// the windows that overlap or touch merged into one. An event whose window
// is empty (no minutes before or after) has none.
func mergeWindows(n protocol.NewsLockout) []window {
	before := time.Duration(max(n.MinutesBefore, 0)) * time.Minute
	after := time.Duration(max(n.MinutesAfter, 0)) * time.Minute
	ws := make([]window, 0, len(n.Events))
	for _, ev := range n.Events {
		if ev.At.IsZero() {
			continue
		}
		w := window{from: ev.At.Add(-before), until: ev.At.Add(after), title: ev.Title}
		if w.until.After(w.from) {
			ws = append(ws, w)
		}
	}
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].from.Before(ws[j].from) })
	out := ws[:0]
	for _, w := range ws {
		if k := len(out) - 1; k >= 0 && !w.from.After(out[k].until) {
			if w.until.After(out[k].until) {
				out[k].until = w.until
			}
			out[k].title = joinTitle(out[k].title, w.title)
			continue
		}
		out = append(out, w)
	}
	return out
}

func joinTitle(a, b string) string {
	switch {
	case b == "" || a == b:
		return a
	case a == "":
		return b
	}
	return a + "; " + b
}

// openWindow returns the window open at now, if any.
func (s *snapshot) openWindow(now time.Time) (window, bool) {
	// The last window starting at or before now.
	i := sort.Search(len(s.windows), func(i int) bool { return s.windows[i].from.After(now) }) - 1
	if i < 0 || !now.Before(s.windows[i].until) {
		return window{}, false
	}
	return s.windows[i], true
}

// covers reports whether the lockout covers instrument, a full contract
// name. An instrument whose root cannot be read is covered: the lockout
// errs on the side of refusing an entry.
func (s *snapshot) covers(instrument string) bool {
	if s.allRoots {
		return true
	}
	return s.coversRoot(rootOf(instrument))
}

// coversRoot reports whether the lockout covers root ("" when unknown).
func (s *snapshot) coversRoot(root string) bool {
	return s.allRoots || root == "" || s.roots[root]
}

// rootOf returns the root of an instrument name in any form of the
// protocol's grammar, upper case; "" when the name is not in it.
func rootOf(instrument string) string {
	inst, err := protocol.ParseInstrument(strings.TrimSpace(instrument))
	if err != nil {
		return ""
	}
	return inst.Root
}
