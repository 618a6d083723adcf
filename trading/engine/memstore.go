package engine

import (
	"maps"
	"sync"
)

type memStore struct {
	mu sync.Mutex
	b  map[string]map[string][]byte
}

// NewMemStore returns an empty MemStore.
func NewMemStore() MemStore { return MemStore{&memStore{b: make(map[string]map[string][]byte)}} }

// Put implements Store.
func (s MemStore) Put(bucket, key string, value []byte) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	b := s.m.b[bucket]
	if b == nil {
		b = make(map[string][]byte)
		s.m.b[bucket] = b
	}
	b[key] = append([]byte(nil), value...)
	return nil
}

// Delete implements Store.
func (s MemStore) Delete(bucket, key string) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	delete(s.m.b[bucket], key)
	return nil
}

// Load implements Store.
func (s MemStore) Load(bucket string) (map[string][]byte, error) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	out := make(map[string][]byte, len(s.m.b[bucket]))
	for k, v := range maps.All(s.m.b[bucket]) {
		out[k] = append([]byte(nil), v...)
	}
	return out, nil
}
