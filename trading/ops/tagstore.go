package ops

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"
)

// Persist keeps the strategy tags' ownership across agent restarts (the
// agent's state file, agent/agentstore, implements it; so does
// engine.MemStore). A Put or Delete that returned nil survives an agent
// crash; Load returns a bucket's values, an empty map when there are none.
type Persist interface {
	Put(bucket, key string, value []byte) error
	Delete(bucket, key string) error
	Load(bucket string) (map[string][]byte, error)
}

// TagsBucket is the Persist bucket of strategy-tag ownership: one value
// per account and instrument that a tag owns, under the key account,
// NUL, instrument (the full contract name).
const TagsBucket = "ops.tags"

// ownershipRecord is an ownership as Persist keeps it, in JSON.
type ownershipRecord struct {
	Tag string `json:"tag"`
	// Filled is the signed filled quantity of each of the tag's orders
	// counted, by order id.
	Filled map[string]int `json:"filled,omitempty"`
	// Ignore lists the orders that belong to earlier owners.
	Ignore []string `json:"ignore,omitempty"`
	Adj    int      `json:"adj,omitempty"`
}

// persistKey is k's key in TagsBucket.
func persistKey(k key) string { return k.account + "\x00" + k.instrument }

// parsePersistKey is persistKey's inverse.
func parsePersistKey(s string) (key, bool) {
	account, instrument, ok := strings.Cut(s, "\x00")
	if !ok || account == "" || instrument == "" {
		return key{}, false
	}
	return key{account, instrument}, true
}

func encodeOwnership(own *ownership) ([]byte, error) {
	rec := ownershipRecord{Tag: own.tag, Filled: own.filled, Adj: own.adj}
	for id, ok := range own.ignore {
		if ok {
			rec.Ignore = append(rec.Ignore, id)
		}
	}
	slices.Sort(rec.Ignore)
	return json.Marshal(rec)
}

func decodeOwnership(b []byte) (*ownership, error) {
	var rec ownershipRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, err
	}
	if rec.Tag == "" {
		return nil, fmt.Errorf("no tag")
	}
	own := &ownership{tag: rec.Tag, filled: rec.Filled, ignore: make(map[string]bool, len(rec.Ignore)), adj: rec.Adj}
	if own.filled == nil {
		own.filled = map[string]int{}
	}
	for _, id := range rec.Ignore {
		own.ignore[id] = true
	}
	return own, nil
}

// tagWrite is a change of one key's ownership to write through to
// Persist: the encoded ownership, or its removal when value is nil. seq
// orders the changes of the book.
type tagWrite struct {
	k     key
	tag   string
	value []byte
	seq   uint64
}

// loadTagBook returns a tag book that writes through to p, holding the
// ownership p kept; with a nil p, an empty book in memory only. A value p
// holds that cannot be read is logged and skipped.
func loadTagBook(p Persist, log *zap.Logger) (*tagBook, error) {
	b := newTagBook()
	if p == nil {
		return b, nil
	}
	b.persist, b.log = p, log
	b.written = make(map[key]uint64)
	vals, err := p.Load(TagsBucket)
	if err != nil {
		return nil, fmt.Errorf("ops: loading strategy-tag ownership: %w", err)
	}
	for s, v := range vals {
		k, ok := parsePersistKey(s)
		if !ok {
			log.Error("a kept strategy-tag ownership has a malformed key; it is skipped", zap.String("key", s))
			continue
		}
		own, err := decodeOwnership(v)
		if err != nil {
			log.Error("a kept strategy-tag ownership cannot be read; it is skipped",
				zap.String("account", k.account), zap.String("instrument", k.instrument), zap.Error(err))
			continue
		}
		b.m[k] = own
	}
	if len(b.m) > 0 {
		log.Info("strategy-tag ownership restored", zap.Int("keys", len(b.m)))
	}
	return b, nil
}

// change returns the write of k's ownership own (nil: released) to make,
// or nil when the book keeps nothing. b.mu is held.
func (b *tagBook) change(k key, own *ownership) *tagWrite {
	if b.persist == nil {
		return nil
	}
	b.seq++
	w := &tagWrite{k: k, seq: b.seq}
	if own == nil {
		return w
	}
	w.tag = own.tag
	v, err := encodeOwnership(own)
	if err != nil { // cannot happen: strings and ints
		b.log.Error("encoding a strategy-tag ownership failed", zap.Error(err))
		return nil
	}
	w.value = v
	return w
}

// write makes w in Persist, unless a later change of its key was written
// already. b.mu is not held: a slow disk delays no reader. A failure is
// logged; the book in memory stays right, and the trade is not refused.
func (b *tagBook) write(w *tagWrite) {
	if w == nil {
		return
	}
	b.wmu.Lock()
	defer b.wmu.Unlock()
	if b.written[w.k] > w.seq {
		return
	}
	b.written[w.k] = w.seq
	var err error
	if w.value == nil {
		err = b.persist.Delete(TagsBucket, persistKey(w.k))
	} else {
		err = b.persist.Put(TagsBucket, persistKey(w.k), w.value)
	}
	if err != nil {
		b.log.Error("keeping strategy-tag ownership failed: after an agent restart the tag may not own this position",
			zap.String("account", w.k.account), zap.String("instrument", w.k.instrument),
			zap.String("tag", w.tag), zap.Bool("released", w.value == nil), zap.Error(err))
	}
}
