package dashboard

import (
	"regexp"
	"strconv"
	"strings"

	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/manage"
)

// errorWords say each error code of the relay in one sentence for a
// trader: what happened and what to do. TestErrorWords pins that every
// code of errcode.All has one.
var errorWords = map[string]string{
	errcode.InvalidJSON:                "The form could not be read. Reload the page and try again.",
	errcode.InvalidField:               "A value has the wrong form. Check the fields and try again.",
	errcode.UnexpectedBody:             "The page sent something it should not. Reload the page and try again.",
	errcode.UnknownParameter:           "The page's address holds something the relay does not take. Open the page from the menu.",
	errcode.InvalidPath:                "The page's address does not name one of your resources. Open it from the list.",
	errcode.InvalidArgument:            "A value is missing or not valid. Check the fields and try again.",
	errcode.InvalidInstrument:          "Write the instrument as ES 12-26, ES (the front month) or ESZ26.",
	errcode.BrokerLoginFailed:          "The broker refused the login details; nothing was stored.",
	errcode.MissingRequiredFields:      "Some required fields are empty.",
	errcode.ProtocolVersionUnsupported: "Your PC's agent is too old for this relay. Update the agent.",
	errcode.Unauthorized:               "Your session ended. Sign in again.",
	errcode.PairingCodeInvalid:         "The pairing code is wrong, expired or already used. Make a new one under Add a PC.",
	errcode.PlanRequired:               "Your plan does not include this feature.",
	errcode.EliteRequired:              "Copiers, monitors and the other settings come with the elite plan.",
	errcode.NotAvailable:               "The relay's operator has not opened the settings for this account.",
	errcode.AddressNotAllowed:          "Requests from this address are not allowed here.",
	errcode.ReadOnlySocket:             "The dashboard's live connection only reads; it cannot change anything.",
	errcode.OriginNotAllowed:           "This form must be sent from the dashboard's own pages.",
	errcode.CSRFTokenInvalid:           "The form expired or was not sent from this session's page. Reload the page and try again.",
	errcode.InsufficientScope:          "This session may read but not change this.",
	errcode.NotFound:                   "It does not exist (any more). Open it again from the list.",
	errcode.MethodNotAllowed:           "The page cannot do that. Reload it and try again.",
	errcode.BodyTimeout:                "The form took too long to arrive. Try again.",
	errcode.PlatformUnavailable:        "The trading platform is not connected to your PC's agent. Connect it and try again.",
	errcode.RequestInProgress:          "The same change is still being made. Wait a moment and reload the page.",
	errcode.AlreadyExists:              "This account already has a monitor. Edit that one instead.",
	errcode.ConcurrentModification:     "Another change of the same kind is being made right now. Try again in a second.",
	errcode.AddonVersionUnsupported:    "Your PC's agent is too old for this change. Update the agent and try again.",
	errcode.AccountIdentityUnresolved:  "An account is not one of the linked broker login's accounts.",
	errcode.TradovateNotLinked:         "Link a broker first: the broker family's copiers and monitors need a linked broker login.",
	errcode.MonitorLocked:              "Monitor Lock is on and this monitor stopped this session: it can be changed again from 5 PM to 6 PM New York time.",
	errcode.MonitorStoppedUseRestart:   "This monitor stopped at a limit; turning it on is not enough. Press Restart to resume it.",
	errcode.MonitorNotStopped:          "This monitor is not stopped, so there is nothing to restart.",
	errcode.WouldRetrip:                "Restarting now would stop the monitor again at once, as the account is still past a limit. Flatten the account or change the limit first.",
	errcode.TandemDependency:           "This account is a follower of a Tandem copier, which needs its monitor. Turn Tandem off on that copier first.",
	errcode.TandemRequiresMonitor:      "Tandem needs a monitor on every follower. Add a monitor for each follower, or turn Tandem off.",
	errcode.CopierCycle:                "The copiers would copy in a loop (an account would copy itself through other copiers, even inactive ones). Remove the follower that closes the loop.",
	errcode.DuplicateCopier:            "Another copier from this leader already copies these instruments to this follower, even if it is off.",
	errcode.DuplicateFollower:          "A follower appears twice, or is the leader itself.",
	errcode.FollowerConflict:           "A follower is already used by another copier in a conflicting way (another copy mode, or Auto-Sync on only one of them).",
	errcode.AutosyncConflict:           "Two Auto-Sync copiers would manage the same follower and instrument.",
	errcode.GroupNameConflict:          "This name is already used by another group or by an account.",
	errcode.GroupLimitReached:          "You have as many account groups as allowed. Delete one first.",
	errcode.TemplateNameConflict:       "An ATM template with this name already exists.",
	errcode.LimitReached:               "You have as many of these as allowed. Delete one first.",
	errcode.FieldLocked:                "This setting is managed by another feature on the account (see the field).",
	errcode.SwitchesLocked:             "The switches are locked: turn \"Lock the switches\" off in the same save to change Block signals or Closing only.",
	errcode.EmailUnavailable:           "This relay sends no email, so an email destination cannot be used. Choose another kind.",
	errcode.PreconditionFailed:         "Someone else changed it since you opened it. Reload the page to see the current values.",
	errcode.BodyTooLarge:               "The form is too large. Remove some rows and try again.",
	errcode.UnsupportedContentType:     "The form was sent in a form the relay does not take. Reload the page and try again.",
	errcode.IdempotencyKeyReused:       "This request was already used for another change. Reload the page and try again.",
	errcode.ValidationFailed:           "Some fields need a change; each says why next to it.",
	errcode.FieldReadOnly:              "The form tried to change a field that cannot be changed. Reload the page and try again.",
	errcode.FieldNotApplicable:         "A field does not apply to the broker's accounts.",
	errcode.ImmutableField:             "A field that is set only when it is created cannot be changed. Delete it and create it again instead.",
	errcode.UseKillSwitchEndpoint:      "The kill switch has its own button at the top of the page.",
	errcode.InvalidReplacement:         "A symbol replacement is not allowed: replace a root only with the other root of the same underlying (ES and MES, NQ and MNQ, …), once.",
	errcode.InvalidAtmConfig:           "The ATM template's settings do not fit together; each field says why.",
	errcode.UpgradeRequired:            "The live connection needs a browser that speaks WebSocket.",
	errcode.RateLimited:                "Too many changes at once. Try again in a few seconds.",
	errcode.TooManyConcurrentRequests:  "Too many changes at once. Try again in a second.",
	errcode.InternalError:              "The relay failed to do it. Try again shortly.",
	errcode.StorageUnavailable:         "The relay cannot save right now; nothing was changed. Try again shortly.",
	errcode.OutcomeUnknown:             "The relay cannot tell whether the change was made. Reload the page to see.",
	errcode.ShuttingDown:               "The relay is restarting. Try again in a moment.",
	errcode.ManagementUnavailable:      "The settings are turned off for maintenance right now. Try again later.",
	errcode.ManagementReadOnly:         "Changes are paused for maintenance right now; you can still look. Try again later.",
	errcode.FamilyUnavailable:          "This part of the settings is turned off for maintenance right now. Try again later.",
	errcode.ManagementBusy:             "The relay is busy right now. Try again in a few seconds.",
	errcode.BrokerUnavailable:          "The broker cannot be reached right now. Try again shortly.",
	errcode.DeadlineExceeded:           "Your PC's agent did not answer in time; the change may not be applied yet. Reload the page to see.",
	errcode.AddonDisconnected:          "Your PC's agent is not connected, and it must be for this change. Start it (or check its connection) and try again.",
	errcode.AccountNotFound:            "An account is not on any of your PC's platform connections.",
	errcode.UnknownFunction:            "Your PC's agent does not know this request. Update the agent.",
	errcode.InvalidFrame:               "The live connection sent a message the relay does not take.",
	errcode.UnknownAction:              "The live connection asked for something the relay does not know.",
	errcode.TooManyInstruments:         "The live connection follows too many instruments.",
}

// errorSentence is a code's sentence; a code without words (an agent's
// own) gets a general one.
func errorSentence(code string) string {
	if s, ok := errorWords[code]; ok {
		return s
	}
	return "The relay refused the change. Reload the page and try again."
}

// fieldErrorWords say an error code of a 409's or 404's fields next to
// the input it points at, where the page's sentence is too long.
var fieldErrorWords = map[string]string{
	errcode.AccountNotFound:           "None of your PC's platform connections has this account.",
	errcode.AccountIdentityUnresolved: "The linked broker login has no such account.",
	errcode.DuplicateFollower:         "This follower appears twice, or is the leader.",
	errcode.CopierCycle:               "Copying to this account would close a loop back to the leader.",
	errcode.DuplicateCopier:           "Another copier from this leader already copies to this account.",
	errcode.FollowerConflict:          "Another copier uses this account in a conflicting way.",
	errcode.AutosyncConflict:          "Another Auto-Sync copier manages this account and instrument.",
	errcode.TandemRequiresMonitor:     "This account has no monitor, which Tandem needs.",
	errcode.FieldReadOnly:             "This cannot be changed.",
	errcode.ImmutableField:            "This is set when it is created and cannot be changed.",
	errcode.FieldNotApplicable:        "This does not apply to the broker's accounts.",
}

// Known patterns of string_pattern_mismatch, in words.
var patternWords = map[string]string{
	manage.TimePattern:   "Enter a time of day on a 5-minute mark, such as 09:30.",
	`^[A-Za-z0-9]{1,6}$`: "Use an instrument root of 1 to 6 letters or digits, such as ES.",
	manage.NamePattern:   "Use 1 to 64 characters that do not start or end with a space.",
	manage.IDPattern:     "This is not an id the relay made.",
}

// fieldCodeWords say each field code of errcode.Fields next to its
// input; TestFieldCodeWords pins that every field code has words.
var fieldCodeWords = map[string]func(fe httpapi.FieldError, f *schemaField) string{
	errcode.FieldCodeRequired: func(httpapi.FieldError, *schemaField) string { return "This is required." },
	errcode.FieldCodeWrongType: func(_ httpapi.FieldError, f *schemaField) string {
		switch {
		case f != nil && (f.typ == tInt):
			return "Enter a whole number, such as 5."
		case f != nil && f.typ == tFloat:
			return "Enter a number, such as 50 or 0.5."
		case f != nil && f.typ == tTime:
			return "Enter a date and a time."
		}
		return "This value is not of the right kind."
	},
	errcode.FieldCodeNotAllowed: func(fe httpapi.FieldError, f *schemaField) string {
		if len(fe.Allowed) == 0 {
			return "This value is not allowed here."
		}
		return "Choose " + orList(choiceLabels(fe.Allowed, f)) + "."
	},
	errcode.FieldCodeStringPatternMismatch: func(fe httpapi.FieldError, _ *schemaField) string {
		if s, ok := patternWords[fe.Pattern]; ok {
			return s
		}
		return "This is not in the expected form."
	},
	errcode.FieldCodeOutOfRange: func(fe httpapi.FieldError, f *schemaField) string {
		if l := limitOf(fe); l != "" {
			return "This is out of range (the bound is " + l + ")."
		}
		return "This is out of range."
	},
	errcode.FieldCodeGreaterThanEqual: func(fe httpapi.FieldError, f *schemaField) string {
		if f != nil && (f.typ == tRows || f.typ == tStrings) {
			return "Give at least " + limitOf(fe) + "."
		}
		return "This must be at least " + limitOf(fe) + "."
	},
	errcode.FieldCodeGreaterThan: func(fe httpapi.FieldError, _ *schemaField) string {
		return "This must be more than " + limitOf(fe) + "."
	},
	errcode.FieldCodeLessThanEqual: func(fe httpapi.FieldError, f *schemaField) string {
		if f != nil && (f.typ == tRows || f.typ == tStrings) {
			return "Give at most " + limitOf(fe) + "."
		}
		return "This must be at most " + limitOf(fe) + "."
	},
	errcode.FieldCodeUnknownField: func(httpapi.FieldError, *schemaField) string {
		return "The relay does not take this field. Reload the page."
	},
	errcode.FieldCodeDuplicateField: func(httpapi.FieldError, *schemaField) string { return "This was given twice." },
	errcode.FieldCodeOneOfRequired: func(httpapi.FieldError, *schemaField) string {
		return "Fill in one of these."
	},
	errcode.FieldCodeRequiredWhenDaysSet: func(httpapi.FieldError, *schemaField) string {
		return "Needed when days are chosen."
	},
	errcode.FieldCodeRequiredWhenEnabled: func(httpapi.FieldError, *schemaField) string {
		return "Needed when this setting is turned on."
	},
	errcode.FieldCodeEmptyWindow: func(httpapi.FieldError, *schemaField) string {
		return "A window cannot start and end at the same time."
	},
	errcode.FieldCodeOutsideWindow: func(httpapi.FieldError, *schemaField) string {
		return "This must fall strictly inside the trading window."
	},
	errcode.FieldCodeWindowsOverlap: func(httpapi.FieldError, *schemaField) string {
		return "This window overlaps another window that is turned on."
	},
	errcode.FieldCodeRatioNotAStep: func(httpapi.FieldError, *schemaField) string {
		return "The ratio must be one of " + ratioSteps() + "."
	},
	errcode.FieldCodeUnknownConnection: func(httpapi.FieldError, *schemaField) string {
		return "None of your PC's platform connections has this name."
	},
	errcode.FieldCodeManagedByControls: func(httpapi.FieldError, *schemaField) string {
		return "The account-wide controls decide this; change it under Controls."
	},
	errcode.FieldCodeDuplicateItem: func(httpapi.FieldError, *schemaField) string {
		return "This appears twice in the list."
	},
	errcode.FieldCodePrivateAddress: func(httpapi.FieldError, *schemaField) string {
		return "This address is on a private network, which the relay does not send to."
	},
}

// ratioSteps lists the ratios a copier takes, in words.
func ratioSteps() string {
	var small, large []string
	for _, r := range manage.RatioSteps() {
		s := strconv.FormatFloat(r, 'f', -1, 64)
		if r < 2 {
			small = append(small, s)
		} else {
			large = append(large, s)
		}
	}
	out := strings.Join(small, ", ")
	if len(large) > 0 {
		out += ", or " + large[0] + " to " + large[len(large)-1] + " in whole steps"
	}
	return out
}

// limitOf is a field error's limit as text.
func limitOf(fe httpapi.FieldError) string {
	switch l := fe.Limit.(type) {
	case float64:
		return strconv.FormatFloat(l, 'f', -1, 64)
	case string:
		return l
	case nil:
		return ""
	case int:
		return strconv.Itoa(l)
	}
	return ""
}

// choiceLabels names allowed values by the field's choices' labels.
func choiceLabels(allowed []string, f *schemaField) []string {
	out := make([]string, 0, len(allowed))
	for _, a := range allowed {
		label := a
		if f != nil {
			for _, c := range f.words.Choices {
				if c.Value == a {
					label = c.Label
				}
			}
		}
		out = append(out, label)
	}
	return out
}

// orList joins "a", "b", "c" as "a, b or c".
func orList(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// indexPath finds the index of a list's item in a field error's path.
var indexPath = regexp.MustCompile(`\.(\d+)$`)

// fieldMessage says a field error in words. An error on one item of a
// text list ("instruments.3") names the item.
func (ed *editor) fieldMessage(fe httpapi.FieldError, doc map[string]any) string {
	f := ed.byPath[schemaPath(fe.Path)]
	if s, ok := f.ownWords(fe.Code); ok {
		return s
	}
	var msg string
	if fn, ok := fieldCodeWords[fe.Code]; ok {
		msg = fn(fe, f)
	} else if s, ok := fieldErrorWords[fe.Code]; ok {
		msg = s
	} else {
		msg = errorSentence(fe.Code)
	}
	if f == nil {
		// An item of a list of strings: say which.
		if m := indexPath.FindStringSubmatch(fe.Path); m != nil {
			parent := ed.byPath[schemaPath(strings.TrimSuffix(fe.Path, m[0]))]
			if parent != nil && parent.typ == tStrings {
				if item, ok := lookup(doc, fe.Path).(string); ok {
					return "\u201c" + item + "\u201d: " + msg
				}
			}
		}
	}
	return msg
}

// ownWords returns the field's own sentence of an error code
// (Words.Errors).
func (f *schemaField) ownWords(code string) (string, bool) {
	if f == nil {
		return "", false
	}
	s, ok := f.words.Errors[code]
	return s, ok
}
