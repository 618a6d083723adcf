package dashboard

import (
	"strconv"
	"strings"

	"tradebridge/protocol"
	"tradebridge/relay/manage"
)

// editorTable is every editor of the dashboard, in the Settings index's
// order (see editor.go for what an entry holds).
func editorTable() []Editor {
	return []Editor{
		copierEditor(manage.FamilyDesktop),
		// The account-wide settings and the alert destinations.
		groupEditor(),
		templateEditor(),
		controlsEditor(),
		newsEditor(),
		connectionsEditor(),
		alertEditor(),
	}
}

// ratioChoices are the sizing ratios a copier takes, from the
// Management API's own rule.
func ratioChoices() []Choice {
	var out []Choice
	for _, r := range manage.RatioSteps() {
		s := strconv.FormatFloat(r, 'f', -1, 64)
		out = append(out, Choice{Value: s, Label: "× " + s})
	}
	return out
}

// rootChoices are the roots a symbol replacement may name, each labelled
// with the root it may become.
func rootChoices() []Choice {
	roots, partner := manage.ReplacementRoots()
	out := make([]Choice, 0, len(roots))
	for _, r := range roots {
		out = append(out, Choice{Value: r, Label: r + " (↔ " + partner[r] + ")"})
	}
	return out
}

// copierStates are a copier's states in words.
var copierStates = &StateWords{Field: "state", Reason: "haltedReason", At: "haltedAt",
	Names: map[string]string{
		protocol.CopierRunning: "Running",
		protocol.CopierOff:     "Off",
		protocol.CopierHalted:  "Halted",
	},
}

// copierWords are the words of a copier's fields (both families: the
// broker family's has no copyMode).
func copierWords() map[string]Words {
	return map[string]Words{
		"active": {Label: "On",
			Help: "Copies while this is checked. A halted copier starts again when you turn it off, save, and turn it on."},
		"leader": {Label: "Leader account", Input: InputAccount, Help: "The account whose trades are copied."},
		"followers": {Label: "Followers",
			Help: "The accounts that copy the leader, one per row. An empty row is ignored."},
		"followers.*.account": {Label: "Follower account", Input: InputAccount},
		"followers.*.sizing":  {Label: "Own sizing", Input: InputInline},
		"followers.*.sizing.ratio": {Label: "Ratio", Input: InputSelect,
			Choices: append([]Choice{{Value: "", Label: "The copier's ratio"}}, ratioChoices()...),
			Help:    "Leave at \"The copier's ratio\" to use the ratio below."},
		"followers.*.inverse": {Label: "Inverse", Help: "Copies buys as sells and sells as buys."},
		"sizing":              {Label: "Sizing", Input: InputInline},
		"sizing.ratio": {Label: "Ratio", Input: InputSelect, Choices: ratioChoices(),
			Help: "Each follower trades the leader's quantity times this, unless its row sets its own."},
		"instruments": {Label: "Instruments", Placeholder: "ES, NQ",
			Help: "The instrument roots to copy, separated by commas. Leave empty to copy every instrument."},
		"symbolReplacements": {Label: "Symbol replacements",
			Help: "Copy one root as the other root of the same underlying (ES as MES, …). An empty row is ignored."},
		"symbolReplacements.*.from": {Label: "Replace", Input: InputSelect, Choices: rootChoices()},
		"symbolReplacements.*.to":   {Label: "With", Input: InputSelect, Choices: rootChoices()},
		"copyMode": {Label: "Copy mode", Input: InputSelect, Choices: []Choice{
			{Value: protocol.CopyModeOrder, Label: "Mirror orders (order)"},
			{Value: protocol.CopyModeExecution, Label: "Copy fills as market orders (execution)"},
		}, Help: "Mirror every order of the leader with its changes, or copy only its fills."},
		"tandem": {Label: "Tandem",
			Help: "Copies only while every follower's monitor is active: a follower's monitor stopping halts the copier. Every follower needs a monitor."},
		"autoSync": {Label: "Auto-Sync",
			Help: "Brings each follower's position back in line with the leader's times the ratio, every few seconds."},
		"autoSyncSeconds": {Label: "Auto-Sync every (seconds)", Placeholder: "10",
			Help: "3 to 3600 seconds; needed when Auto-Sync is on."},
	}
}

// copierEditor is the copiers' editor of a family.
func copierEditor(family string) Editor {
	e := Editor{
		Path:  family + "/copiers",
		Title: "Copiers", Noun: "copier", Nav: "copiers",
		Intro:    "A copier copies a leader account's trades to follower accounts, scaled by a ratio.",
		Words:    copierWords(),
		Accounts: AccountsDesktop,
		State:    copierStates,
		Columns: []Column{
			{Label: "Leader", Value: func(m map[string]any) string { return shownString(m["leader"]) }},
			{Label: "Followers", Value: followersCell},
			{Label: "On", Value: func(m map[string]any) string { return onOff(m["active"]) }},
			{Label: "State", Value: func(m map[string]any) string {
				st := shownString(m["state"])
				return or(copierStates.Names[st], st)
			}},
		},
	}
	if family == manage.FamilyBroker {
		e.Title, e.Noun, e.Nav = "Broker copiers", "broker copier", "settings"
		e.Accounts = AccountsBroker
		e.Intro = "A broker copier copies the fills of a leader account of your linked broker login to other accounts of it, as market orders."
		delete(e.Words, "copyMode")
	}
	return e
}

// followersCell lists a copier's followers with their ratios.
func followersCell(m map[string]any) string {
	rows, _ := m["followers"].([]any)
	var out []string
	for _, r := range rows {
		f, _ := r.(map[string]any)
		s := shownString(f["account"])
		if sz, ok := f["sizing"].(map[string]any); ok {
			s += " × " + shownNumber(sz["ratio"])
		}
		if on, _ := f["inverse"].(bool); on {
			s += " (inverse)"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// onOff says a bool of a document.
func onOff(v any) string {
	if on, _ := v.(bool); on {
		return "On"
	}
	return "Off"
}
