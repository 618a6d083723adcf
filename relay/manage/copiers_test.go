package manage

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// cpAccounts are the accounts on the test user's platform connections.
var cpAccounts = []string{"A", "B", "C", "D", "E", "F", "G", "H"}

// cpSnap returns a snapshot holding cpAccounts, a monitor on each of
// monitored, and the copiers.
func cpSnap(monitored []string, copiers ...protocol.Copier) *Snapshot {
	s := &Snapshot{
		Connections: []protocol.Connection{{Name: "c1", Accounts: cpAccounts[:4]}, {Name: "c2", Accounts: cpAccounts[4:]}},
		Copiers:     copiers,
	}
	for _, a := range monitored {
		s.Monitors = append(s.Monitors, protocol.Monitor{Account: a})
	}
	return s
}

// cpCopier returns a valid copier from leader to followers, with the id.
func cpCopier(id, leader string, followers ...string) protocol.Copier {
	v := defaultCopier()
	v.ID = id
	v.Leader = leader
	for _, f := range followers {
		v.Followers = append(v.Followers, protocol.Follower{Account: f})
	}
	return v
}

// cpWith returns v changed by fn.
func cpWith(v protocol.Copier, fn func(*protocol.Copier)) protocol.Copier {
	fn(&v)
	return v
}

// cpCreate is a create of v against snap.
func cpCreate(v protocol.Copier, snap *Snapshot) *Change[protocol.Copier] {
	return &Change[protocol.Copier]{Op: OpCreate, New: &v, Snap: snap, Now: time.Now(), Family: "desktop"}
}

// cpPatch is a patch of old into v against snap.
func cpPatch(old, v protocol.Copier, snap *Snapshot) *Change[protocol.Copier] {
	return &Change[protocol.Copier]{Op: OpPatch, Old: &old, New: &v, Snap: snap, Now: time.Now(), Family: "desktop"}
}

// cpRequireErr checks err's status, code and fields.
func cpRequireErr(t *testing.T, err *httpapi.Error, code string, fields []httpapi.FieldError) {
	t.Helper()
	if code == "" {
		require.Nil(t, err)
		return
	}
	require.NotNil(t, err)
	require.Equal(t, code, err.Code)
	require.Equal(t, errcode.Status(code), err.Status)
	require.NotEmpty(t, err.Detail)
	require.Equal(t, fields, err.Fields)
}

// cpFE is a field error.
func cpFE(p, code string) httpapi.FieldError { return httpapi.FieldError{Path: p, Code: code} }

// cpFELimit is a field error with a limit.
func cpFELimit(p, code string, limit any) httpapi.FieldError {
	return httpapi.FieldError{Path: p, Code: code, Limit: limit}
}

func TestCopierKindDeclaration(t *testing.T) {
	t.Parallel()
	k := copierKind
	require.Equal(t, "copier", k.Name)
	require.Equal(t, "desktop/copiers", k.Path)
	require.False(t, k.Singleton)
	require.ElementsMatch(t, []string{"leader", "followers"}, k.Required)
	require.ElementsMatch(t, []string{"state", "haltedReason", "haltedAt"}, k.ReadOnly)
	require.Empty(t, k.Immutable)
	require.True(t, k.NeedsAgent)
	require.Equal(t, 50, k.MaxCount)
	require.Equal(t, errcode.LimitReached, k.LimitCode)
	require.NotNil(t, k.Derive)
	require.NotNil(t, k.Validate)
	require.NotNil(t, k.Check)
	require.Nil(t, k.Guard)

	d := k.Default()
	require.False(t, d.Active)
	require.Equal(t, 1.0, d.Sizing.Ratio)
	require.Equal(t, protocol.CopyModeOrder, d.CopyMode)
	require.False(t, d.AutoSync)
	require.Zero(t, d.AutoSyncSeconds)
	require.False(t, d.Tandem)
	require.Equal(t, protocol.CopierOff, d.State)
	require.NotNil(t, d.Followers)
	require.NotNil(t, d.Instruments)
	require.NotNil(t, d.SymbolReplacements)

	v := cpCopier("cpr_1", "A", "B")
	require.Same(t, &v.Meta, k.Meta(&v))
}

func TestDeriveCopier(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		active bool
		reason string
		want   string
	}{
		{"off", false, "", protocol.CopierOff},
		{"off wins over a halt", false, "monitor stopped", protocol.CopierOff},
		{"running", true, "", protocol.CopierRunning},
		{"halted", true, "monitor stopped", protocol.CopierHalted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := protocol.Copier{Active: tt.active, HaltedReason: tt.reason, State: "junk"}
			deriveCopier(&v, &Snapshot{})
			require.Equal(t, tt.want, v.State)
			require.NotNil(t, v.Followers)
			require.NotNil(t, v.Instruments)
			require.NotNil(t, v.SymbolReplacements)
		})
	}
}

func TestValidateCopier(t *testing.T) {
	t.Parallel()
	base := cpCopier("", "A", "B", "C")
	ratio := func(r float64) *protocol.Sizing { return &protocol.Sizing{Ratio: r} }
	followers := func(n int) []protocol.Follower {
		fs := make([]protocol.Follower, n)
		for i := range fs {
			fs[i].Account = fmt.Sprintf("F%d", i)
		}
		return fs
	}
	roots := func(n int) []string {
		rs := make([]string, n)
		for i := range rs {
			rs[i] = fmt.Sprintf("R%d", i)
		}
		return rs
	}
	pairs := func(n int) []protocol.SymbolReplacement {
		rs := make([]protocol.SymbolReplacement, n)
		for i := range rs {
			rs[i] = protocol.SymbolReplacement{From: "ES", To: "MES"}
		}
		return rs
	}
	vf := errcode.ValidationFailed
	ir := errcode.InvalidReplacement
	tests := []struct {
		name   string
		change func(*protocol.Copier)
		code   string
		fields []httpapi.FieldError
	}{
		{"valid", func(*protocol.Copier) {}, "", nil},
		{"leader empty", func(v *protocol.Copier) { v.Leader = "" }, vf,
			[]httpapi.FieldError{cpFE("leader", errcode.FieldCodeRequired)}},
		{"no follower", func(v *protocol.Copier) { v.Followers = nil }, vf,
			[]httpapi.FieldError{cpFELimit("followers", errcode.FieldCodeGreaterThanEqual, 1)}},
		{"20 followers", func(v *protocol.Copier) { v.Followers = followers(20) }, "", nil},
		{"21 followers", func(v *protocol.Copier) { v.Followers = followers(21) }, vf,
			[]httpapi.FieldError{cpFELimit("followers", errcode.FieldCodeLessThanEqual, 20)}},
		{"follower account empty", func(v *protocol.Copier) { v.Followers[1].Account = "" }, vf,
			[]httpapi.FieldError{cpFE("followers.1.account", errcode.FieldCodeRequired)}},
		{"copier ratio off the grid", func(v *protocol.Copier) { v.Sizing.Ratio = 1.1 }, vf,
			[]httpapi.FieldError{cpFE("sizing.ratio", errcode.FieldCodeRatioNotAStep)}},
		{"copier ratio zero", func(v *protocol.Copier) { v.Sizing.Ratio = 0 }, vf,
			[]httpapi.FieldError{cpFE("sizing.ratio", errcode.FieldCodeRatioNotAStep)}},
		{"copier ratio on the grid", func(v *protocol.Copier) { v.Sizing.Ratio = 1.75 }, "", nil},
		{"follower ratio off the grid", func(v *protocol.Copier) { v.Followers[0].Sizing = ratio(11) }, vf,
			[]httpapi.FieldError{cpFE("followers.0.sizing.ratio", errcode.FieldCodeRatioNotAStep)}},
		{"follower ratio on the grid", func(v *protocol.Copier) { v.Followers[0].Sizing = ratio(10) }, "", nil},
		{"follower without sizing", func(v *protocol.Copier) { v.Followers[0].Sizing = nil }, "", nil},
		{"instrument not a root", func(v *protocol.Copier) { v.Instruments = []string{"ES", "E-S", "TOOLONG"} }, vf,
			[]httpapi.FieldError{
				{Path: "instruments.1", Code: errcode.FieldCodeStringPatternMismatch, Pattern: rootPattern},
				{Path: "instruments.2", Code: errcode.FieldCodeStringPatternMismatch, Pattern: rootPattern},
			}},
		{"50 instruments", func(v *protocol.Copier) { v.Instruments = roots(50) }, "", nil},
		{"51 instruments", func(v *protocol.Copier) { v.Instruments = roots(51) }, vf,
			[]httpapi.FieldError{cpFELimit("instruments", errcode.FieldCodeLessThanEqual, 50)}},
		{"instrument repeated in another case", func(v *protocol.Copier) { v.Instruments = []string{"ES", "NQ", "es"} }, vf,
			[]httpapi.FieldError{cpFE("instruments.2", errcode.FieldCodeDuplicateItem)}},
		{"copy mode unknown", func(v *protocol.Copier) { v.CopyMode = "mirror" }, vf,
			[]httpapi.FieldError{{Path: "copyMode", Code: errcode.FieldCodeNotAllowed, Allowed: []string{"order", "execution"}}}},
		{"copy mode empty", func(v *protocol.Copier) { v.CopyMode = "" }, vf,
			[]httpapi.FieldError{{Path: "copyMode", Code: errcode.FieldCodeNotAllowed, Allowed: []string{"order", "execution"}}}},
		{"copy mode execution", func(v *protocol.Copier) { v.CopyMode = protocol.CopyModeExecution }, "", nil},
		{"autoSync without seconds", func(v *protocol.Copier) { v.AutoSync = true }, vf,
			[]httpapi.FieldError{cpFE("autoSyncSeconds", errcode.FieldCodeRequiredWhenEnabled)}},
		{"autoSync off without seconds", func(v *protocol.Copier) { v.AutoSyncSeconds = 0 }, "", nil},
		{"autoSync 1 second", func(v *protocol.Copier) { v.AutoSync, v.AutoSyncSeconds = true, 1 }, vf,
			[]httpapi.FieldError{cpFELimit("autoSyncSeconds", errcode.FieldCodeOutOfRange, 3)}},
		{"autoSync 2 seconds", func(v *protocol.Copier) { v.AutoSync, v.AutoSyncSeconds = true, 2 }, vf,
			[]httpapi.FieldError{cpFELimit("autoSyncSeconds", errcode.FieldCodeOutOfRange, 3)}},
		{"autoSync negative", func(v *protocol.Copier) { v.AutoSync, v.AutoSyncSeconds = true, -1 }, vf,
			[]httpapi.FieldError{cpFELimit("autoSyncSeconds", errcode.FieldCodeOutOfRange, 3)}},
		{"autoSync 3 seconds", func(v *protocol.Copier) { v.AutoSync, v.AutoSyncSeconds = true, 3 }, "", nil},
		{"autoSync 3600 seconds", func(v *protocol.Copier) { v.AutoSync, v.AutoSyncSeconds = true, 3600 }, "", nil},
		{"autoSync 3601 seconds", func(v *protocol.Copier) { v.AutoSync, v.AutoSyncSeconds = true, 3601 }, vf,
			[]httpapi.FieldError{cpFELimit("autoSyncSeconds", errcode.FieldCodeLessThanEqual, 3600)}},
		{"autoSync off, seconds out of range", func(v *protocol.Copier) { v.AutoSyncSeconds = 2 }, vf,
			[]httpapi.FieldError{cpFELimit("autoSyncSeconds", errcode.FieldCodeOutOfRange, 3)}},
		{"autoSync off, seconds kept", func(v *protocol.Copier) { v.AutoSyncSeconds = 30 }, "", nil},
		{"every field at fault at once", func(v *protocol.Copier) {
			v.Leader = ""
			v.Followers[0].Account = ""
			v.Sizing.Ratio = 0.3
			v.CopyMode = "x"
			v.AutoSync = true
		}, vf, []httpapi.FieldError{
			cpFE("leader", errcode.FieldCodeRequired),
			cpFE("followers.0.account", errcode.FieldCodeRequired),
			cpFE("sizing.ratio", errcode.FieldCodeRatioNotAStep),
			{Path: "copyMode", Code: errcode.FieldCodeNotAllowed, Allowed: []string{"order", "execution"}},
			cpFE("autoSyncSeconds", errcode.FieldCodeRequiredWhenEnabled),
		}},
		{"20 replacements", func(v *protocol.Copier) {
			v.SymbolReplacements = nil
			for _, from := range replacementRoots {
				v.SymbolReplacements = append(v.SymbolReplacements,
					protocol.SymbolReplacement{From: from, To: replacementPartner[from]})
			}
		}, "", nil},
		{"21 replacements", func(v *protocol.Copier) { v.SymbolReplacements = pairs(21) }, vf,
			[]httpapi.FieldError{cpFELimit("symbolReplacements", errcode.FieldCodeLessThanEqual, 20)}},
		{"replacement count before pairs", func(v *protocol.Copier) { v.SymbolReplacements = pairs(21); v.Leader = "" }, vf,
			[]httpapi.FieldError{cpFE("leader", errcode.FieldCodeRequired), cpFELimit("symbolReplacements", errcode.FieldCodeLessThanEqual, 20)}},
		{"replacement lower case", func(v *protocol.Copier) {
			v.SymbolReplacements = []protocol.SymbolReplacement{{From: "es", To: "mes"}, {From: "M2K", To: "rty"}}
		}, "", nil},
		{"replacement other underlying", func(v *protocol.Copier) {
			v.SymbolReplacements = []protocol.SymbolReplacement{{From: "ES", To: "NQ"}}
		}, ir, []httpapi.FieldError{{Path: "symbolReplacements.0.to", Code: errcode.FieldCodeNotAllowed, Allowed: []string{"MES"}}}},
		{"replacement onto itself", func(v *protocol.Copier) {
			v.SymbolReplacements = []protocol.SymbolReplacement{{From: "NQ", To: "MNQ"}, {From: "MCL", To: "mcl"}}
		}, ir, []httpapi.FieldError{{Path: "symbolReplacements.1.to", Code: errcode.FieldCodeNotAllowed, Allowed: []string{"CL"}}}},
		{"replacement of an unknown root onto itself", func(v *protocol.Copier) {
			v.SymbolReplacements = []protocol.SymbolReplacement{{From: "ZB", To: "ZB"}}
		}, ir, []httpapi.FieldError{
			{Path: "symbolReplacements.0.from", Code: errcode.FieldCodeNotAllowed, Allowed: replacementRoots},
			cpFE("symbolReplacements.0.to", errcode.FieldCodeNotAllowed),
		}},
		{"replacement from an unknown root", func(v *protocol.Copier) {
			v.SymbolReplacements = []protocol.SymbolReplacement{{From: "", To: "MES"}}
		}, ir, []httpapi.FieldError{{Path: "symbolReplacements.0.from", Code: errcode.FieldCodeNotAllowed, Allowed: replacementRoots}}},
		{"replacement from repeated", func(v *protocol.Copier) {
			v.SymbolReplacements = []protocol.SymbolReplacement{{From: "ES", To: "MES"}, {From: "GC", To: "MGC"}, {From: "es", To: "MES"}}
		}, ir, []httpapi.FieldError{cpFE("symbolReplacements.2.from", errcode.FieldCodeDuplicateItem)}},
		{"replacement both ways", func(v *protocol.Copier) {
			v.SymbolReplacements = []protocol.SymbolReplacement{{From: "ES", To: "MES"}, {From: "MES", To: "ES"}}
		}, "", nil},
		{"validation before replacements", func(v *protocol.Copier) {
			v.Leader = ""
			v.SymbolReplacements = []protocol.SymbolReplacement{{From: "ES", To: "NQ"}}
		}, vf, []httpapi.FieldError{cpFE("leader", errcode.FieldCodeRequired)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := cpWith(base, func(v *protocol.Copier) {
				v.Followers = append([]protocol.Follower(nil), base.Followers...)
				tt.change(v)
			})
			cpRequireErr(t, validateCopier(cpCreate(v, cpSnap(nil))), tt.code, tt.fields)
		})
	}
}

func TestValidateCopierEveryPair(t *testing.T) {
	t.Parallel()
	pairs := [][2]string{{"ES", "MES"}, {"NQ", "MNQ"}, {"YM", "MYM"}, {"RTY", "M2K"}, {"CL", "MCL"}, {"GC", "MGC"}}
	for _, p := range pairs {
		for _, dir := range [][2]string{{p[0], p[1]}, {p[1], p[0]}} {
			v := cpWith(cpCopier("", "A", "B"), func(v *protocol.Copier) {
				v.SymbolReplacements = []protocol.SymbolReplacement{{From: dir[0], To: dir[1]}}
			})
			require.Nil(t, validateCopier(cpCreate(v, cpSnap(nil))), "%s→%s", dir[0], dir[1])
		}
		for _, q := range pairs {
			if q == p {
				continue
			}
			v := cpWith(cpCopier("", "A", "B"), func(v *protocol.Copier) {
				v.SymbolReplacements = []protocol.SymbolReplacement{{From: p[0], To: q[1]}}
			})
			err := validateCopier(cpCreate(v, cpSnap(nil)))
			require.NotNil(t, err, "%s→%s", p[0], q[1])
			require.Equal(t, errcode.InvalidReplacement, err.Code)
		}
	}
}

func TestCopierRatioGrid(t *testing.T) {
	t.Parallel()
	want := map[float64]bool{}
	for k := 1; k <= 7; k++ {
		want[float64(k)*0.25] = true
	}
	for k := 2; k <= 10; k++ {
		want[float64(k)] = true
	}
	require.Len(t, want, 16)
	// Every hundredth from -1 to 12, computed as a division so that the
	// values are the nearest doubles, as JSON decoding gives them.
	for k := -100; k <= 1200; k++ {
		r := float64(k) / 100
		require.Equal(t, want[r], validRatio(r), "ratio %v", r)
	}
	for _, r := range []float64{0.125, 1.875, 2.25, 9.5, 10.25, 1e300, -0.25} {
		require.False(t, validRatio(r), "ratio %v", r)
	}
	for r := range want {
		v := cpWith(cpCopier("", "A", "B"), func(v *protocol.Copier) {
			v.Sizing.Ratio = r
			v.Followers[0].Sizing = &protocol.Sizing{Ratio: r}
		})
		require.Nil(t, validateCopier(cpCreate(v, cpSnap(nil))), "ratio %v", r)
	}
}

func TestValidateCopierNormalizes(t *testing.T) {
	t.Parallel()
	v := cpWith(cpCopier("", "A", "B"), func(v *protocol.Copier) {
		v.Instruments = []string{"es", "Mnq"}
		v.SymbolReplacements = []protocol.SymbolReplacement{{From: "es", To: "Mes"}}
		v.Active = true
	})
	c := cpCreate(v, cpSnap(nil))
	require.Nil(t, validateCopier(c))
	require.Equal(t, []string{"ES", "MNQ"}, c.New.Instruments)
	require.Equal(t, []protocol.SymbolReplacement{{From: "ES", To: "MES"}}, c.New.SymbolReplacements)
	require.Equal(t, protocol.CopierRunning, c.New.State)
	require.Equal(t, "A", c.New.Leader, "accounts keep their case")

	shared := []string{"es"}
	reps := []protocol.SymbolReplacement{{From: "es", To: "mes"}}
	old := cpWith(cpCopier("cpr_1", "A", "B"), func(v *protocol.Copier) { v.Instruments, v.SymbolReplacements = shared, reps })
	c = cpPatch(old, old, cpSnap(nil))
	require.Nil(t, validateCopier(c))
	require.Equal(t, []string{"ES"}, c.New.Instruments)
	require.Equal(t, []string{"es"}, shared, "the stored copier's lists are not changed")
	require.Equal(t, "es", reps[0].From, "the stored copier's lists are not changed")

	bare := protocol.Copier{Leader: "A", Followers: []protocol.Follower{{Account: "B"}}, Sizing: protocol.Sizing{Ratio: 1}, CopyMode: "order"}
	c = cpCreate(bare, cpSnap(nil))
	require.Nil(t, validateCopier(c))
	require.NotNil(t, c.New.Instruments)
	require.NotNil(t, c.New.SymbolReplacements)
	require.Equal(t, protocol.CopierOff, c.New.State)
}

func TestValidateCopierClearsHaltWhenTurnedOn(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 2, 15, 4, 0, 0, time.UTC)
	halted := func(active bool) protocol.Copier {
		return cpWith(cpCopier("cpr_1", "A", "B"), func(v *protocol.Copier) {
			v.Active = active
			v.HaltedReason = "follower monitor stopped"
			v.HaltedAt = &at
		})
	}
	tests := []struct {
		name      string
		old       protocol.Copier
		newActive bool
		cleared   bool
		state     string
	}{
		{"off then on restarts", halted(false), true, true, protocol.CopierRunning},
		{"halted and kept on stays halted", halted(true), true, false, protocol.CopierHalted},
		{"halted and turned off shows off", halted(true), false, false, protocol.CopierOff},
		{"off and kept off", halted(false), false, false, protocol.CopierOff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			nv := tt.old
			nv.Active = tt.newActive
			nv.Sizing.Ratio = 2
			c := cpPatch(tt.old, nv, cpSnap(nil))
			require.Nil(t, validateCopier(c))
			require.Equal(t, tt.state, c.New.State)
			if tt.cleared {
				require.Empty(t, c.New.HaltedReason)
				require.Nil(t, c.New.HaltedAt)
			} else {
				require.NotEmpty(t, c.New.HaltedReason)
				require.Equal(t, &at, c.New.HaltedAt)
			}
		})
	}
}

func TestCheckCopier(t *testing.T) {
	t.Parallel()
	on := func(v protocol.Copier) protocol.Copier { v.Active = true; return v }
	off := func(v protocol.Copier) protocol.Copier { v.Active = false; return v }
	instr := func(v protocol.Copier, roots ...string) protocol.Copier { v.Instruments = roots; return v }
	autoSync := func(v protocol.Copier) protocol.Copier { v.AutoSync, v.AutoSyncSeconds = true, 10; return v }
	mode := func(v protocol.Copier, m string) protocol.Copier { v.CopyMode = m; return v }
	tandem := func(v protocol.Copier) protocol.Copier { v.Tandem = true; return v }
	replace := func(v protocol.Copier, from, to string) protocol.Copier {
		v.SymbolReplacements = append(v.SymbolReplacements, protocol.SymbolReplacement{From: from, To: to})
		return v
	}
	fa := func(i int, code string) httpapi.FieldError { return cpFE(fmt.Sprintf("followers.%d.account", i), code) }

	anf, dupF, cyc := errcode.AccountNotFound, errcode.DuplicateFollower, errcode.CopierCycle
	dupC, asc, fc, trm := errcode.DuplicateCopier, errcode.AutosyncConflict, errcode.FollowerConflict, errcode.TandemRequiresMonitor

	tests := []struct {
		name      string
		stored    []protocol.Copier
		monitored []string
		old       *protocol.Copier // a patch when set
		new       protocol.Copier
		code      string
		fields    []httpapi.FieldError
	}{
		// account_not_found
		{name: "accounts known", new: cpCopier("", "A", "B", "H")},
		{name: "leader unknown", new: cpCopier("", "Z", "B"), code: anf,
			fields: []httpapi.FieldError{cpFE("leader", anf)}},
		{name: "followers unknown", new: cpCopier("", "A", "Y", "B", "Z"), code: anf,
			fields: []httpapi.FieldError{fa(0, anf), fa(2, anf)}},
		{name: "account names are case-sensitive", new: cpCopier("", "a", "B"), code: anf,
			fields: []httpapi.FieldError{cpFE("leader", anf)}},

		// duplicate_follower
		{name: "follower repeated", new: cpCopier("", "A", "B", "C", "B"), code: dupF,
			fields: []httpapi.FieldError{fa(2, dupF)}},
		{name: "follower is the leader", new: cpCopier("", "A", "B", "A"), code: dupF,
			fields: []httpapi.FieldError{fa(1, dupF)}},
		{name: "followers distinct", new: cpCopier("", "A", "B", "C", "D")},

		// copier_cycle
		{name: "cycle of 2", stored: []protocol.Copier{cpCopier("c1", "B", "A")},
			new: cpCopier("", "A", "B"), code: cyc, fields: []httpapi.FieldError{fa(0, cyc)}},
		{name: "cycle of 3 through an inactive copier",
			stored: []protocol.Copier{on(cpCopier("c1", "B", "C")), off(cpCopier("c2", "C", "A"))},
			new:    cpCopier("", "A", "D", "B"), code: cyc, fields: []httpapi.FieldError{fa(1, cyc)}},
		{name: "cycle of 4",
			stored: []protocol.Copier{cpCopier("c1", "B", "C"), cpCopier("c2", "C", "D"), cpCopier("c3", "D", "A")},
			new:    cpCopier("", "A", "B"), code: cyc, fields: []httpapi.FieldError{fa(0, cyc)}},
		{name: "chain without cycle",
			stored: []protocol.Copier{cpCopier("c1", "B", "C"), cpCopier("c2", "C", "D")},
			new:    cpCopier("", "A", "B")},
		{name: "two leaders to one follower is no cycle",
			stored: []protocol.Copier{cpCopier("c1", "B", "C")},
			new:    cpCopier("", "A", "C")},
		{name: "patch removing the edge that closed a cycle",
			stored: []protocol.Copier{cpCopier("c1", "B", "A"), cpCopier("c2", "A", "C")},
			old:    cpPtr(cpCopier("c2", "A", "C")), new: cpCopier("c2", "A", "D")},
		{name: "patch adding an edge that closes a cycle",
			stored: []protocol.Copier{cpCopier("c1", "B", "A"), cpCopier("c2", "A", "C")},
			old:    cpPtr(cpCopier("c2", "A", "C")), new: cpCopier("c2", "A", "C", "B"), code: cyc,
			fields: []httpapi.FieldError{fa(1, cyc)}},
		{name: "stored version replaced, not kept",
			stored: []protocol.Copier{cpCopier("c1", "A", "B"), cpCopier("c2", "C", "D")},
			old:    cpPtr(cpCopier("c2", "C", "D")), new: cpCopier("c2", "B", "D")},

		// duplicate_copier
		{name: "same leader and follower, all instruments", stored: []protocol.Copier{off(cpCopier("c1", "A", "B"))},
			new: cpCopier("", "A", "C", "B"), code: dupC, fields: []httpapi.FieldError{fa(1, dupC)}},
		{name: "same leader and follower, common instrument",
			stored: []protocol.Copier{instr(cpCopier("c1", "A", "B"), "ES", "NQ")},
			new:    instr(cpCopier("", "A", "B"), "NQ", "CL"), code: dupC, fields: []httpapi.FieldError{fa(0, dupC)}},
		{name: "same leader and follower, all against some",
			stored: []protocol.Copier{instr(cpCopier("c1", "A", "B"), "ES")},
			new:    cpCopier("", "A", "B"), code: dupC, fields: []httpapi.FieldError{fa(0, dupC)}},
		{name: "same leader and follower, disjoint instruments",
			stored: []protocol.Copier{instr(cpCopier("c1", "A", "B"), "ES")},
			new:    instr(cpCopier("", "A", "B"), "NQ")},
		{name: "same leader, other followers", stored: []protocol.Copier{cpCopier("c1", "A", "B")},
			new: cpCopier("", "A", "C")},
		{name: "patch of itself is no duplicate", stored: []protocol.Copier{cpCopier("c1", "A", "B")},
			old: cpPtr(cpCopier("c1", "A", "B")), new: instr(cpCopier("c1", "A", "B"), "ES")},

		// autosync_conflict
		{name: "two Auto-Sync copiers on one follower",
			stored: []protocol.Copier{off(autoSync(cpCopier("c1", "C", "B")))},
			new:    autoSync(cpCopier("", "A", "D", "B")), code: asc, fields: []httpapi.FieldError{fa(1, asc)}},
		{name: "Auto-Sync after a replacement onto a common root",
			stored: []protocol.Copier{autoSync(instr(cpCopier("c1", "A", "B"), "MES"))},
			new:    autoSync(replace(instr(cpCopier("", "A", "B"), "ES"), "ES", "MES")), code: asc,
			fields: []httpapi.FieldError{fa(0, asc)}},
		{name: "Auto-Sync with a replacement away from the common root",
			stored: []protocol.Copier{autoSync(instr(cpCopier("c1", "C", "B"), "ES"))},
			new:    autoSync(replace(instr(cpCopier("", "A", "B"), "ES"), "ES", "MES"))},
		{name: "two Auto-Sync copiers on disjoint instruments",
			stored: []protocol.Copier{autoSync(instr(cpCopier("c1", "C", "B"), "ES"))},
			new:    autoSync(instr(cpCopier("", "A", "B"), "NQ"))},
		{name: "two Auto-Sync copiers on other followers",
			stored: []protocol.Copier{autoSync(cpCopier("c1", "C", "D"))},
			new:    autoSync(cpCopier("", "A", "B"))},

		// follower_conflict
		{name: "only the new copier uses Auto-Sync",
			stored: []protocol.Copier{cpCopier("c1", "C", "B")},
			new:    autoSync(cpCopier("", "A", "B")), code: fc, fields: []httpapi.FieldError{fa(0, fc)}},
		{name: "only the other copier uses Auto-Sync",
			stored: []protocol.Copier{off(autoSync(cpCopier("c1", "C", "B")))},
			new:    cpCopier("", "A", "D", "B"), code: fc, fields: []httpapi.FieldError{fa(1, fc)}},
		{name: "copy modes differ",
			stored: []protocol.Copier{mode(cpCopier("c1", "C", "B"), protocol.CopyModeExecution)},
			new:    cpCopier("", "A", "B"), code: fc, fields: []httpapi.FieldError{fa(0, fc)}},
		{name: "two leaders with the same mode share a follower",
			stored: []protocol.Copier{cpCopier("c1", "C", "B")},
			new:    cpCopier("", "A", "B")},
		{name: "copy modes differ on disjoint instruments",
			stored: []protocol.Copier{instr(mode(cpCopier("c1", "C", "B"), protocol.CopyModeExecution), "ES")},
			new:    instr(cpCopier("", "A", "B"), "NQ")},
		{name: "copy modes differ on other followers",
			stored: []protocol.Copier{mode(cpCopier("c1", "C", "D"), protocol.CopyModeExecution)},
			new:    cpCopier("", "A", "B")},

		// tandem_requires_monitor
		{name: "Tandem with a follower without monitor", monitored: []string{"B"},
			new: tandem(cpCopier("", "A", "B", "C", "D")), code: trm,
			fields: []httpapi.FieldError{fa(1, trm), fa(2, trm)}},
		{name: "Tandem with a monitor on every follower", monitored: []string{"B", "C"},
			new: tandem(cpCopier("", "A", "B", "C"))},
		{name: "no Tandem needs no monitor", new: cpCopier("", "A", "B", "C")},

		// order of the rules
		{name: "unknown account before duplicate follower", new: cpCopier("", "A", "B", "B", "Z"), code: anf,
			fields: []httpapi.FieldError{fa(2, anf)}},
		{name: "duplicate follower before cycle", stored: []protocol.Copier{cpCopier("c1", "B", "A")},
			new: cpCopier("", "A", "B", "B"), code: dupF, fields: []httpapi.FieldError{fa(1, dupF)}},
		{name: "cycle before duplicate copier",
			stored: []protocol.Copier{cpCopier("c1", "A", "B"), cpCopier("c2", "B", "A")},
			new:    cpCopier("", "A", "B"), code: cyc, fields: []httpapi.FieldError{fa(0, cyc)}},
		{name: "duplicate copier before Auto-Sync conflict",
			stored: []protocol.Copier{autoSync(cpCopier("c1", "A", "B"))},
			new:    autoSync(cpCopier("", "A", "B")), code: dupC, fields: []httpapi.FieldError{fa(0, dupC)}},
		{name: "Auto-Sync conflict before follower conflict",
			stored: []protocol.Copier{autoSync(cpCopier("c1", "C", "B")), cpCopier("c2", "D", "E")},
			new:    autoSync(cpCopier("", "A", "B", "E")), code: asc, fields: []httpapi.FieldError{fa(0, asc)}},
		{name: "follower conflict before Tandem",
			stored: []protocol.Copier{mode(cpCopier("c1", "C", "B"), protocol.CopyModeExecution)},
			new:    tandem(cpCopier("", "A", "B")), code: fc, fields: []httpapi.FieldError{fa(0, fc)}},

		// changes Check never refuses
		{name: "turning off is never refused", stored: []protocol.Copier{on(cpCopier("c1", "A", "Z"))},
			old: cpPtr(on(cpCopier("c1", "A", "Z"))), new: off(cpCopier("c1", "A", "Z"))},
		{name: "an unchanged copier is not judged again", monitored: nil,
			stored: []protocol.Copier{tandem(cpCopier("c1", "A", "B"))},
			old:    cpPtr(tandem(cpCopier("c1", "A", "B"))), new: tandem(cpCopier("c1", "A", "B"))},
		{name: "turning on is judged", stored: []protocol.Copier{cpCopier("c1", "A", "Z")},
			old: cpPtr(cpCopier("c1", "A", "Z")), new: on(cpCopier("c1", "A", "Z")), code: anf,
			fields: []httpapi.FieldError{fa(0, anf)}},
		{name: "turning off with another change is judged", stored: []protocol.Copier{on(cpCopier("c1", "A", "Z"))},
			old: cpPtr(on(cpCopier("c1", "A", "Z"))), new: instr(off(cpCopier("c1", "A", "Z")), "ES"), code: anf,
			fields: []httpapi.FieldError{fa(0, anf)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			snap := cpSnap(tt.monitored, tt.stored...)
			var c *Change[protocol.Copier]
			if tt.old != nil {
				c = cpPatch(*tt.old, tt.new, snap)
			} else {
				c = cpCreate(tt.new, snap)
			}
			require.Nil(t, validateCopier(c), "test copiers must be valid")
			cpRequireErr(t, checkCopier(c), tt.code, tt.fields)
		})
	}
}

func TestCheckCopierDelete(t *testing.T) {
	t.Parallel()
	old := cpCopier("c1", "Z", "Z")
	c := &Change[protocol.Copier]{Op: OpDelete, Old: &old, Snap: cpSnap(nil, old)}
	require.Nil(t, checkCopier(c))
}

func TestCheckCopierWithoutSnapshot(t *testing.T) {
	t.Parallel()
	v := cpCopier("", "A", "B")
	c := &Change[protocol.Copier]{Op: OpCreate, New: &v}
	cpRequireErr(t, checkCopier(c), errcode.AccountNotFound,
		[]httpapi.FieldError{cpFE("leader", errcode.AccountNotFound), cpFE("followers.0.account", errcode.AccountNotFound)})
}

// TestCopierCycles checks cycles of 1 to 4 copiers: the graph finds them
// all, and Check refuses them (a copier copying to its own leader is a
// duplicate follower, found first).
func TestCopierCycles(t *testing.T) {
	t.Parallel()
	ring := []string{"A", "B", "C", "D"}
	for n := 1; n <= 4; n++ {
		t.Run(fmt.Sprintf("length %d", n), func(t *testing.T) {
			t.Parallel()
			var stored []protocol.Copier
			for i := 1; i < n; i++ {
				stored = append(stored, cpCopier(fmt.Sprintf("c%d", i), ring[i], ring[(i+1)%n]))
			}
			closing := cpCopier("", "A", ring[1%n])

			g := copyGraph{}
			for i := range stored {
				g.addCopier(&stored[i])
			}
			require.False(t, g.hasCycle(), "the open chain")
			g.addCopier(&closing)
			require.True(t, g.hasCycle(), "the closed ring")

			c := cpCreate(closing, cpSnap(nil, stored...))
			want := errcode.CopierCycle
			if n == 1 {
				want = errcode.DuplicateFollower
			}
			cpRequireErr(t, checkCopier(c), want, []httpapi.FieldError{cpFE("followers.0.account", want)})

			// Deleting any stored copier of the ring opens it.
			for skip := range stored {
				rest := append(append([]protocol.Copier(nil), stored[:skip]...), stored[skip+1:]...)
				require.Nil(t, checkCopier(cpCreate(closing, cpSnap(nil, rest...))))
			}
		})
	}
}

func TestCopyGraph(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edges [][2]string
		cycle bool
	}{
		{"empty", nil, false},
		{"self edge", [][2]string{{"A", "A"}}, true},
		{"diamond", [][2]string{{"A", "B"}, {"A", "C"}, {"B", "D"}, {"C", "D"}}, false},
		{"diamond closed", [][2]string{{"A", "B"}, {"A", "C"}, {"B", "D"}, {"C", "D"}, {"D", "A"}}, true},
		{"two components, one cyclic", [][2]string{{"A", "B"}, {"C", "D"}, {"D", "E"}, {"E", "C"}}, true},
		{"repeated edge", [][2]string{{"A", "B"}, {"A", "B"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := copyGraph{}
			for _, e := range tt.edges {
				g[e[0]] = append(g[e[0]], e[1])
			}
			require.Equal(t, tt.cycle, g.hasCycle())
		})
	}
	g := copyGraph{"A": {"B"}, "B": {"C"}}
	require.True(t, g.reaches("A", "C"))
	require.True(t, g.reaches("C", "C"))
	require.False(t, g.reaches("C", "A"))
}

func TestCopierInstrumentOverlap(t *testing.T) {
	t.Parallel()
	cp := func(instruments []string, reps ...protocol.SymbolReplacement) *protocol.Copier {
		return &protocol.Copier{Instruments: instruments, SymbolReplacements: reps}
	}
	tests := []struct {
		name           string
		a, b           *protocol.Copier
		leader, follow bool
	}{
		{"both all", cp(nil), cp(nil), true, true},
		{"all and some", cp(nil), cp([]string{"ES"}), true, true},
		{"some and all", cp([]string{"ES"}), cp([]string{}), true, true},
		{"common root", cp([]string{"ES", "NQ"}), cp([]string{"NQ"}), true, true},
		{"case ignored", cp([]string{"es"}), cp([]string{"ES"}), true, true},
		{"disjoint", cp([]string{"ES"}), cp([]string{"NQ"}), false, false},
		{"replaced onto the other's root", cp([]string{"ES"}, protocol.SymbolReplacement{From: "ES", To: "MES"}), cp([]string{"MES"}), false, true},
		{"replaced away from the common root", cp([]string{"ES"}, protocol.SymbolReplacement{From: "ES", To: "MES"}), cp([]string{"ES"}), true, false},
		{"both replaced alike", cp([]string{"ES"}, protocol.SymbolReplacement{From: "ES", To: "MES"}), cp([]string{"ES"}, protocol.SymbolReplacement{From: "ES", To: "MES"}), true, true},
		{"replacement of an uncopied root", cp([]string{"NQ"}, protocol.SymbolReplacement{From: "ES", To: "MES"}), cp([]string{"MES"}), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.leader, leaderRoots(tt.a).overlaps(leaderRoots(tt.b)), "leader side")
			require.Equal(t, tt.leader, leaderRoots(tt.b).overlaps(leaderRoots(tt.a)), "leader side, swapped")
			require.Equal(t, tt.follow, followerRoots(tt.a).overlaps(followerRoots(tt.b)), "follower side")
			require.Equal(t, tt.follow, followerRoots(tt.b).overlaps(followerRoots(tt.a)), "follower side, swapped")
		})
	}
}

func TestCopierRefusalsStatus(t *testing.T) {
	t.Parallel()
	for code, status := range map[string]int{
		errcode.AccountNotFound:       http.StatusNotFound,
		errcode.DuplicateFollower:     http.StatusConflict,
		errcode.CopierCycle:           http.StatusConflict,
		errcode.DuplicateCopier:       http.StatusConflict,
		errcode.AutosyncConflict:      http.StatusConflict,
		errcode.FollowerConflict:      http.StatusConflict,
		errcode.TandemRequiresMonitor: http.StatusConflict,
		errcode.InvalidReplacement:    http.StatusUnprocessableEntity,
		errcode.ValidationFailed:      http.StatusUnprocessableEntity,
	} {
		require.Equal(t, status, errcode.Status(code), code)
	}
}

// cpPtr returns a pointer to a copy of v.
func cpPtr[T any](v T) *T { return &v }
