package ops

import (
	"context"
	"strings"
	"sync"

	"go.uber.org/zap"

	"tradebridge/protocol"
)

// locker serializes writes per key. A key's lock is a one-slot channel, so
// waiting for it respects the caller's context. Keys are never forgotten:
// there are as many as accounts times contracts traded, a small number.
type locker struct {
	mu sync.Mutex
	m  map[key]chan struct{}
}

func newLocker() *locker { return &locker{m: make(map[key]chan struct{})} }

// lock takes k's lock, or fails when ctx ends first. The returned function
// releases it.
func (l *locker) lock(ctx context.Context, k key) (func(), error) {
	l.mu.Lock()
	ch := l.m[k]
	if ch == nil {
		ch = make(chan struct{}, 1)
		l.m[k] = ch
	}
	l.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, wireError(ctx.Err())
	}
}

// accountKey is the key of account-wide checks (maxPositions): it is taken
// before any instrument key of the account.
func accountKey(account string) key { return key{account: account} }

// ownership is a strategy tag's claim on one account and instrument.
type ownership struct {
	tag string
	// filled holds the signed filled quantity of each of the tag's orders
	// counted, by order id; it keeps orders the platform no longer lists
	// (earlier sessions).
	filled map[string]int
	// ignore holds the orders that existed when the tag claimed the key:
	// they belong to earlier owners.
	ignore map[string]bool
	// adj corrects the sum of filled for changes made outside the tag
	// (an untagged flatten, a manual close), so that the share never
	// exceeds the position.
	adj int
}

// tagBook is the record of which strategy tag owns which account and
// instrument, and the tag's share of the position there. It lives in
// memory and, when it has a Persist (loadTagBook), writes every change of
// a key's ownership through to it, so that an agent restart keeps it. Its
// methods are safe for concurrent use; callers change a key's entry only
// while holding that key's lock.
type tagBook struct {
	mu sync.Mutex
	m  map[key]*ownership
	// seq numbers the changes made under mu, so that write keeps the
	// latest of a key's changes.
	seq uint64

	// persist, when set, keeps the book; log reports its failures.
	persist Persist
	log     *zap.Logger
	// wmu serializes writes to persist; written holds the seq of each
	// key's last change written.
	wmu     sync.Mutex
	written map[key]uint64
}

// newTagBook returns an empty book in memory only.
func newTagBook() *tagBook { return &tagBook{m: make(map[key]*ownership)} }

// owner returns the tag that owns k, or "".
func (b *tagBook) owner(k key) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if own := b.m[k]; own != nil {
		return own.tag
	}
	return ""
}

// claim makes tag the owner of k. orders are the key's orders now; none of
// them counts toward the tag's share.
func (b *tagBook) claim(k key, tag string, orders []protocol.Order) {
	own := &ownership{tag: tag, filled: map[string]int{}, ignore: make(map[string]bool, len(orders))}
	for _, o := range orders {
		own.ignore[o.OrderID] = true
	}
	b.mu.Lock()
	b.m[k] = own
	w := b.change(k, own)
	b.mu.Unlock()
	b.write(w)
}

// reconcile brings k's ownership up to the platform's state: qty is the
// account's signed position in the instrument and orders are the key's
// orders. It returns the owner and its signed share. The share counts the
// fills of the owner's orders placed since its claim, clamped so that it
// never exceeds the position nor points the other way. An owner whose share
// is zero and who has no working order in the instrument is released.
func (b *tagBook) reconcile(k key, qty int, orders []protocol.Order) (string, int) {
	b.mu.Lock()
	tag, share, w := b.settle(k, qty, orders, true)
	b.mu.Unlock()
	b.write(w)
	return tag, share
}

// peek is reconcile without changing anything, for reads that do not hold
// the key's lock.
func (b *tagBook) peek(k key, qty int, orders []protocol.Order) (string, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tag, share, _ := b.settle(k, qty, orders, false)
	return tag, share
}

// settle computes k's owner and share; with apply it also records them,
// returning the write of the change to make (nil when nothing changed).
func (b *tagBook) settle(k key, qty int, orders []protocol.Order, apply bool) (string, int, *tagWrite) {
	own := b.m[k]
	if own == nil {
		return "", 0, nil
	}
	working, changed := false, false
	share := own.adj
	counted := make(map[string]bool, len(orders))
	for _, o := range orders {
		if o.StrategyTag != own.tag || own.ignore[o.OrderID] {
			continue
		}
		n := side(o.OrderAction) * o.Filled
		share += n
		counted[o.OrderID] = true
		if apply {
			if was, ok := own.filled[o.OrderID]; !ok || was != n {
				own.filled[o.OrderID] = n
				changed = true
			}
		}
		if !protocol.TerminalOrderState(o.OrderState) {
			working = true
		}
	}
	for id, n := range own.filled {
		if !counted[id] { // no longer listed by the platform
			share += n
		}
	}
	clamped := share
	switch {
	case sign(share) != sign(qty):
		clamped = 0
	case abs(share) > abs(qty):
		clamped = qty
	}
	if clamped == 0 && !working {
		if apply {
			delete(b.m, k)
			return "", 0, b.change(k, nil)
		}
		return "", 0, nil
	}
	var w *tagWrite
	if apply {
		if clamped != share {
			own.adj += clamped - share
			changed = true
		}
		if changed {
			w = b.change(k, own)
		}
	}
	return own.tag, clamped, w
}

// selector is the part of an account and instrument a flatten, close or
// cancel acts on: everything (an empty tag), or a strategy tag's orders and
// position share under a mode.
type selector struct {
	tag  string
	mode string // protocol.StrategyTagMode*; exact when empty
}

func (s selector) all() bool { return s.tag == "" }

// orderMatches reports whether an order with strategy tag t is selected.
func (s selector) orderMatches(t string) bool {
	switch {
	case s.all():
		return true
	case s.mode == protocol.StrategyTagModePrefix:
		return strings.HasPrefix(t, s.tag)
	case s.mode == protocol.StrategyTagModeExclude:
		return t != s.tag
	}
	return t == s.tag
}

// qty returns the signed part of the position that s selects.
func (s selector) qty(st state) int {
	switch {
	case s.all():
		return st.qty
	case s.mode == protocol.StrategyTagModeExclude:
		if st.owner == s.tag {
			return st.qty - st.share
		}
		return st.qty
	case st.owner != "" && s.orderMatches(st.owner):
		return st.share
	}
	return 0
}

// closeTag is the strategy tag of the order that closes s's part: the
// owner's, so that the fill counts against its share, or none.
func (s selector) closeTag(st state) string {
	if s.all() || s.mode == protocol.StrategyTagModeExclude {
		return ""
	}
	return st.owner
}

// maxIDAliases bounds the remembered order id changes.
const maxIDAliases = 100_000

// idMap remembers order ids that a platform changed (ChangeOrder may
// replace an order by one with a new id): every id of such a family maps to
// the family's original id, so a lookup by any id finds the order's current
// id and the executions of every id. It is bounded: the oldest aliases are
// forgotten first.
type idMap struct {
	mu      sync.Mutex
	orig    map[string]string   // id → original id, for changed orders
	family  map[string][]string // original id → ids, oldest first
	current map[string]string   // original id → current id
	order   []string            // aliases in the order recorded
	max     int
}

func newIDMap(max int) *idMap {
	return &idMap{orig: map[string]string{}, family: map[string][]string{}, current: map[string]string{}, max: max}
}

// changed records that the order with id old now has id new.
func (m *idMap) changed(old, new string) {
	if old == new || old == "" || new == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.orig[old]
	if !ok {
		o = old
		m.orig[old] = old
		m.family[o] = []string{old}
	}
	m.orig[new] = o
	m.family[o] = append(m.family[o], new)
	m.current[o] = new
	m.order = append(m.order, o)
	for len(m.order) > m.max {
		m.forget(m.order[0])
		m.order = m.order[1:]
	}
}

func (m *idMap) forget(o string) {
	for _, id := range m.family[o] {
		delete(m.orig, id)
	}
	delete(m.family, o)
	delete(m.current, o)
}

// currentID returns the current id of the order once named id.
func (m *idMap) currentID(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.orig[id]; ok {
		return m.current[o]
	}
	return id
}

// all returns every id of the order once named id (id alone when it never
// changed).
func (m *idMap) all(id string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.orig[id]; ok {
		return append([]string(nil), m.family[o]...)
	}
	return []string{id}
}

// original returns the original id of the order once named id.
func (m *idMap) original(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.orig[id]; ok {
		return o
	}
	return id
}
