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
		monitorEditor(manage.FamilyDesktop),
		copierEditor(manage.FamilyBroker),
		monitorEditor(manage.FamilyBroker),
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
			Help: "Copies while checked. To start a halted copier again, turn it off, save, and turn it on."},
		"leader": {Label: "Leader account", Input: InputAccount, Help: "The account whose trades are copied."},
		"followers": {Label: "Followers",
			Help: "The accounts that copy the leader, one per row; a row's own ratio replaces the copier's. An empty row is ignored."},
		"followers.*.account": {Label: "Follower account", Input: InputAccount},
		"followers.*.sizing":  {Label: "Own sizing", Input: InputInline},
		"followers.*.sizing.ratio": {Label: "Ratio", Input: InputSelect,
			Choices: append([]Choice{{Value: "", Label: "The copier's ratio"}}, ratioChoices()...)},
		"followers.*.inverse": {Label: "Inverse", Help: "Buys become sells."},
		"sizing":              {Label: "Sizing", Input: InputInline},
		"sizing.ratio": {Label: "Ratio", Input: InputSelect, Choices: ratioChoices(),
			Help: "Each follower trades the leader's quantity times this, unless its row sets its own."},
		"instruments": {Label: "Instruments", Placeholder: "ES, NQ",
			Help: "The instrument roots to copy, separated by commas. Leave empty to copy every instrument."},
		"symbolReplacements": {Label: "Symbol replacements",
			Help: "Copy a root as its full-size or micro twin (ES as MES, …)."},
		"symbolReplacements.*.from": {Label: "Replace", Input: InputSelect, Choices: rootChoices()},
		"symbolReplacements.*.to":   {Label: "With", Input: InputSelect, Choices: rootChoices()},
		"copyMode": {Label: "Copy mode", Input: InputSelect, Choices: []Choice{
			{Value: protocol.CopyModeOrder, Label: "Mirror orders (order)"},
			{Value: protocol.CopyModeExecution, Label: "Copy fills as market orders (execution)"},
		}, Help: "Mirror every order of the leader with its changes, or copy only its fills."},
		"tandem": {Label: "Tandem",
			Help: "Copies only while every follower's monitor is active (each needs one); a monitor stopping halts the copier."},
		"autoSync": {Label: "Auto-Sync",
			Help: "Keeps each follower's position at the leader's times the ratio."},
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
			{Label: "Ratio", Value: func(m map[string]any) string {
				sz, _ := m["sizing"].(map[string]any)
				return "× " + shownNumber(sz["ratio"])
			}},
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

// dayChoices are the days of a window, Monday first, from the
// Management API's own list.
func dayChoices() []Choice {
	names := map[string]string{"mon": "Mon", "tue": "Tue", "wed": "Wed", "thu": "Thu", "fri": "Fri", "sat": "Sat", "sun": "Sun"}
	out := make([]Choice, 0, len(manage.Days))
	for _, d := range manage.Days {
		out = append(out, Choice{Value: d, Label: or(names[d], d)})
	}
	return out
}

// monitorStates are a monitor's states in words.
func monitorStates(family string) *StateWords {
	sw := &StateWords{Field: "state", Reason: "stoppedReason", At: "stoppedAt",
		Names: map[string]string{
			protocol.MonitorActive:  "Active",
			protocol.MonitorPaused:  "Paused",
			protocol.MonitorStopped: "Stopped",
		},
		Reasons: map[string]string{
			"lossLimit":             "the loss limit was reached",
			"profitTarget":          "the profit target was reached",
			"trailingDrawdown":      "the trailing drawdown was reached",
			"minimumProfitDrawdown": "the P&L fell back to the minimum-profit floor",
			"autoFlattenAt":         "the daily flatten time came",
			"masterWindow":          "outside the trading hours",
			"tradingWindows":        "outside the trading windows",
		},
		Limits: []Choice{{Value: "lossLimit", Label: "Loss limit"}, {Value: "profitTarget", Label: "Profit target"},
			{Value: "trailingDrawdown", Label: "Trailing drawdown"},
			{Value: "minimumProfitDrawdown", Label: "Minimum-profit floor"}},
		Blind: "blind",
		BlindWords: "blind: an open position has no live price, so its unrealized P&L is unknown " +
			"and no P&L limit can trip until prices return",
	}
	if family == manage.FamilyDesktop {
		// The desktop family's monitors run in the agent, which reports
		// their figures (the broker family's run in the relay).
		sw.Pnl = "account"
	}
	return sw
}

// limitWords are the words of a P&L limit's fields at name.
func limitWords(w map[string]Words, name, label, enabled, amount, help string) {
	w[name] = Words{Label: label, Help: help}
	w[name+".enabled"] = Words{Label: enabled}
	w[name+".amount"] = Words{Label: amount, Placeholder: "500"}
}

// windowWords are the words of a weekly window's fields under prefix.
func windowWords(w map[string]Words, prefix string) {
	w[prefix+".days"] = Words{Label: "Days", Input: InputDays, Choices: dayChoices(), Help: "No day checked means every day."}
	w[prefix+".start"] = Words{Label: "From", Input: InputTime, Help: "New York time, on a 5-minute mark."}
	w[prefix+".end"] = Words{Label: "To", Input: InputTime, Help: "Before the start runs past midnight."}
}

// monitorWords are the words of a monitor's fields (both families).
func monitorWords() map[string]Words {
	w := map[string]Words{
		"account": {Label: "Account", Input: InputAccount,
			Help: "The account it watches; one monitor per account, set when it is created."},
		"active": {Label: "On",
			Help: "Watches the account while checked (paused when not). A stopped monitor resumes only with Restart."},
		"includeUnrealized": {Label: "Count open positions", Help: "The session P&L includes the open positions' unrealized P&L."},
		"includeCommission": {Label: "Subtract commission", Help: "The session P&L is counted after commission."},
		"masterWindow": {Label: "Trading hours",
			Help: "Outside these hours the monitor stops trading. Leave the days and times empty for no limit."},
		"tradingWindows": {Label: "Trading windows",
			Help: "Up to 5 more windows, each turned on or off. An empty row is ignored."},
		"tradingWindows.*.enabled": {Label: "On"},
		"closingOnly":              {Label: "Closing only", Help: "Refuses orders that open or add to a position."},
		"closingOnlyAfter": {Label: "Closing only after", Input: InputTime,
			Help: "Turns closing only on at this time each day (New York), strictly inside the trading hours. Leave empty for none."},
		"blockSignals": {Label: "Block signals", Help: "Refuses orders that arrive from the API (bots, TradingView)."},
		"switchesLocked": {Label: "Lock the switches",
			Help: "Freezes Block signals and Closing only until unlocked (in the same save is fine)."},
		"monitorLock": {Label: "Monitor Lock",
			Help: "After a stop, no change is accepted until 5 PM New York time, so a limit cannot be loosened in the heat of the moment."},
		"autoFlattenAt": {Label: "Flatten every day at", Input: InputTime,
			Help: "New York time; leave empty for none."},
		"onTrip": {Label: "When a limit is reached", Input: InputSelect, Choices: []Choice{
			{Value: protocol.OnTripFlatten, Label: "Flatten the account and stop trading"},
			{Value: protocol.OnTripNone, Label: "Stop trading, keep the positions"},
		}},
	}
	limitWords(w, "profitTarget", "Profit target", "Stop at a profit target", "Profit target ($)", "")
	limitWords(w, "lossLimit", "Loss limit", "Stop at a loss limit", "Loss limit ($)",
		"The monitor stops trading when the session P&L falls to minus this amount.")
	limitWords(w, "trailingDrawdown", "Trailing drawdown", "Stop at a trailing drawdown", "Drawdown from the session high ($)",
		"The monitor stops trading when the session P&L falls this far below its session high.")
	w["minimumProfitDrawdown"] = Words{Label: "Minimum-profit drawdown",
		Help: "Keeps a good session from turning into a losing one: once the session P&L has reached the trigger, the monitor stops trading when it falls back to the floor."}
	w["minimumProfitDrawdown.enabled"] = Words{Label: "Stop at a minimum-profit floor"}
	w["minimumProfitDrawdown.trigger"] = Words{Label: "Trigger: session P&L reaches ($)", Placeholder: "300"}
	w["minimumProfitDrawdown.floor"] = Words{Label: "Floor: then stop at ($)", Placeholder: "100",
		Help: "Below the trigger; 0 keeps the session at break-even."}
	windowWords(w, "masterWindow")
	windowWords(w, "tradingWindows.*")
	return w
}

// monitorEditor is the monitors' editor of a family.
func monitorEditor(family string) Editor {
	states := monitorStates(family)
	e := Editor{
		Path:  family + "/monitors",
		Title: "Monitors", Noun: "monitor", Nav: "monitors",
		Intro:    "A monitor watches one account's session P&L and trading hours, and stops its trading at a limit.",
		Words:    monitorWords(),
		Accounts: AccountsDesktop,
		State:    states,
		Actions: []Action{{Name: "restart", Button: "Restart", When: protocol.MonitorStopped,
			Done: "Restarted: the monitor watches the account again.",
			Help: "Resumes the stopped monitor, unless the account is still past a limit."}},
		Columns: []Column{
			{Label: "Account", Value: func(m map[string]any) string { return shownString(m["account"]) }},
			{Label: "On", Value: func(m map[string]any) string { return onOff(m["active"]) }},
			{Label: "State", Value: func(m map[string]any) string {
				st := shownString(m["state"])
				return or(states.Names[st], st)
			}},
			{Label: "Loss limit", Value: func(m map[string]any) string { return limitCell(m["lossLimit"]) }},
			{Label: "Profit target", Value: func(m map[string]any) string { return limitCell(m["profitTarget"]) }},
		},
	}
	if family == manage.FamilyBroker {
		e.Title, e.Noun, e.Nav = "Broker monitors", "broker monitor", "settings"
		e.Accounts = AccountsBroker
		e.Intro = "A broker monitor watches an account of your linked broker login, run by the relay itself."
	}
	return e
}

// limitCell shows a P&L limit in a list: its amount, or off.
func limitCell(v any) string {
	l, _ := v.(map[string]any)
	if on, _ := l["enabled"].(bool); !on {
		return "Off"
	}
	f, err := strconv.ParseFloat(shownNumber(l["amount"]), 64)
	if err != nil {
		return "—"
	}
	return money(f)
}
