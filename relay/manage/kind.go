package manage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"tradebridge/protocol"
	"tradebridge/relay/alerts"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/sealed"
)

// Op is what a request does to a resource.
type Op int

// Operations on a resource.
const (
	OpCreate Op = iota // POST on a collection
	OpPatch            // PATCH: the body's fields change the stored resource
	OpPut              // PUT: the body replaces the resource (news lockout, kill switch)
	OpDelete           // DELETE
	OpAction           // POST on {id}/{action} (a monitor's restart)
)

// String names the operation in logs.
func (o Op) String() string {
	switch o {
	case OpCreate:
		return "create"
	case OpPatch:
		return "patch"
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	case OpAction:
		return "action"
	}
	return "unknown"
}

// Snapshot is a user's whole management state as stored, which a Kind's
// checks read to judge a change against the rest (cycles, duplicates,
// names, monitors of followers). It is read under the user's write lock,
// so nothing changes it while a change is judged.
type Snapshot struct {
	// ConfigVersion is the version of the configuration last stored.
	ConfigVersion      int64
	Copiers            []protocol.Copier
	Monitors           []protocol.Monitor
	Groups             []protocol.AccountGroup
	Templates          []protocol.ManagedAtmTemplate
	Controls           protocol.Controls
	NewsLockout        protocol.NewsLockout
	ConnectionSettings protocol.ConnectionSettings
	// Connections are the user's platform connections and their
	// accounts: the live agent's, else the ones it last reported.
	Connections []protocol.Connection
	// AgentConnected reports whether the user's agent is connected now,
	// and AgentProtocol the protocol version it announced (0 when none).
	AgentConnected bool
	AgentProtocol  int
	// BrokerLinked reports whether the user has linked a broker login
	// (the broker family); BrokerAccounts are the accounts of that login.
	BrokerLinked   bool
	BrokerAccounts []string
	// BrokerCopiers and BrokerMonitors are the copiers and monitors of the broker
	// family (the broker login's accounts), apart from the desktop ones.
	BrokerCopiers  []BrokerCopier
	BrokerMonitors []BrokerMonitor
	// Alerts are the user's alert destinations, as stored (their secrets
	// sealed).
	Alerts []alerts.Destination
}

// HasAccount reports whether one of the user's platform connections
// carries the account.
func (s *Snapshot) HasAccount(account string) bool {
	for _, c := range s.Connections {
		for _, a := range c.Accounts {
			if a == account {
				return true
			}
		}
	}
	return false
}

// Accounts returns the accounts of the user's platform connections,
// sorted, each once.
func (s *Snapshot) Accounts() []string {
	var out []string
	for _, c := range s.Connections {
		out = append(out, c.Accounts...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// maxListedAccounts bounds the accounts an account_not_found lists.
const maxListedAccounts = 20

// yourAccounts completes the detail of an account_not_found: the user's
// own accounts (the first maxListedAccounts, sorted), so that a misspelt
// name can be fixed. It lists only the caller's accounts, never says
// whether a name is someone else's: "missing" and "not yours" read the
// same.
func (s *Snapshot) yourAccounts() string {
	all := s.Accounts()
	if len(all) == 0 {
		return "; your platform connections carry no account yet"
	}
	out := "; your accounts (names are case-sensitive): " + strings.Join(all[:min(len(all), maxListedAccounts)], ", ")
	if n := len(all) - maxListedAccounts; n > 0 {
		out += fmt.Sprintf(" and %d more", n)
	}
	return out
}

// MonitorOf returns the monitor of the account, or nil.
func (s *Snapshot) MonitorOf(account string) *protocol.Monitor {
	for i := range s.Monitors {
		if s.Monitors[i].Account == account {
			return &s.Monitors[i]
		}
	}
	return nil
}

// Change is one request's change to a resource of type T, as a Kind's
// hooks see it.
type Change[T any] struct {
	Op Op
	// Action names the action of OpAction ("restart").
	Action string
	// Old is the stored resource; nil on create.
	Old *T
	// New is the resource as the change would leave it; nil on delete. On
	// OpAction it starts as a copy of Old for the action to change.
	New *T
	// Sent holds the top-level fields of the request body, as sent (nil
	// when there is no body), for rules about what the same request sends
	// ("switchesLocked": false with "blockSignals").
	Sent map[string]json.RawMessage
	// Snap is the user's state before the change.
	Snap *Snapshot
	// Now is the time of the request.
	Now time.Time
	// Family is "desktop" or "tv".
	Family string
	// UserID is the user whose resource it is.
	UserID string
	// Env is what of the relay the hooks may use besides the change:
	// the key ring that seals secrets, the alerts. Never nil in the
	// server's changes.
	Env *Env

	// Extra, set by a hook, adds its fields to the answer's data, once
	// (a webhook's signing secret on create and rotate-secret).
	Extra map[string]any
	// Status and Answer, set by an action that answers other than with
	// the resource (an alert destination's test: 202 and the delivery),
	// are the answer's status and data.
	Status int
	Answer any
}

// Env is what of the relay a kind's hooks use besides the Change.
type Env struct {
	// Keys seal the secrets of resources at rest (relay/sealed); nil
	// when the relay has none.
	Keys *sealed.Keyring
	// Alerts queues alert deliveries; nil when the relay sends none.
	Alerts Alerts
	// AlertsAllowPrivate lets alert webhooks on loopback and private
	// addresses (relay serve --alerts-allow-private).
	AlertsAllowPrivate bool
	// EmailEnabled reports that the operator configured an SMTP server.
	EmailEnabled bool
}

// Alerts is the alerts' dispatcher as the Management API sees it;
// *alerts.Dispatcher implements it.
type Alerts interface {
	// Test queues a test delivery to one of the user's destinations, due
	// at once, and returns its id.
	Test(ctx context.Context, userID, destinationID string) (string, error)
	// Changed tells that the user's destinations changed (one was
	// stored or deleted).
	Changed(userID string)
}

// Kind describes one kind of management resource to the generic handlers
// (create, read, list, patch, put, delete, actions, ETags, storage and the
// push to the agent). Each kind's file declares its Kind value and its
// hooks; the hooks are pure functions of the Change, so they are tested on
// their own.
//
// The generic handlers run, for a change: the read-only and immutable
// field rules (422 field_read_only, immutable_field), Guard, the merge of
// the body onto the stored resource, Validate, Check, then store and push.
type Kind[T any] struct {
	// Name is the kind's name in the store, in logs and in the resource
	// budget's key: "copier", "monitor", "account-group", "atm-template",
	// "controls", "news-lockout", "connection-settings".
	Name string
	// Path is the route under /v1/api/manage/ ("desktop/copiers",
	// "controls"). Collections take {id} after it.
	Path string
	// Singleton kinds have one resource per user, created with Default on
	// first read; they have no collection routes.
	Singleton bool
	// ReadOnly lists top-level JSON fields besides id, createdAt and
	// updatedAt that callers may not set ("state").
	ReadOnly []string
	// Immutable lists top-level JSON fields set only at creation
	// ("account").
	Immutable []string
	// Required lists top-level JSON fields a create must send.
	Required []string
	// Secret lists top-level JSON fields that hold secrets (an alert
	// destination's bot token or webhook URL): the activity log's
	// config.changed entries say that such a field changed, never its
	// values.
	Secret []string
	// NeedsAgent is true when the agent acts on the kind: a change needs
	// the agent connected (409 addon_disconnected) with a protocol version
	// of at least protocol.ConfigProtocolVersion (409
	// addon_version_unsupported), and is pushed to it.
	NeedsAgent bool
	// MaxCount bounds the resources of the kind per user (0: no bound);
	// a create past it is 409 LimitCode (default limit_reached).
	MaxCount  int
	LimitCode string
	// Default returns a new resource with its defaults, onto which a
	// create's body is decoded.
	Default func() T
	// Meta returns the resource's id and times.
	Meta func(*T) *protocol.Meta
	// Derive fills the fields the relay computes rather than stores (a
	// copier's state, a connection's accounts) before a resource is shown
	// or changed. Optional.
	Derive func(v *T, s *Snapshot)
	// Guard refuses a change for the state the resource is in, whatever
	// the change holds (monitor_locked, monitor_stopped_use_restart,
	// switches_locked, use_kill_switch_endpoint). c.New is not set yet.
	// Optional.
	Guard func(c *Change[T]) *httpapi.Error
	// Validate checks c.New on its own: 422 validation_failed with every
	// field at fault, or another 422 code (invalid_replacement,
	// invalid_atm_config). Optional.
	Validate func(c *Change[T]) *httpapi.Error
	// Check judges the change against the user's other resources (404
	// account_not_found, the 409 conflicts). Optional.
	Check func(c *Change[T]) *httpapi.Error
	// Seal, when set, runs on a create's or change's resource (c.New)
	// after Check, before it is stored: it moves the secrets the body
	// sent into sealed fields (Change.Env.Keys), and may set c.Extra.
	// Optional.
	Seal func(c *Change[T]) *httpapi.Error
	// Show, when set, clears what callers never see from a resource about
	// to be shown (its sealed secrets). Optional.
	Show func(v *T)
	// Actions are the POST {id}/{name} operations of the kind (a
	// monitor's "restart"): each changes c.New (a copy of c.Old) or
	// refuses. ag asks the user's agent. Optional.
	Actions map[string]func(c *Change[T], ag Agent) *httpapi.Error
}

// Agent is the user's agent as an action sees it.
type Agent interface {
	// CheckMonitorRestart asks the agent whether m, restarted, would stop
	// again at once (protocol.FnCheckMonitorRestart).
	CheckMonitorRestart(m protocol.Monitor) (protocol.RestartVerdict, *httpapi.Error)
}
