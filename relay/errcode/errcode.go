// Package errcode is the one list of the relay's error codes: every
// `error` string the relay writes on any door (the trading API over HTTP
// and over the stream socket, the agents' tunnel, the Management API), and
// the codes of the `fields` array of validation errors. A code is part of
// the wire format: it never changes meaning, and a new failure takes a new
// code. The trading agent's own codes (package protocol, protocol.Codes)
// pass through the relay unchanged; the ones the relay also produces
// itself are listed here, with the same spelling.
//
// The constants are grouped by the HTTP status they are answered with
// (Status returns it). A few codes are answered with another status on
// another door; their comments say so. Codes of the stream socket's frames
// have no status.
//
// The package imports only the standard library, so that every package of
// the relay may use it.
package errcode

// 400 Bad Request.
const (
	// InvalidJSON (400): the body (or a socket frame, or its args) is not
	// valid JSON, has duplicate keys, NaN or Infinity, or nests too deeply.
	InvalidJSON = "invalid_json"
	// InvalidField (400): a body field has a value of the wrong type or
	// out of range, found while decoding; fields names it.
	InvalidField = "invalid_field"
	// UnexpectedBody (400): a GET or DELETE request sent a body.
	UnexpectedBody = "unexpected_body"
	// UnknownParameter (400): an unknown or repeated query parameter, or a
	// malformed query string.
	UnknownParameter = "unknown_parameter"
	// InvalidPath (400): an account name or id in the path is invalid.
	InvalidPath = "invalid_path"
	// InvalidArgument (400): an argument is missing, of the wrong type or
	// out of range; nothing was done. The agent's code too
	// (protocol.CodeInvalidArgument). On the stream socket, also a frame
	// field with a bad value.
	InvalidArgument = "invalid_argument"
	// InvalidInstrument (400): an instrument name is not in the one
	// instrument grammar (protocol.ParseInstrument): every door refuses it
	// before it reaches the agent. The agent's code too
	// (protocol.CodeInvalidInstrument), which also says an instrument is
	// unknown, not a contract month or expired.
	InvalidInstrument = "invalid_instrument"
	// BrokerLoginFailed (400): linking a broker login failed because the
	// broker refused the credentials; nothing was stored.
	BrokerLoginFailed = "broker_login_failed"
	// MissingRequiredFields (400): required fields are missing; fields
	// names them. The agent's code too (protocol.CodeMissingFields).
	MissingRequiredFields = "missing_required_fields"
	// ProtocolVersionUnsupported (400): an agent's connect offers no
	// tunnel protocol version the relay speaks.
	ProtocolVersionUnsupported = "protocol_version_unsupported"
)

// 401 Unauthorized.
const (
	// Unauthorized (401): the token is missing, malformed, unknown,
	// revoked or of the wrong kind, the user is disabled, or the request
	// sent more than one Authorization header.
	Unauthorized = "unauthorized"
	// PairingCodeInvalid (401): a pairing code sent to POST
	// /v1/agent/pair is wrong, expired, already used, or not of the
	// codes' form; one answer for all, which never says which.
	PairingCodeInvalid = "pairing_code_invalid"
)

// 403 Forbidden.
const (
	// PlanRequired (403): the user's plan lacks this feature (the trading
	// API needs pro).
	PlanRequired = "plan_required"
	// EliteRequired (403): the user's plan lacks the Management API.
	EliteRequired = "elite_required"
	// NotAvailable (403): the Management API is not open for the account.
	NotAvailable = "not_available"
	// AddressNotAllowed (403): the request came from an address outside
	// the ones the operator allows at this door (relay serve
	// --webhook-allow).
	AddressNotAllowed = "address_not_allowed"
	// ReadOnlySocket (403): the stream socket was opened with the
	// dashboard's session (the stream's session door), which reads only:
	// its rpc frames run nothing.
	ReadOnlySocket = "read_only_socket"
	// OriginNotAllowed (403): a request that rides on the dashboard's
	// session cookie came from a page of another origin (the dashboard's
	// forms before there is a session, the stream's session door).
	OriginNotAllowed = "origin_not_allowed"
	// CSRFTokenInvalid (403): a state-changing request of the dashboard
	// without its session's CSRF token, or with another one.
	CSRFTokenInvalid = "csrf_token_invalid"
	// InsufficientScope (403): the API token's scope does not cover the
	// request: a read token asked for a write (an order, a flatten, a
	// change of the Management API's resources). The detail names the
	// scope needed; HTTP answers also carry WWW-Authenticate: Bearer
	// error="insufficient_scope", scope="trade" (RFC 6750).
	InsufficientScope = "insufficient_scope"
)

// 404 Not Found.
const (
	// NotFound (404): no such resource, or nothing is served at the path.
	NotFound = "not_found"
)

// 405 Method Not Allowed.
const (
	// MethodNotAllowed (405): the path does not serve the method; the
	// Allow header lists the methods it serves.
	MethodNotAllowed = "method_not_allowed"
)

// 408 Request Timeout.
const (
	// BodyTimeout (408): the body was not received within the body
	// timeout (10 s).
	BodyTimeout = "body_timeout"
	// PlatformUnavailable (408): the trading platform is not connected to
	// the agent (protocol.CodePlatformUnavailable).
	PlatformUnavailable = "platform_unavailable"
)

// 409 Conflict.
const (
	// RequestInProgress (409): a write with the same idempotency key or
	// orderId (or, from the agent, request id) is still running, or its
	// relay stopped mid-call; retryAfter is the seconds until a repeat
	// can be resolved.
	RequestInProgress = "request_in_progress"
	// AlreadyExists (409): a monitor already exists for the account.
	AlreadyExists = "already_exists"
	// ConcurrentModification (409): another change to the same kind of
	// resource is in progress; retry after about a second (may carry
	// retryAfter).
	ConcurrentModification = "concurrent_modification"
	// AddonVersionUnsupported (409): the change needs a newer add-on.
	AddonVersionUnsupported = "addon_version_unsupported"
	// AccountIdentityUnresolved (409): the broker account cannot be
	// matched to the linked login.
	AccountIdentityUnresolved = "account_identity_unresolved"
	// TradovateNotLinked (409): the broker login is not linked.
	TradovateNotLinked = "tradovate_not_linked"
	// MonitorLocked (409): Monitor Lock is on and a limit was reached
	// today.
	MonitorLocked = "monitor_locked"
	// MonitorStoppedUseRestart (409): a stopped monitor cannot be resumed
	// by active: true; use restart.
	MonitorStoppedUseRestart = "monitor_stopped_use_restart"
	// MonitorNotStopped (409): restart was called on a monitor that is
	// not stopped.
	MonitorNotStopped = "monitor_not_stopped"
	// WouldRetrip (409): a restart would stop the monitor again at once.
	WouldRetrip = "would_retrip"
	// TandemDependency (409): the account is a follower in a Tandem
	// copier.
	TandemDependency = "tandem_dependency"
	// TandemRequiresMonitor (409): Tandem needs a monitor on every
	// follower.
	TandemRequiresMonitor = "tandem_requires_monitor"
	// CopierCycle (409): the copier would create a copy loop; inactive
	// copiers count.
	CopierCycle = "copier_cycle"
	// DuplicateCopier (409): a copier from this leader to this follower
	// already covers these instruments, even if inactive.
	DuplicateCopier = "duplicate_copier"
	// DuplicateFollower (409): a follower appears twice.
	DuplicateFollower = "duplicate_follower"
	// FollowerConflict (409): the follower is already used by another
	// copier in a conflicting way.
	FollowerConflict = "follower_conflict"
	// AutosyncConflict (409): two Auto-Sync copiers would manage the same
	// follower and instrument.
	AutosyncConflict = "autosync_conflict"
	// GroupNameConflict (409): the name is used by another group or an
	// account.
	GroupNameConflict = "group_name_conflict"
	// GroupLimitReached (409): the maximum number of account groups is
	// reached.
	GroupLimitReached = "group_limit_reached"
	// TemplateNameConflict (409): an ATM template with the name exists.
	TemplateNameConflict = "template_name_conflict"
	// LimitReached (409): the maximum for this resource is reached.
	LimitReached = "limit_reached"
	// FieldLocked (409): the setting is managed by another feature on the
	// account; fields points at it.
	FieldLocked = "field_locked"
	// SwitchesLocked (409): blockSignals or closingOnly changed while
	// switchesLocked is true.
	SwitchesLocked = "switches_locked"
	// EmailUnavailable (409): an email alert destination, on a relay
	// whose operator configured no SMTP server.
	EmailUnavailable = "email_unavailable"
)

// 412 Precondition Failed.
const (
	// PreconditionFailed (412): If-Match did not strongly match the
	// current ETag (meta.etag holds it).
	PreconditionFailed = "precondition_failed"
)

// 413 Content Too Large.
const (
	// BodyTooLarge (413): the body is larger than the route accepts
	// (64 KiB).
	BodyTooLarge = "body_too_large"
)

// 415 Unsupported Media Type.
const (
	// UnsupportedContentType (415): the body is not application/json,
	// has a charset other than UTF-8, or is compressed.
	UnsupportedContentType = "unsupported_content_type"
)

// 422 Unprocessable Content.
const (
	// IdempotencyKeyReused (422): the idempotency key or orderId was used
	// for a different request within 24 hours.
	IdempotencyKeyReused = "idempotency_key_reused"
	// ValidationFailed (422): fields are invalid; fields lists each (see
	// the FieldCode constants).
	ValidationFailed = "validation_failed"
	// FieldReadOnly (422): the body holds a field that cannot be changed
	// (id, state).
	FieldReadOnly = "field_read_only"
	// FieldNotApplicable (422): the field does not exist for this broker.
	FieldNotApplicable = "field_not_applicable"
	// ImmutableField (422): the field is settable only at creation.
	ImmutableField = "immutable_field"
	// UseKillSwitchEndpoint (422): killSwitch sent to PATCH /controls with
	// a differing value; use PUT /controls/kill-switch.
	UseKillSwitchEndpoint = "use_kill_switch_endpoint"
	// InvalidReplacement (422): a copier symbol replacement is not
	// allowed.
	InvalidReplacement = "invalid_replacement"
	// InvalidAtmConfig (422): an ATM template's configuration is invalid;
	// fields lists the config.* fields.
	InvalidAtmConfig = "invalid_atm_config"
)

// 426 Upgrade Required.
const (
	// UpgradeRequired (426): the stream path serves WebSocket upgrades
	// only.
	UpgradeRequired = "upgrade_required"
)

// 429 Too Many Requests.
const (
	// RateLimited (429): a budget is used up; policy names it, retryAfter
	// and Retry-After say how long to wait. Stream socket frames carry it
	// too.
	RateLimited = "rate_limited"
	// TooManyConcurrentRequests (429): the user already runs as many
	// requests at once as the door allows (Retry-After: 1). On the stream
	// socket, an rpc frame beyond the socket's calls in flight.
	TooManyConcurrentRequests = "too_many_concurrent_requests"
)

// 500 Internal Server Error.
const (
	// InternalError (500): the relay (or the agent) failed; retry later.
	InternalError = "internal_error"
)

// 503 Service Unavailable.
const (
	// StorageUnavailable (503): the store cannot be reached (tokens
	// cannot be checked, a change could not be saved); nothing was
	// applied; retry shortly.
	StorageUnavailable = "storage_unavailable"
	// OutcomeUnknown (503): a write (a change) may or may not have been
	// applied; retry with the same key, or read the resource, to learn
	// it.
	OutcomeUnknown = "outcome_unknown"
	// ShuttingDown (503): the relay is shutting down (Retry-After: 1).
	ShuttingDown = "shutting_down"
	// ManagementUnavailable (503): the Management API is temporarily off.
	ManagementUnavailable = "management_unavailable"
	// ManagementReadOnly (503): changes are paused; reads work.
	ManagementReadOnly = "management_read_only"
	// FamilyUnavailable (503): this part of the API is temporarily off.
	FamilyUnavailable = "family_unavailable"
	// ManagementBusy (503): heavy load; wait retryAfter seconds.
	ManagementBusy = "management_busy"
	// BrokerUnavailable (503): the linked broker cannot be reached for
	// the broker family's call (unreachable, its login waits on a
	// captcha, its rate limit, a login that failed); detail says which,
	// retryAfter when known. Nothing was sent to the broker, except for a
	// write that answers outcome_unknown instead.
	BrokerUnavailable = "broker_unavailable"
)

// 504 Gateway Timeout.
const (
	// DeadlineExceeded (504): the agent did not answer in time
	// (protocol.CodeDeadlineExceeded).
	DeadlineExceeded = "deadline_exceeded"
)

// Codes whose status depends on the door that answers them. Status
// returns the Management API's status, or 0 for a code that API never
// answers.
const (
	// AddonDisconnected (409 on the Management API, 408 on the trading
	// API): the user's trading add-on (agent) is not connected, or
	// dropped during a read (the change needs it connected). Stream
	// socket frames carry it too.
	AddonDisconnected = "addon_disconnected"
	// AccountNotFound (404 on the Management API, 400 on the trading
	// API): the account is not on the connection; on connection settings
	// fields locates the unknown ones. The agent's code too
	// (protocol.CodeAccountNotFound).
	AccountNotFound = "account_not_found"
	// UnknownFunction (no fixed status): the function is not a public
	// RPC function: 404 to a stream socket's rpc frame, 400 from an agent
	// older than the relay (protocol.CodeUnknownFunction).
	UnknownFunction = "unknown_function"
)

// Codes of the stream socket's error frames only (no HTTP status).
const (
	// InvalidFrame: the frame is JSON but not an object of its action's
	// shape.
	InvalidFrame = "invalid_frame"
	// UnknownAction: the frame's action is none the socket knows.
	UnknownAction = "unknown_action"
	// TooManyInstruments: the subscription would exceed the socket's
	// instrument limit; nothing changed.
	TooManyInstruments = "too_many_instruments"
)

// Codes of the fields array (httpapi.FieldError.Code): what is wrong with
// one field.
const (
	// FieldCodeRequired: the field is required and absent.
	FieldCodeRequired = "required"
	// FieldCodeWrongType: the value's JSON type does not fit the field.
	FieldCodeWrongType = "wrong_type"
	// FieldCodeNotAllowed: a value outside the field's enumeration
	// (allowed lists the values).
	FieldCodeNotAllowed = "not_allowed"
	// FieldCodeStringPatternMismatch: the value does not match the
	// field's format (pattern gives it when it is a regular expression).
	FieldCodeStringPatternMismatch = "string_pattern_mismatch"
	// FieldCodeOutOfRange: the value is outside the field's range (a
	// string longer than its maximum, a list of the wrong length); limit
	// gives the bound.
	FieldCodeOutOfRange = "out_of_range"
	// FieldCodeGreaterThanEqual: a number below its minimum (limit).
	FieldCodeGreaterThanEqual = "greater_than_equal"
	// FieldCodeGreaterThan: a number at or below its exclusive minimum
	// (limit).
	FieldCodeGreaterThan = "greater_than"
	// FieldCodeLessThanEqual: a number above its maximum (limit).
	FieldCodeLessThanEqual = "less_than_equal"
	// FieldCodeUnknownField: the field is not one the request takes.
	FieldCodeUnknownField = "unknown_field"
	// FieldCodeDuplicateField: a field and its alias were both sent.
	FieldCodeDuplicateField = "duplicate_field"
	// FieldCodeOneOfRequired: one of a group of fields is required and
	// none was sent.
	FieldCodeOneOfRequired = "one_of_required"
	// FieldCodeRequiredWhenDaysSet: the master trading window has days
	// but no start or end.
	FieldCodeRequiredWhenDaysSet = "required_when_days_set"
	// FieldCodeRequiredWhenEnabled: the setting is enabled but its needed
	// value is missing or zero.
	FieldCodeRequiredWhenEnabled = "required_when_enabled"
	// FieldCodeEmptyWindow: a trading window starts and ends at the same
	// time.
	FieldCodeEmptyWindow = "empty_window"
	// FieldCodeOutsideWindow: closingOnlyAfter is not strictly inside the
	// master trading window.
	FieldCodeOutsideWindow = "outside_window"
	// FieldCodeWindowsOverlap: two enabled monitor trading windows cover
	// the same time.
	FieldCodeWindowsOverlap = "windows_overlap"
	// FieldCodeRatioNotAStep: a copier ratio is not one of 0.25 to 1.75 in
	// steps of 0.25, then 2 to 10.
	FieldCodeRatioNotAStep = "ratio_not_a_step"
	// FieldCodeUnknownConnection: the connection name is not one of the
	// user's platform connections.
	FieldCodeUnknownConnection = "unknown_connection"
	// FieldCodeManagedByControls: in fields of 409 field_locked, the
	// setting is managed by the controls (blockAllSignals).
	FieldCodeManagedByControls = "managed_by_controls"
	// FieldCodeDuplicateItem: a list holds the same item twice.
	FieldCodeDuplicateItem = "duplicate_item"
	// FieldCodePrivateAddress: a URL names a loopback, private or other
	// address the relay does not send to (an alert destination's).
	FieldCodePrivateAddress = "private_address"
)
