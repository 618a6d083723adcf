package ops

// Rules of a strategy lock (OwnerRefusal.Rule): why a tagged write was
// refused with position_owned.
const (
	// RuleStrategyOwned: another strategy tag owns the account's
	// position in the instrument.
	RuleStrategyOwned = "strategyOwned"
	// RuleUntaggedPosition: a position no tag owns is open in the
	// instrument, and a tag claims only a flat instrument.
	RuleUntaggedPosition = "untaggedPosition"
)

// OwnerRefusal is a write refused by a strategy lock: strategy tag Tag
// asked to trade Instrument on Account, which tag Owner holds ("" for an
// untagged position), refused by Rule.
type OwnerRefusal struct {
	Account    string
	Instrument string
	Tag        string
	Owner      string
	Rule       string
}

// SetRefusalObserver makes f the function told every write a strategy
// lock refuses (the controls' engine counts them for the activity log); nil
// tells nobody. f runs on the refused call, holding the instrument's lock:
// it must be fast and must not block. The agent sets it once, before
// serving calls.
func (o *Ops) SetRefusalObserver(f func(OwnerRefusal)) {
	if f == nil {
		o.refusals.Store(nil)
		return
	}
	o.refusals.Store(&f)
}

// observeRefusal tells the observer, if any, of r.
func (o *Ops) observeRefusal(r OwnerRefusal) {
	if f := o.refusals.Load(); f != nil {
		(*f)(r)
	}
}
