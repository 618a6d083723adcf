package manage

import (
	"regexp"
	"slices"
	"strings"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// NamePattern is the form of the name of an account group or an ATM
// template: 1 to 64 printable characters (letters, marks, numbers,
// punctuation, symbols and the ASCII space), neither starting nor ending
// with a space. It is exactly what unicode.IsPrint accepts.
const NamePattern = `^[\p{L}\p{M}\p{N}\p{P}\p{S}]([\p{L}\p{M}\p{N}\p{P}\p{S} ]{0,62}[\p{L}\p{M}\p{N}\p{P}\p{S}])?$`

// nameRE matches NamePattern.
var nameRE = regexp.MustCompile(NamePattern)

// Limits of an account group.
const (
	// MaxGroups bounds the account groups of a user.
	MaxGroups = 50
	// MaxGroupAccounts bounds the accounts of one group.
	MaxGroupAccounts = 200
)

// groupKind is the account-group kind of the Management API. A group
// names a set of accounts of one destination; it lives in the relay only,
// so a change needs no agent.
var groupKind = &Kind[protocol.AccountGroup]{
	Name:       "account-group",
	Path:       "desktop/account-groups",
	Singleton:  false,
	Required:   []string{"name", "destination"},
	Immutable:  []string{"destination"},
	NeedsAgent: false,
	MaxCount:   MaxGroups,
	LimitCode:  errcode.GroupLimitReached,
	Default:    func() protocol.AccountGroup { return protocol.AccountGroup{Accounts: []string{}} },
	Meta:       func(v *protocol.AccountGroup) *protocol.Meta { return &v.Meta },
	Validate:   validateGroup,
	Check:      checkGroup,
}

// validateGroup checks a group on its own: its name, its destination and
// its accounts (at most MaxGroupAccounts, none twice).
func validateGroup(c *Change[protocol.AccountGroup]) *httpapi.Error {
	g := c.New
	var f fieldErrs
	if !nameRE.MatchString(g.Name) {
		f.pattern("name", NamePattern)
	}
	if g.Destination != protocol.DestinationDesktop && g.Destination != protocol.DestinationBroker {
		f.allowed("destination", protocol.DestinationDesktop, protocol.DestinationBroker)
	}
	if g.Accounts == nil {
		g.Accounts = []string{}
	}
	if len(g.Accounts) > MaxGroupAccounts {
		f.limit("accounts", errcode.FieldCodeLessThanEqual, MaxGroupAccounts)
	} else {
		seen := make(map[string]bool, len(g.Accounts))
		for i, a := range g.Accounts {
			if seen[a] {
				f.add(path("accounts", i), errcode.FieldCodeDuplicateItem)
			}
			seen[a] = true
		}
	}
	return f.err()
}

// checkGroup judges a group against the user's other resources: its name
// against the other groups and the user's accounts (case-insensitively),
// then its accounts against the destination's accounts.
func checkGroup(c *Change[protocol.AccountGroup]) *httpapi.Error {
	if c.New == nil {
		return nil // deleting is never refused
	}
	g, s := c.New, c.Snap
	for i := range s.Groups {
		o := &s.Groups[i]
		if o.ID != g.ID && strings.EqualFold(o.Name, g.Name) {
			return refuse(errcode.GroupNameConflict, "another account group has this name")
		}
	}
	// An account that appears after a group was named like it does not
	// stop the group's other changes: account names count when the name
	// is given or changed.
	if c.Old == nil || c.Old.Name != g.Name {
		if groupNameIsAccount(g.Name, s) {
			return refuse(errcode.GroupNameConflict, "an account has this name")
		}
	}
	if g.Destination == protocol.DestinationBroker {
		if !s.BrokerLinked {
			return refuse(errcode.TradovateNotLinked, "link a broker login before grouping its accounts")
		}
		var missing []httpapi.FieldError
		for i, a := range g.Accounts {
			if !slices.Contains(s.BrokerAccounts, a) {
				missing = append(missing, httpapi.FieldError{Path: path("accounts", i), Code: errcode.AccountIdentityUnresolved})
			}
		}
		if len(missing) > 0 {
			return refuse(errcode.AccountIdentityUnresolved, "some accounts are not accounts of the linked broker login; fields lists each", missing...)
		}
		return nil
	}
	var missing []httpapi.FieldError
	for i, a := range g.Accounts {
		if !s.HasAccount(a) {
			missing = append(missing, httpapi.FieldError{Path: path("accounts", i), Code: errcode.AccountNotFound})
		}
	}
	if len(missing) > 0 {
		return refuse(errcode.AccountNotFound, "some accounts are not on the platform's connections; fields lists each"+s.yourAccounts(), missing...)
	}
	return nil
}

// groupNameIsAccount reports whether name equals, case-insensitively, one
// of the user's platform or broker accounts.
func groupNameIsAccount(name string, s *Snapshot) bool {
	for _, c := range s.Connections {
		for _, a := range c.Accounts {
			if strings.EqualFold(a, name) {
				return true
			}
		}
	}
	for _, a := range s.BrokerAccounts {
		if strings.EqualFold(a, name) {
			return true
		}
	}
	return false
}
