package manage

import (
	"context"
	"encoding/json"
	"fmt"

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
	ms, err := s.opts.Store.ManagedState(ctx, userID)
	if err != nil {
		return nil, err
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
			return nil, err
		}
		st.versions[resKey{r.Kind, r.ID}] = r.Version
	}
	if info, ok := s.opts.Hub.Info(userID); ok {
		st.snap.AgentConnected = true
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
	for _, k := range kinds() {
		k.fill(st)
	}
	for _, k := range kinds() {
		k.derive(st)
	}
	return st, nil
}
