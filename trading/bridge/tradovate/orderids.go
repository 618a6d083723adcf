package tradovate

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Persist keeps what the platform must remember across relay restarts, in
// buckets of keys (the shape of ops.Persist; the relay's store implements
// it per user). A Put or Delete that returned nil is durable; Load
// returns a bucket's values, an empty map when there are none.
type Persist interface {
	Put(bucket, key string, value []byte) error
	Delete(bucket, key string) error
	Load(bucket string) (map[string][]byte, error)
}

// OrdersBucket is the Persist bucket of the order-id map: one value per
// order we placed, under our order id.
const OrdersBucket = "tradovate.orders"

// orderRecord is what we know of an order we placed that the broker does
// not keep: our id (the key), the broker's id once it answered, and the
// order's signal name, strategy tag and OCO id.
type orderRecord struct {
	// Broker is the broker's order id; 0 while the placement has not
	// answered (or its outcome is unknown).
	Broker  int64     `json:"b,omitempty"`
	Account string    `json:"a"`
	Name    string    `json:"n,omitempty"`
	Tag     string    `json:"t,omitempty"`
	Oco     string    `json:"o,omitempty"`
	At      time.Time `json:"at"`
}

// errDuplicateID reports an order id used before.
var errDuplicateID = errors.New("tradovate: duplicate order id")

// orderIDs is the map between our order ids and the broker's, written
// through to Persist. Its methods are safe for concurrent use; it never
// calls the Platform.
type orderIDs struct {
	persist Persist
	log     *zap.Logger

	mu       sync.Mutex
	byOurs   map[string]*orderRecord
	byBroker map[int64]string
}

// memPersist keeps buckets in memory, for a Platform without a Persist.
type memPersist struct {
	mu sync.Mutex
	m  map[string]map[string][]byte
}

func (m *memPersist) Put(bucket, key string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = make(map[string]map[string][]byte)
	}
	if m.m[bucket] == nil {
		m.m[bucket] = make(map[string][]byte)
	}
	m.m[bucket][key] = append([]byte(nil), value...)
	return nil
}

func (m *memPersist) Delete(bucket, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m[bucket], key)
	return nil
}

func (m *memPersist) Load(bucket string) (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string][]byte, len(m.m[bucket]))
	for k, v := range m.m[bucket] {
		out[k] = append([]byte(nil), v...)
	}
	return out, nil
}

// loadOrderIDs reads the map from persist. Records that do not decode are
// skipped (and logged without their content).
func loadOrderIDs(persist Persist, log *zap.Logger) (*orderIDs, error) {
	ids := &orderIDs{persist: persist, log: log, byOurs: make(map[string]*orderRecord), byBroker: make(map[int64]string)}
	vals, err := persist.Load(OrdersBucket)
	if err != nil {
		return nil, err
	}
	for k, v := range vals {
		var rec orderRecord
		if json.Unmarshal(v, &rec) != nil {
			log.Warn("tradovate: an order-id record does not decode; skipped")
			continue
		}
		ids.byOurs[k] = &rec
		if rec.Broker != 0 {
			ids.byBroker[rec.Broker] = k
		}
	}
	return ids, nil
}

func (ids *orderIDs) write(ours string, rec *orderRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return ids.persist.Put(OrdersBucket, ours, b)
}

// reserve records an order about to be placed, before it is sent, so that
// a restart in the middle still knows the id. An id used before is
// errDuplicateID.
func (ids *orderIDs) reserve(ours string, rec orderRecord) error {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if _, ok := ids.byOurs[ours]; ok {
		return errDuplicateID
	}
	if err := ids.write(ours, &rec); err != nil {
		return err
	}
	ids.byOurs[ours] = &rec
	return nil
}

// bind records the broker's id of an order we placed. It reports whether
// the record changed.
func (ids *orderIDs) bind(ours string, broker int64) bool {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	rec := ids.byOurs[ours]
	if rec == nil || rec.Broker == broker {
		return false
	}
	if rec.Broker != 0 {
		delete(ids.byBroker, rec.Broker)
	}
	rec.Broker = broker
	ids.byBroker[broker] = ours
	if err := ids.write(ours, rec); err != nil {
		ids.log.Warn("tradovate: the order-id map could not be saved", zap.Error(err))
	}
	return true
}

// release forgets an order whose placement the broker refused.
func (ids *orderIDs) release(ours string) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	rec := ids.byOurs[ours]
	if rec == nil {
		return
	}
	delete(ids.byOurs, ours)
	if rec.Broker != 0 {
		delete(ids.byBroker, rec.Broker)
	}
	if err := ids.persist.Delete(OrdersBucket, ours); err != nil {
		ids.log.Warn("tradovate: the order-id map could not be saved", zap.Error(err))
	}
}

// ours returns our id and record of a broker order, when we placed it.
func (ids *orderIDs) ours(broker int64) (string, orderRecord, bool) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	id, ok := ids.byBroker[broker]
	if !ok {
		return "", orderRecord{}, false
	}
	return id, *ids.byOurs[id], true
}

// lookup returns the record of one of our ids.
func (ids *orderIDs) lookup(ours string) (orderRecord, bool) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	rec, ok := ids.byOurs[ours]
	if !ok {
		return orderRecord{}, false
	}
	return *rec, true
}

// unbound reports whether ours is an order we placed whose broker id is
// not known yet (its placement is in flight or its outcome unknown).
func (ids *orderIDs) unbound(ours string) bool {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	rec, ok := ids.byOurs[ours]
	return ok && rec.Broker == 0
}

// prune forgets records older than before whose broker order is not in
// live: the broker keeps orders of past sessions out of its lists.
func (ids *orderIDs) prune(before time.Time, live func(broker int64) bool) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	for ours, rec := range ids.byOurs {
		if rec.At.Before(before) && (rec.Broker == 0 || !live(rec.Broker)) {
			delete(ids.byOurs, ours)
			delete(ids.byBroker, rec.Broker)
			if err := ids.persist.Delete(OrdersBucket, ours); err != nil {
				ids.log.Warn("tradovate: the order-id map could not be pruned", zap.Error(err))
				return
			}
		}
	}
}

// newOrderID makes an id for an order whose request has none.
func newOrderID() string { return "tv-" + strings.ToLower(rand.Text()[:20]) }
