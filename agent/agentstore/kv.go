package agentstore

import (
	"fmt"

	"tradebridge/trading/engine"
)

var _ engine.Store = (*Store)(nil)

// Put sets key in bucket to value. When it returns nil the value survives
// a crash of the agent.
func (s *Store) Put(bucket, key string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	_, err := s.db.Exec(
		"INSERT INTO kv (bucket, key, value) VALUES (?, ?, ?) ON CONFLICT (bucket, key) DO UPDATE SET value = excluded.value",
		bucket, key, value)
	if err != nil {
		return fmt.Errorf("agentstore: put %s: %w", bucket, err)
	}
	return nil
}

// Delete removes key from bucket; a missing key is no error.
func (s *Store) Delete(bucket, key string) error {
	if _, err := s.db.Exec("DELETE FROM kv WHERE bucket = ? AND key = ?", bucket, key); err != nil {
		return fmt.Errorf("agentstore: delete from %s: %w", bucket, err)
	}
	return nil
}

// Load returns the values of bucket by key: an empty map, not nil, when
// there are none.
func (s *Store) Load(bucket string) (map[string][]byte, error) {
	rows, err := s.db.Query("SELECT key, value FROM kv WHERE bucket = ?", bucket)
	if err != nil {
		return nil, fmt.Errorf("agentstore: load %s: %w", bucket, err)
	}
	defer rows.Close()
	out := make(map[string][]byte)
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("agentstore: load %s: %w", bucket, err)
		}
		if v == nil {
			v = []byte{}
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("agentstore: load %s: %w", bucket, err)
	}
	return out, nil
}
