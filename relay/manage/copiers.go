package manage

import (
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// The copier kind: a leader account's trading copied to follower accounts
// (DESIGN.md, "Management API", Copier). Its hooks are pure functions of a
// Change:
//
//   - Validate checks the copier on its own (422 validation_failed with
//     every field at fault, then 422 invalid_replacement), normalizes it
//     (instrument roots and symbol replacements upper-cased, empty lists
//     rather than null) and clears a halt when the copier is turned back
//     on;
//   - Check judges it against the user's accounts, monitors and other
//     copiers, in the fixed order of copierChecks.

// Bounds of a copier.
const (
	// maxCopiers bounds a user's copiers (409 limit_reached past it).
	maxCopiers = 50
	// maxFollowers bounds a copier's followers.
	maxFollowers = 20
	// maxCopierInstruments bounds a copier's instrument roots.
	maxCopierInstruments = 50
	// maxReplacements bounds a copier's symbol replacements.
	maxReplacements = 20
	// minAutoSyncSeconds and maxAutoSyncSeconds bound autoSyncSeconds.
	minAutoSyncSeconds = 3
	maxAutoSyncSeconds = 3600
)

// rootPattern is the form of an instrument root (protocol.ValidRoot): 1 to
// 6 ASCII letters and digits, stored upper-cased.
const rootPattern = `^[A-Za-z0-9]{1,6}$`

// replacementPartner maps each root that a symbol replacement may name to
// the one root of the same underlying it may be replaced with, in either
// direction (full size and micro).
var replacementPartner = map[string]string{
	"ES": "MES", "MES": "ES",
	"NQ": "MNQ", "MNQ": "NQ",
	"YM": "MYM", "MYM": "YM",
	"RTY": "M2K", "M2K": "RTY",
	"CL": "MCL", "MCL": "CL",
	"GC": "MGC", "MGC": "GC",
}

// replacementRoots lists the keys of replacementPartner, sorted: the
// allowed values of a replacement's from.
var replacementRoots = func() []string {
	r := make([]string, 0, len(replacementPartner))
	for k := range replacementPartner {
		r = append(r, k)
	}
	sort.Strings(r)
	return r
}()

// copierKind is the copier kind of the Management API.
var copierKind = &Kind[protocol.Copier]{
	Name:       "copier",
	Path:       "desktop/copiers",
	Singleton:  false,
	ReadOnly:   []string{"state", "haltedReason", "haltedAt"},
	Required:   []string{"leader", "followers"},
	NeedsAgent: true,
	MaxCount:   maxCopiers,
	LimitCode:  errcode.LimitReached,
	Default:    defaultCopier,
	Meta:       func(v *protocol.Copier) *protocol.Meta { return &v.Meta },
	Derive:     deriveCopier,
	Validate:   validateCopier,
	Check:      checkCopier,
}

// defaultCopier is a new copier before a create's body is decoded onto
// it: off, ratio 1, order copy mode, no Auto-Sync.
func defaultCopier() protocol.Copier {
	return protocol.Copier{
		Active:             false,
		Followers:          []protocol.Follower{},
		Sizing:             protocol.Sizing{Ratio: 1},
		Instruments:        []string{},
		SymbolReplacements: []protocol.SymbolReplacement{},
		CopyMode:           protocol.CopyModeOrder,
		AutoSyncSeconds:    0,
		State:              protocol.CopierOff,
	}
}

// deriveCopier fills the copier's state: off when it is not active,
// halted when the agent reported a halt, else running. Lists are shown as
// [] rather than null.
func deriveCopier(v *protocol.Copier, _ *Snapshot) {
	switch {
	case !v.Active:
		v.State = protocol.CopierOff
	case v.HaltedReason != "":
		v.State = protocol.CopierHalted
	default:
		v.State = protocol.CopierRunning
	}
	if v.Followers == nil {
		v.Followers = []protocol.Follower{}
	}
	if v.Instruments == nil {
		v.Instruments = []string{}
	}
	if v.SymbolReplacements == nil {
		v.SymbolReplacements = []protocol.SymbolReplacement{}
	}
}

// validRatio reports whether r is a step of the sizing grid: 0.25 to 1.75
// in steps of 0.25, or 2 to 10 in steps of 1. The grid's values are exact
// in binary, so the comparisons are exact.
func validRatio(r float64) bool {
	switch {
	case r >= 0.25 && r <= 1.75:
		return r*4 == math.Trunc(r*4)
	case r >= 2 && r <= 10:
		return r == math.Trunc(r)
	}
	return false
}

// validateCopier checks c.New on its own and normalizes it. It returns
// 422 validation_failed listing every field at fault; when there is none,
// 422 invalid_replacement listing every symbol replacement at fault.
//
// It also clears a halt (haltedReason, haltedAt) when the change turns the
// copier on (active false → true): a halted copier is restarted by turning
// it off and on.
func validateCopier(c *Change[protocol.Copier]) *httpapi.Error {
	v := c.New
	if v == nil {
		return nil
	}
	if c.Old != nil && !c.Old.Active && v.Active {
		v.HaltedReason = ""
		v.HaltedAt = nil
	}
	deriveCopier(v, c.Snap)

	var f fieldErrs
	if v.Leader == "" {
		f.add("leader", errcode.FieldCodeRequired)
	}
	switch n := len(v.Followers); {
	case n == 0:
		f.limit("followers", errcode.FieldCodeGreaterThanEqual, 1)
	case n > maxFollowers:
		f.limit("followers", errcode.FieldCodeLessThanEqual, maxFollowers)
	}
	for i, fl := range v.Followers {
		if fl.Account == "" {
			f.add(path("followers", i, "account"), errcode.FieldCodeRequired)
		}
		if fl.Sizing != nil && !validRatio(fl.Sizing.Ratio) {
			f.add(path("followers", i, "sizing", "ratio"), errcode.FieldCodeRatioNotAStep)
		}
	}
	if !validRatio(v.Sizing.Ratio) {
		f.add("sizing.ratio", errcode.FieldCodeRatioNotAStep)
	}
	if len(v.Instruments) > maxCopierInstruments {
		f.limit("instruments", errcode.FieldCodeLessThanEqual, maxCopierInstruments)
	}
	// Normalized in copies: the lists may share memory with the stored
	// copier.
	v.Instruments = append([]string{}, v.Instruments...)
	v.SymbolReplacements = append([]protocol.SymbolReplacement{}, v.SymbolReplacements...)
	seen := make(map[string]bool, len(v.Instruments))
	for i, s := range v.Instruments {
		if !protocol.ValidRoot(s) {
			f.pattern(path("instruments", i), rootPattern)
			continue
		}
		s = strings.ToUpper(s)
		v.Instruments[i] = s
		if seen[s] {
			f.add(path("instruments", i), errcode.FieldCodeDuplicateItem)
		}
		seen[s] = true
	}
	if v.CopyMode != protocol.CopyModeOrder && v.CopyMode != protocol.CopyModeExecution {
		f.allowed("copyMode", protocol.CopyModeOrder, protocol.CopyModeExecution)
	}
	switch s := v.AutoSyncSeconds; {
	case s == 0:
		if v.AutoSync {
			f.add("autoSyncSeconds", errcode.FieldCodeRequiredWhenEnabled)
		}
	case s < minAutoSyncSeconds:
		f.limit("autoSyncSeconds", errcode.FieldCodeOutOfRange, minAutoSyncSeconds)
	case s > maxAutoSyncSeconds:
		f.limit("autoSyncSeconds", errcode.FieldCodeLessThanEqual, maxAutoSyncSeconds)
	}
	if len(v.SymbolReplacements) > maxReplacements {
		f.limit("symbolReplacements", errcode.FieldCodeLessThanEqual, maxReplacements)
	}
	if err := f.err(); err != nil {
		if slices.ContainsFunc(f, func(fe httpapi.FieldError) bool { return fe.Code == errcode.FieldCodeRatioNotAStep }) {
			err.Detail += "; a sizing ratio is one of " + ratioStepsText()
		}
		return err
	}
	return validateReplacements(v)
}

// validateReplacements upper-cases the copier's symbol replacements and
// returns 422 invalid_replacement when one is not allowed: a from that is
// no root of replacementPartner, a to that is not from's partner (from ==
// to included), or a from already replaced by an earlier entry.
func validateReplacements(v *protocol.Copier) *httpapi.Error {
	var f fieldErrs
	seen := make(map[string]bool, len(v.SymbolReplacements))
	for i := range v.SymbolReplacements {
		r := &v.SymbolReplacements[i]
		r.From, r.To = strings.ToUpper(r.From), strings.ToUpper(r.To)
		partner, known := replacementPartner[r.From]
		switch {
		case !known:
			f.allowed(path("symbolReplacements", i, "from"), replacementRoots...)
		case seen[r.From]:
			f.add(path("symbolReplacements", i, "from"), errcode.FieldCodeDuplicateItem)
		}
		if known && r.To != partner {
			f.allowed(path("symbolReplacements", i, "to"), partner)
		} else if !known && r.To == r.From {
			f.add(path("symbolReplacements", i, "to"), errcode.FieldCodeNotAllowed)
		}
		seen[r.From] = true
	}
	if len(f) == 0 {
		return nil
	}
	return refuse(errcode.InvalidReplacement,
		"a symbol replacement is not allowed: replace a root only with the other root of the same underlying, once", f...)
}

// copierCheck is one of the conflict rules of checkCopier: it returns the
// error of the rule, or nil.
type copierCheck func(c *Change[protocol.Copier], others []*protocol.Copier) *httpapi.Error

// copierChecks are the rules of checkCopier in the order they run; the
// first that refuses answers:
//  1. 404 account_not_found: the leader or a follower is not on the user's
//     connections (broker family: 409 account_identity_unresolved, not the linked
//     login's);
//  2. 409 duplicate_follower: a follower repeats another or is the leader;
//  3. 409 copier_cycle: the user's copiers would copy in a loop;
//  4. 409 duplicate_copier: another copier of the same leader covers a
//     common follower and instrument;
//  5. 409 autosync_conflict: two Auto-Sync copiers would manage the same
//     follower and instrument;
//  6. 409 follower_conflict: a copier of another leader uses a common
//     follower and instrument with another copy mode, or only one of the
//     two uses Auto-Sync;
//  7. 409 tandem_requires_monitor: Tandem with a follower without monitor.
var copierChecks = []copierCheck{
	checkCopierAccounts,
	checkDuplicateFollowers,
	checkCopierCycle,
	checkDuplicateCopier,
	checkAutoSyncConflict,
	checkFollowerConflict,
	checkTandemMonitors,
}

// checkCopier judges a create or a patch against the user's accounts,
// monitors and other copiers (active or not), with copierChecks. A delete
// is never refused, and neither is a change that turns the copier off or
// leaves it as it is: stopping a copier must work whatever else holds.
func checkCopier(c *Change[protocol.Copier]) *httpapi.Error {
	if c.New == nil || c.Op == OpDelete || onlyStops(c) {
		return nil
	}
	if c.Snap == nil {
		c.Snap = &Snapshot{}
	}
	others := otherCopiers(c)
	for _, check := range copierChecks {
		if err := check(c, others); err != nil {
			return err
		}
	}
	return nil
}

// onlyStops reports whether the change changes nothing but active, and
// does not turn the copier on: it turns the copier off, or changes
// nothing.
func onlyStops(c *Change[protocol.Copier]) bool {
	if c.Old == nil || !c.Old.Active && c.New.Active {
		return false
	}
	o, n := comparableCopier(*c.Old), comparableCopier(*c.New)
	o.Active, n.Active = false, false
	return reflect.DeepEqual(o, n)
}

// comparableCopier returns v without the fields a change does not set
// (meta, state, halt) and with empty lists for null ones.
func comparableCopier(v protocol.Copier) protocol.Copier {
	v.Meta = protocol.Meta{}
	v.State, v.HaltedReason, v.HaltedAt = "", "", nil
	deriveCopier(&v, nil)
	v.State = ""
	return v
}

// otherCopiers returns the user's copiers other than the one changed.
func otherCopiers(c *Change[protocol.Copier]) []*protocol.Copier {
	if c.Snap == nil {
		return nil
	}
	var skip string
	if c.Old != nil {
		skip = c.Old.ID
	} else if c.New != nil {
		skip = c.New.ID
	}
	var others []*protocol.Copier
	for i := range c.Snap.Copiers {
		if o := &c.Snap.Copiers[i]; skip == "" || o.ID != skip {
			others = append(others, o)
		}
	}
	return others
}

// checkCopierAccounts refuses (404 account_not_found) a leader or follower
// that none of the user's platform connections carries, listing each; in
// the broker family (409 account_identity_unresolved) one that the linked
// broker login does not carry.
func checkCopierAccounts(c *Change[protocol.Copier], _ []*protocol.Copier) *httpapi.Error {
	v := c.New
	has, code, detail := c.Snap.HasAccount, errcode.AccountNotFound, "an account is not on any of your platform connections"
	if c.Family == FamilyBroker {
		has, code, detail = c.Snap.HasBrokerAccount, errcode.AccountIdentityUnresolved, brokerAccountDetail
	}
	var f []httpapi.FieldError
	if !has(v.Leader) {
		f = append(f, httpapi.FieldError{Path: "leader", Code: code})
	}
	for i, fl := range v.Followers {
		if !has(fl.Account) {
			f = append(f, httpapi.FieldError{Path: path("followers", i, "account"), Code: code})
		}
	}
	if len(f) == 0 {
		return nil
	}
	if c.Family != FamilyBroker {
		detail += c.Snap.yourAccounts()
	}
	return refuse(code, detail, f...)
}

// checkDuplicateFollowers refuses (409 duplicate_follower) a follower that
// repeats an earlier one or is the leader, pointing at each.
func checkDuplicateFollowers(c *Change[protocol.Copier], _ []*protocol.Copier) *httpapi.Error {
	v := c.New
	var f []httpapi.FieldError
	seen := make(map[string]bool, len(v.Followers))
	for i, fl := range v.Followers {
		if fl.Account == v.Leader || seen[fl.Account] {
			f = append(f, httpapi.FieldError{Path: path("followers", i, "account"), Code: errcode.DuplicateFollower})
		}
		seen[fl.Account] = true
	}
	if len(f) == 0 {
		return nil
	}
	return refuse(errcode.DuplicateFollower, "a follower appears twice or is the leader", f...)
}

// copyGraph is the directed graph of leader → follower edges.
type copyGraph map[string][]string

// addCopier adds the edges of one copier.
func (g copyGraph) addCopier(v *protocol.Copier) {
	for _, fl := range v.Followers {
		g[v.Leader] = append(g[v.Leader], fl.Account)
	}
}

// hasCycle reports whether the graph holds a cycle (a self-edge
// included).
func (g copyGraph) hasCycle() bool {
	const (
		unseen = iota
		open
		done
	)
	color := make(map[string]int, len(g))
	type frame struct {
		node string
		next int
	}
	for start := range g {
		if color[start] != unseen {
			continue
		}
		stack := []frame{{node: start}}
		color[start] = open
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == len(g[top.node]) {
				color[top.node] = done
				stack = stack[:len(stack)-1]
				continue
			}
			to := g[top.node][top.next]
			top.next++
			switch color[to] {
			case open:
				return true
			case unseen:
				color[to] = open
				stack = append(stack, frame{node: to})
			}
		}
	}
	return false
}

// reaches reports whether a path leads from one account to another (or
// whether they are the same).
func (g copyGraph) reaches(from, to string) bool {
	seen := map[string]bool{from: true}
	queue := []string{from}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == to {
			return true
		}
		for _, m := range g[n] {
			if !seen[m] {
				seen[m] = true
				queue = append(queue, m)
			}
		}
	}
	return false
}

// checkCopierCycle refuses (409 copier_cycle) a change after which the
// leader → follower edges of all the user's copiers, active or not, hold
// a cycle. fields point at the copier's followers whose edge lies on a
// cycle (none when the cycle runs through other copiers only).
func checkCopierCycle(c *Change[protocol.Copier], others []*protocol.Copier) *httpapi.Error {
	g := copyGraph{}
	for _, o := range others {
		g.addCopier(o)
	}
	g.addCopier(c.New)
	if !g.hasCycle() {
		return nil
	}
	var f []httpapi.FieldError
	for i, fl := range c.New.Followers {
		if g.reaches(fl.Account, c.New.Leader) {
			f = append(f, httpapi.FieldError{Path: path("followers", i, "account"), Code: errcode.CopierCycle})
		}
	}
	return refuse(errcode.CopierCycle, "the copiers would copy in a loop; inactive copiers count", f...)
}

// rootSet is a set of instrument roots, or every root.
type rootSet struct {
	all   bool
	roots map[string]bool
}

// overlaps reports whether two sets share a root (every root shares all).
func (a rootSet) overlaps(b rootSet) bool {
	if a.all || b.all {
		return true
	}
	for r := range a.roots {
		if b.roots[r] {
			return true
		}
	}
	return false
}

// leaderRoots are the roots the copier copies from its leader: its
// instruments, or every root when the list is empty.
func leaderRoots(v *protocol.Copier) rootSet {
	if len(v.Instruments) == 0 {
		return rootSet{all: true}
	}
	s := rootSet{roots: make(map[string]bool, len(v.Instruments))}
	for _, r := range v.Instruments {
		s.roots[strings.ToUpper(r)] = true
	}
	return s
}

// followerRoots are the roots the copier trades on its followers: its
// instruments after its symbol replacements, or every root when the list
// is empty.
func followerRoots(v *protocol.Copier) rootSet {
	if len(v.Instruments) == 0 {
		return rootSet{all: true}
	}
	s := rootSet{roots: make(map[string]bool, len(v.Instruments))}
	for _, r := range v.Instruments {
		r = strings.ToUpper(r)
		for _, rep := range v.SymbolReplacements {
			if strings.EqualFold(rep.From, r) {
				r = strings.ToUpper(rep.To)
				break
			}
		}
		s.roots[r] = true
	}
	return s
}

// hasFollower reports whether the copier copies to the account.
func hasFollower(v *protocol.Copier, account string) bool {
	for _, fl := range v.Followers {
		if fl.Account == account {
			return true
		}
	}
	return false
}

// conflictingFollowers returns, with the error code, a field for each of
// the copier's followers that some other copier conflicts on by rule.
func conflictingFollowers(c *Change[protocol.Copier], others []*protocol.Copier, code string,
	rule func(v, o *protocol.Copier) bool) []httpapi.FieldError {
	var f []httpapi.FieldError
	for i, fl := range c.New.Followers {
		for _, o := range others {
			if hasFollower(o, fl.Account) && rule(c.New, o) {
				f = append(f, httpapi.FieldError{Path: path("followers", i, "account"), Code: code})
				break
			}
		}
	}
	return f
}

// checkDuplicateCopier refuses (409 duplicate_copier) a copier when
// another copier of the same leader, active or not, copies to a common
// follower instruments that overlap (an empty list is every instrument).
func checkDuplicateCopier(c *Change[protocol.Copier], others []*protocol.Copier) *httpapi.Error {
	f := conflictingFollowers(c, others, errcode.DuplicateCopier, func(v, o *protocol.Copier) bool {
		return o.Leader == v.Leader && leaderRoots(v).overlaps(leaderRoots(o))
	})
	if len(f) == 0 {
		return nil
	}
	return refuse(errcode.DuplicateCopier,
		"another copier from this leader already copies these instruments to this follower, even if inactive", f...)
}

// checkAutoSyncConflict refuses (409 autosync_conflict) an Auto-Sync
// copier when another Auto-Sync copier, active or not, trades a common
// follower in an overlapping instrument (after symbol replacements).
func checkAutoSyncConflict(c *Change[protocol.Copier], others []*protocol.Copier) *httpapi.Error {
	if !c.New.AutoSync {
		return nil
	}
	f := conflictingFollowers(c, others, errcode.AutosyncConflict, func(v, o *protocol.Copier) bool {
		return o.AutoSync && followerRoots(v).overlaps(followerRoots(o))
	})
	if len(f) == 0 {
		return nil
	}
	return refuse(errcode.AutosyncConflict,
		"two Auto-Sync copiers would manage the same follower and instrument", f...)
}

// checkFollowerConflict refuses (409 follower_conflict) a copier when a
// copier of another leader, active or not, trades a common follower in an
// overlapping instrument (after symbol replacements) and either exactly
// one of the two uses Auto-Sync (its realignment would undo the other's
// trades) or their copy modes differ (one would mirror orders the other
// turns into market orders).
func checkFollowerConflict(c *Change[protocol.Copier], others []*protocol.Copier) *httpapi.Error {
	f := conflictingFollowers(c, others, errcode.FollowerConflict, func(v, o *protocol.Copier) bool {
		return o.Leader != v.Leader && followerRoots(v).overlaps(followerRoots(o)) &&
			(v.AutoSync != o.AutoSync || v.CopyMode != o.CopyMode)
	})
	if len(f) == 0 {
		return nil
	}
	return refuse(errcode.FollowerConflict,
		"a follower is already used by another copier in a conflicting way", f...)
}

// checkTandemMonitors refuses (409 tandem_requires_monitor) a Tandem
// copier with a follower that has no monitor, pointing at each.
func checkTandemMonitors(c *Change[protocol.Copier], _ []*protocol.Copier) *httpapi.Error {
	if !c.New.Tandem {
		return nil
	}
	var f []httpapi.FieldError
	for i, fl := range c.New.Followers {
		if c.Snap.MonitorOf(fl.Account) == nil {
			f = append(f, httpapi.FieldError{Path: path("followers", i, "account"), Code: errcode.TandemRequiresMonitor})
		}
	}
	if len(f) == 0 {
		return nil
	}
	return refuse(errcode.TandemRequiresMonitor, "Tandem needs a monitor on every follower", f...)
}
