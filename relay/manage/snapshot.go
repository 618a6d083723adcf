package manage

import (
	"context"
	"encoding/json"
	"fmt"
	"tradebridge/relay/store"

	"go.uber.org/zap"
)

// load reads a user's state: every stored resource from the store (one
// transaction), each into its kind's list (the broker family's copiers and
// monitors into Snapshot.BrokerCopiers and BrokerMonitors), the platform
// connections (the live agent's, else those it last reported), whether
// the agent is connected and the broker link with its accounts (none
// while unlinked); then the singletons never stored get their defaults
// and every resource its computed fields (Kind.Derive).
func (s *Server) load(ctx context.Context, userID string) (*state, error) {
	st, ms, err := s.stored.read(ctx, userID)
	if err != nil {
		return nil, err
	}
	if info, ok := s.opts.Hub.Info(userID); ok {
		st.snap.AgentConnected = true
		st.snap.AgentProtocol = info.Hello.ProtocolVersion
		st.snap.Connections = info.Hello.Connections
	} else if len(ms.Connections) > 0 {
		if err := json.Unmarshal(ms.Connections, &st.snap.Connections); err != nil {
			return nil, fmt.Errorf("manage: stored connections: %w", err)
		}
	}
	if s.opts.BrokerLinks != nil {
		if st.snap.BrokerLinked, st.snap.BrokerAccounts, err = s.opts.BrokerLinks.Linked(ctx, userID); err != nil {
			return nil, err
		}
		if !st.snap.BrokerLinked {
			st.snap.BrokerAccounts = nil
		}
	}
	complete(st)
	return st, nil
}

// storedState reads the users' management state as stored: what load
// starts from, and all that the broker family's engines run
// (BrokerConfigs).
type storedState struct {
	store Store
	kinds map[string]kindOps
	log   *zap.Logger
}

func newStoredState(st Store, log *zap.Logger) *storedState {
	s := &storedState{store: st, kinds: map[string]kindOps{}, log: log}
	for _, k := range kinds() {
		s.kinds[k.name()] = k
	}
	return s
}

// read returns the user's stored resources, each decoded into its kind's
// list, with what the store returned.
func (s *storedState) read(ctx context.Context, userID string) (*state, store.ManagedState, error) {
	ms, err := s.store.ManagedState(ctx, userID)
	if err != nil {
		return nil, ms, err
	}
	st := &state{userID: userID, versions: make(map[resKey]int64, len(ms.Resources))}
	st.snap.ConfigVersion = ms.ConfigVersion
	for _, r := range ms.Resources {
		k := s.kinds[r.Kind]
		if k == nil {
			s.log.Warn("a stored resource of an unknown kind", zap.String("kind", r.Kind))
			continue
		}
		if err := k.decode(st, r.ID, r.Body); err != nil {
			return nil, ms, err
		}
		st.versions[resKey{r.Kind, r.ID}] = r.Version
	}
	return st, ms, nil
}

// complete gives the singletons never stored their defaults, then every
// resource its computed fields (Kind.Derive).
func complete(st *state) {
	for _, k := range kinds() {
		k.fill(st)
	}
	for _, k := range kinds() {
		k.derive(st)
	}
}
