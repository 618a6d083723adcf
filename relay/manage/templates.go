package manage

import (
	"strings"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// Limits of an ATM template.
const (
	// MaxTemplates bounds the ATM templates of a user.
	MaxTemplates = 100
	// MaxAtmQuantity bounds a template's quantity.
	MaxAtmQuantity = 1000
	// MaxAtmBrackets bounds a template's brackets.
	MaxAtmBrackets = 4
	// MaxAtmTicks bounds every distance of a template, in ticks.
	MaxAtmTicks = 10000
)

// Times in force of an ATM template, as stored; a request may send them in
// any case.
const (
	AtmDay = "Day"
	AtmGtc = "Gtc"
)

// templateKind is the atm-template kind of the Management API: named
// bracket configurations the agent installs on the platform.
var templateKind = &Kind[protocol.ManagedAtmTemplate]{
	Name:       "atm-template",
	Path:       "desktop/atm-templates",
	Singleton:  false,
	Required:   []string{"name", "config"},
	NeedsAgent: true,
	MaxCount:   MaxTemplates,
	LimitCode:  errcode.LimitReached,
	Default: func() protocol.ManagedAtmTemplate {
		return protocol.ManagedAtmTemplate{Config: protocol.AtmConfig{TimeInForce: AtmDay, Brackets: []protocol.AtmBracket{}}}
	},
	Meta:     func(v *protocol.ManagedAtmTemplate) *protocol.Meta { return &v.Meta },
	Validate: validateTemplate,
	Check:    checkTemplate,
}

// validateTemplate checks a template on its own: a bad name is 422
// validation_failed; a bad configuration is 422 invalid_atm_config with
// every config.* field at fault. The time in force is stored as AtmDay or
// AtmGtc.
func validateTemplate(c *Change[protocol.ManagedAtmTemplate]) *httpapi.Error {
	t := c.New
	if !nameRE.MatchString(t.Name) {
		var f fieldErrs
		f.pattern("name", NamePattern)
		return f.err()
	}
	f := validateAtmConfig(&t.Config)
	if len(f) > 0 {
		return refuse(errcode.InvalidAtmConfig, "the ATM configuration is invalid; fields lists each", f...)
	}
	return nil
}

// validateAtmConfig checks cfg, normalises its time in force, and returns
// the config.* fields at fault.
func validateAtmConfig(cfg *protocol.AtmConfig) fieldErrs {
	var f fieldErrs
	intBetween(&f, "config.quantity", cfg.Quantity, 1, MaxAtmQuantity)
	switch {
	case strings.EqualFold(cfg.TimeInForce, AtmDay):
		cfg.TimeInForce = AtmDay
	case strings.EqualFold(cfg.TimeInForce, AtmGtc):
		cfg.TimeInForce = AtmGtc
	default:
		f.allowed("config.timeInForce", AtmDay, AtmGtc)
	}
	if cfg.Brackets == nil {
		cfg.Brackets = []protocol.AtmBracket{}
	}
	switch {
	case len(cfg.Brackets) == 0:
		f.add("config.brackets", errcode.FieldCodeRequired)
	case len(cfg.Brackets) > MaxAtmBrackets:
		f.limit("config.brackets", errcode.FieldCodeLessThanEqual, MaxAtmBrackets)
	default:
		sum, ok := 0, true
		for i, b := range cfg.Brackets {
			if !intBetween(&f, path("config.brackets", i, "quantity"), b.Quantity, 1, MaxAtmQuantity) {
				ok = false
			}
			sum += b.Quantity
			intBetween(&f, path("config.brackets", i, "stopLossTicks"), b.StopLossTicks, 1, MaxAtmTicks)
			intBetween(&f, path("config.brackets", i, "profitTargetTicks"), b.ProfitTargetTicks, 1, MaxAtmTicks)
		}
		// The sum is judged when every bracket's quantity is valid; the
		// quantity itself may be out of range, the sum still has to match.
		if ok && sum != cfg.Quantity {
			f.add("config.brackets", errcode.FieldCodeOutOfRange)
		}
	}
	be := &cfg.Breakeven
	if be.Enabled {
		enabledTicks(&f, "config.breakeven.triggerTicks", be.TriggerTicks)
	} else {
		intBetween(&f, "config.breakeven.triggerTicks", be.TriggerTicks, 0, MaxAtmTicks)
	}
	intBetween(&f, "config.breakeven.plusTicks", be.PlusTicks, 0, MaxAtmTicks)
	ts := &cfg.TrailingStop
	for _, p := range []struct {
		name string
		v    int
	}{{"triggerTicks", ts.TriggerTicks}, {"distanceTicks", ts.DistanceTicks}, {"stepTicks", ts.StepTicks}} {
		if ts.Enabled {
			enabledTicks(&f, "config.trailingStop."+p.name, p.v)
		} else {
			intBetween(&f, "config.trailingStop."+p.name, p.v, 0, MaxAtmTicks)
		}
	}
	return f
}

// enabledTicks records a distance of an enabled setting: below 1 is
// required_when_enabled, above MaxAtmTicks less_than_equal.
func enabledTicks(f *fieldErrs, p string, v int) {
	if v < 1 {
		f.add(p, errcode.FieldCodeRequiredWhenEnabled)
		return
	}
	intBetween(f, p, v, 1, MaxAtmTicks)
}

// intBetween records v at p when it is below lo (greater_than_equal) or
// above hi (less_than_equal), and reports whether it is within.
func intBetween(f *fieldErrs, p string, v, lo, hi int) bool {
	switch {
	case v < lo:
		f.limit(p, errcode.FieldCodeGreaterThanEqual, lo)
	case v > hi:
		f.limit(p, errcode.FieldCodeLessThanEqual, hi)
	default:
		return true
	}
	return false
}

// checkTemplate refuses a name another of the user's templates has,
// compared case-insensitively (409 template_name_conflict).
func checkTemplate(c *Change[protocol.ManagedAtmTemplate]) *httpapi.Error {
	if c.New == nil {
		return nil // deleting is never refused
	}
	for i := range c.Snap.Templates {
		o := &c.Snap.Templates[i]
		if o.ID != c.New.ID && strings.EqualFold(o.Name, c.New.Name) {
			return refuse(errcode.TemplateNameConflict, "another ATM template has this name")
		}
	}
	return nil
}
