package agentstore

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"tradebridge/protocol"
)

// SaveConfig stores cfg as the last management configuration applied. A
// cfg whose Version is not above the stored one changes nothing: the state
// file never goes back to an older configuration.
func (s *Store) SaveConfig(cfg *protocol.Config) error {
	if cfg == nil {
		return errors.New("agentstore: save config: nil configuration")
	}
	body, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("agentstore: save config: %w", err)
	}
	_, err = s.db.Exec(`INSERT INTO config (id, version, body, saved_at) VALUES (1, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET version = excluded.version, body = excluded.body, saved_at = excluded.saved_at
		WHERE excluded.version > config.version`,
		cfg.Version, body, time.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("agentstore: save config version %d: %w", cfg.Version, err)
	}
	return nil
}

// LoadConfig returns the last configuration saved, or nil and no error
// when there is none.
func (s *Store) LoadConfig() (*protocol.Config, error) {
	var body []byte
	err := s.db.QueryRow("SELECT body FROM config WHERE id = 1").Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agentstore: load config: %w", err)
	}
	cfg := new(protocol.Config)
	if err := json.Unmarshal(body, cfg); err != nil {
		return nil, fmt.Errorf("agentstore: load config: %w", err)
	}
	return cfg, nil
}
