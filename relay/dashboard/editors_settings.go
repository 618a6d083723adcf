package dashboard

import (
	"strconv"
	"strings"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/manage"
)

// The editors of the account-wide settings: account groups, ATM
// templates, the controls, the news lockout and the connection settings
// (see editor.go for what an entry holds).

// nameHelp is the help of a group's or a template's name
// (manage.NamePattern).
const nameHelp = "1 to 64 characters, not starting or ending with a space."

// groupEditor is the account groups' editor.
func groupEditor() Editor {
	return Editor{
		Path:  "desktop/account-groups",
		Title: "Account groups", Noun: "account group", Nav: "settings",
		Intro: "An account group names a set of accounts of your PC's platform or of your linked broker login, " +
			"so that a trade or a flatten can name the group instead of each account.",
		AccountsFrom: "destination",
		Words: map[string]Words{
			"name": {Label: "Name", Placeholder: "Evaluation accounts",
				Help: nameHelp + " It may not be the name of one of your accounts or of another group."},
			"destination": {Label: "Accounts of", Input: InputSelect, Choices: []Choice{
				{Value: protocol.DestinationDesktop, Label: "Your PC's platform"},
				{Value: protocol.DestinationBroker, Label: "Your linked broker login"},
			}, Help: "Set when the group is made; it cannot be changed after."},
			"accounts": {Label: "Accounts", Input: InputAccounts,
				Help: "Check the accounts of the group. When your accounts are not known yet, type them separated by commas."},
		},
		Columns: []Column{
			{Label: "Name", Value: func(m map[string]any) string { return shownString(m["name"]) }},
			{Label: "Accounts of", Value: func(m map[string]any) string {
				if shownString(m["destination"]) == protocol.DestinationBroker {
					return "Broker login"
				}
				return "PC"
			}},
			{Label: "Accounts", Value: func(m map[string]any) string { return strings.Join(shownStrings(m["accounts"]), ", ") }},
		},
	}
}

// tickHelp is the help of a distance in ticks.
var tickHelp = "Up to " + strconv.Itoa(manage.MaxAtmTicks) + " ticks."

// templateEditor is the ATM templates' editor.
func templateEditor() Editor {
	return Editor{
		Path:  "desktop/atm-templates",
		Title: "ATM templates", Noun: "ATM template", Nav: "settings",
		Intro: "An ATM template is a named set of brackets (a stop loss and a profit target per part of the position), " +
			"which your PC installs on the platform for entries that name it.",
		Words: map[string]Words{
			"name":   {Label: "Name", Placeholder: "ES 2 targets", Help: nameHelp + " No other template may have it."},
			"config": {Label: "Settings", Input: InputInline},
			"config.quantity": {Label: "Quantity", Placeholder: "2",
				Help: "The contracts of an entry, 1 to " + strconv.Itoa(manage.MaxAtmQuantity) + ". The brackets' quantities add up to it."},
			"config.timeInForce": {Label: "Time in force", Input: InputSelect, Choices: []Choice{
				{Value: manage.AtmDay, Label: "Day"},
				{Value: manage.AtmGtc, Label: "Good till cancelled (Gtc)"},
			}},
			"config.brackets": {Label: "Brackets",
				Help: "One row per bracket, 1 to " + strconv.Itoa(manage.MaxAtmBrackets) + ": its quantity, its stop loss and its profit target in ticks from the entry. An empty row is ignored.",
				Errors: map[string]string{
					errcode.FieldCodeOutOfRange: "The brackets' quantities must add up to the quantity above.",
					errcode.FieldCodeRequired:   "Give at least one bracket.",
				}},
			"config.brackets.*.quantity":          {Label: "Quantity"},
			"config.brackets.*.stopLossTicks":     {Label: "Stop loss (ticks)", Help: tickHelp},
			"config.brackets.*.profitTargetTicks": {Label: "Profit target (ticks)", Help: tickHelp},
			"config.breakeven": {Label: "Breakeven",
				Help: "Moves the stop to the entry price plus some ticks once the market is some ticks in profit."},
			"config.breakeven.enabled":      {Label: "On"},
			"config.breakeven.triggerTicks": {Label: "When in profit by (ticks)", Help: "Needed when breakeven is on."},
			"config.breakeven.plusTicks":    {Label: "Stop at entry plus (ticks)", Help: "0 puts the stop at the entry price."},
			"config.trailingStop": {Label: "Trailing stop",
				Help: "Once the market is some ticks in profit, trails the stop behind the best price, in steps."},
			"config.trailingStop.enabled":       {Label: "On"},
			"config.trailingStop.triggerTicks":  {Label: "When in profit by (ticks)", Help: "Needed when the trailing stop is on."},
			"config.trailingStop.distanceTicks": {Label: "Distance behind the best price (ticks)", Help: "Needed when the trailing stop is on."},
			"config.trailingStop.stepTicks":     {Label: "Step (ticks)", Help: "Needed when the trailing stop is on."},
		},
		Columns: []Column{
			{Label: "Name", Value: func(m map[string]any) string { return shownString(m["name"]) }},
			{Label: "Quantity", Value: func(m map[string]any) string {
				cfg, _ := m["config"].(map[string]any)
				return shownNumber(cfg["quantity"])
			}},
			{Label: "Brackets", Value: bracketsCell},
		},
	}
}

// bracketsCell lists a template's brackets: quantity, stop and target.
func bracketsCell(m map[string]any) string {
	cfg, _ := m["config"].(map[string]any)
	rows, _ := cfg["brackets"].([]any)
	var out []string
	for _, r := range rows {
		b, _ := r.(map[string]any)
		out = append(out, shownNumber(b["quantity"])+" × stop "+shownNumber(b["stopLossTicks"])+" / target "+shownNumber(b["profitTargetTicks"]))
	}
	return strings.Join(out, "; ")
}

// controlsEditor is the controls' editor; the kill switch keeps its own
// control at the top of every page.
func controlsEditor() Editor {
	return Editor{
		Path:  "controls",
		Title: "Controls", Noun: "controls", Nav: "settings",
		Intro: "Account-wide switches. The kill switch is the red button at the top of every page.",
		Words: map[string]Words{
			"killSwitch": {Label: "Kill switch", Omit: true},
			"flattenOnKill": {Label: "Flatten when the kill switch is turned on",
				Help: "Closes every position and cancels every working order of every account when the kill switch goes on."},
			"blockAllSignals": {Label: "Block all signals",
				Help: "Refuses every new entry from TradingView alerts and the API on every account, until you turn it off."},
		},
	}
}

// impactChoices are a news event's impacts.
var impactChoices = []Choice{
	{Value: manage.ImpactHigh, Label: "High"},
	{Value: manage.ImpactMedium, Label: "Medium"},
	{Value: manage.ImpactLow, Label: "Low"},
}

// newsEditor is the news lockout's editor.
func newsEditor() Editor {
	minutes := strconv.Itoa(manage.MaxNewsMinutes)
	return Editor{
		Path:  "news-lockout",
		Title: "News lockout", Noun: "news lockout", Nav: "settings",
		Intro: "Stops new entries around scheduled news: from some minutes before each event to some minutes after it.",
		Words: map[string]Words{
			"enabled": {Label: "On", Help: "Locks out around the events below while this is checked; it needs at least one event."},
			"events": {Label: "Events",
				Help: "One row per release, at its time in New York. An empty row is ignored."},
			"events.*.at":     {Label: "At (New York time)"},
			"events.*.title":  {Label: "Title", Placeholder: "CPI"},
			"events.*.impact": {Label: "Impact", Input: InputSelect, Choices: impactChoices},
			"minutesBefore": {Label: "Minutes before", Placeholder: "5",
				Help: "0 to " + minutes + ": the lockout starts this long before each event."},
			"minutesAfter": {Label: "Minutes after", Placeholder: "5",
				Help: "0 to " + minutes + ": the lockout ends this long after each event."},
			"roots": {Label: "Instruments", Placeholder: "ES, NQ",
				Help: "The instrument roots locked out, separated by commas. Leave empty to lock out every instrument."},
			"action": {Label: "During the lockout", Input: InputSelect, Choices: []Choice{
				{Value: protocol.NewsBlock, Label: "Refuse new entries (block)"},
				{Value: protocol.NewsFlatten, Label: "Flatten, then refuse new entries (flatten)"},
			}},
		},
	}
}

// connectionsEditor is the connection settings' editor: one row per
// connection the agent reports.
func connectionsEditor() Editor {
	return Editor{
		Path:  "desktop/connection-settings",
		Title: "Connection settings", Noun: "connection settings", Nav: "settings",
		Intro: "How your PC looks after each of the platform's connections. The connections and their accounts are the ones your PC reports.",
		Words: map[string]Words{
			"connections": {Label: "Connections", FixedRows: true,
				Help: "One row per connection your PC's platform reports; start your PC's agent to see them."},
			"connections.*.name":     {Label: "Connection", Input: InputFixed},
			"connections.*.accounts": {Label: "Accounts", Input: InputShown},
			"connections.*.autoReconnect": {Label: "Reconnect automatically",
				Help: "Connects again when the connection drops."},
			"connections.*.dataWatchdogSeconds": {Label: "Reconnect after silent market data (seconds)", Placeholder: "0",
				Help: "0 turns it off; else 5 to 3600: reconnects when no market data came for this long."},
		},
	}
}
