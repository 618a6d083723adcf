package errcode

import "net/http"

// Entry is one code of the list: its constant's name and its value.
type Entry struct {
	Name string
	Code string
}

// All lists every error code (the error member of an answer), grouped by
// status as the constants are. Tests iterate it; do not modify it.
var All = []Entry{
	{"InvalidJSON", InvalidJSON},
	{"InvalidField", InvalidField},
	{"UnexpectedBody", UnexpectedBody},
	{"UnknownParameter", UnknownParameter},
	{"InvalidPath", InvalidPath},
	{"InvalidArgument", InvalidArgument},
	{"BrokerLoginFailed", BrokerLoginFailed},
	{"MissingRequiredFields", MissingRequiredFields},
	{"ProtocolVersionUnsupported", ProtocolVersionUnsupported},
	{"Unauthorized", Unauthorized},
	{"PairingCodeInvalid", PairingCodeInvalid},
	{"PlanRequired", PlanRequired},
	{"EliteRequired", EliteRequired},
	{"NotAvailable", NotAvailable},
	{"AddressNotAllowed", AddressNotAllowed},
	{"NotFound", NotFound},
	{"MethodNotAllowed", MethodNotAllowed},
	{"BodyTimeout", BodyTimeout},
	{"PlatformUnavailable", PlatformUnavailable},
	{"RequestInProgress", RequestInProgress},
	{"AlreadyExists", AlreadyExists},
	{"ConcurrentModification", ConcurrentModification},
	{"AddonVersionUnsupported", AddonVersionUnsupported},
	{"AccountIdentityUnresolved", AccountIdentityUnresolved},
	{"TradovateNotLinked", TradovateNotLinked},
	{"MonitorLocked", MonitorLocked},
	{"MonitorStoppedUseRestart", MonitorStoppedUseRestart},
	{"MonitorNotStopped", MonitorNotStopped},
	{"WouldRetrip", WouldRetrip},
	{"TandemDependency", TandemDependency},
	{"TandemRequiresMonitor", TandemRequiresMonitor},
	{"CopierCycle", CopierCycle},
	{"DuplicateCopier", DuplicateCopier},
	{"DuplicateFollower", DuplicateFollower},
	{"FollowerConflict", FollowerConflict},
	{"AutosyncConflict", AutosyncConflict},
	{"GroupNameConflict", GroupNameConflict},
	{"GroupLimitReached", GroupLimitReached},
	{"TemplateNameConflict", TemplateNameConflict},
	{"LimitReached", LimitReached},
	{"FieldLocked", FieldLocked},
	{"SwitchesLocked", SwitchesLocked},
	{"EmailUnavailable", EmailUnavailable},
	{"PreconditionFailed", PreconditionFailed},
	{"BodyTooLarge", BodyTooLarge},
	{"UnsupportedContentType", UnsupportedContentType},
	{"IdempotencyKeyReused", IdempotencyKeyReused},
	{"ValidationFailed", ValidationFailed},
	{"FieldReadOnly", FieldReadOnly},
	{"FieldNotApplicable", FieldNotApplicable},
	{"ImmutableField", ImmutableField},
	{"UseKillSwitchEndpoint", UseKillSwitchEndpoint},
	{"InvalidReplacement", InvalidReplacement},
	{"InvalidAtmConfig", InvalidAtmConfig},
	{"UpgradeRequired", UpgradeRequired},
	{"RateLimited", RateLimited},
	{"TooManyConcurrentRequests", TooManyConcurrentRequests},
	{"InternalError", InternalError},
	{"StorageUnavailable", StorageUnavailable},
	{"OutcomeUnknown", OutcomeUnknown},
	{"ShuttingDown", ShuttingDown},
	{"ManagementUnavailable", ManagementUnavailable},
	{"ManagementReadOnly", ManagementReadOnly},
	{"FamilyUnavailable", FamilyUnavailable},
	{"ManagementBusy", ManagementBusy},
	{"BrokerUnavailable", BrokerUnavailable},
	{"DeadlineExceeded", DeadlineExceeded},
	{"AddonDisconnected", AddonDisconnected},
	{"AccountNotFound", AccountNotFound},
	{"UnknownFunction", UnknownFunction},
	{"InvalidFrame", InvalidFrame},
	{"UnknownAction", UnknownAction},
	{"TooManyInstruments", TooManyInstruments},
}

// Fields lists every code of the fields array. Tests iterate it; do not
// modify it.
var Fields = []Entry{
	{"FieldCodeRequired", FieldCodeRequired},
	{"FieldCodeWrongType", FieldCodeWrongType},
	{"FieldCodeNotAllowed", FieldCodeNotAllowed},
	{"FieldCodeStringPatternMismatch", FieldCodeStringPatternMismatch},
	{"FieldCodeOutOfRange", FieldCodeOutOfRange},
	{"FieldCodeGreaterThanEqual", FieldCodeGreaterThanEqual},
	{"FieldCodeGreaterThan", FieldCodeGreaterThan},
	{"FieldCodeLessThanEqual", FieldCodeLessThanEqual},
	{"FieldCodeUnknownField", FieldCodeUnknownField},
	{"FieldCodeDuplicateField", FieldCodeDuplicateField},
	{"FieldCodeOneOfRequired", FieldCodeOneOfRequired},
	{"FieldCodeRequiredWhenDaysSet", FieldCodeRequiredWhenDaysSet},
	{"FieldCodeRequiredWhenEnabled", FieldCodeRequiredWhenEnabled},
	{"FieldCodeEmptyWindow", FieldCodeEmptyWindow},
	{"FieldCodeOutsideWindow", FieldCodeOutsideWindow},
	{"FieldCodeWindowsOverlap", FieldCodeWindowsOverlap},
	{"FieldCodeRatioNotAStep", FieldCodeRatioNotAStep},
	{"FieldCodeUnknownConnection", FieldCodeUnknownConnection},
	{"FieldCodeManagedByControls", FieldCodeManagedByControls},
	{"FieldCodeDuplicateItem", FieldCodeDuplicateItem},
	{"FieldCodePrivateAddress", FieldCodePrivateAddress},
}

// statuses are the fixed statuses of the codes that have one.
var statuses = map[string]int{
	InvalidJSON:                http.StatusBadRequest,
	InvalidField:               http.StatusBadRequest,
	UnexpectedBody:             http.StatusBadRequest,
	UnknownParameter:           http.StatusBadRequest,
	InvalidPath:                http.StatusBadRequest,
	InvalidArgument:            http.StatusBadRequest,
	BrokerLoginFailed:          http.StatusBadRequest,
	MissingRequiredFields:      http.StatusBadRequest,
	ProtocolVersionUnsupported: http.StatusBadRequest,
	Unauthorized:               http.StatusUnauthorized,
	PairingCodeInvalid:         http.StatusUnauthorized,
	PlanRequired:               http.StatusForbidden,
	EliteRequired:              http.StatusForbidden,
	NotAvailable:               http.StatusForbidden,
	AddressNotAllowed:          http.StatusForbidden,
	NotFound:                   http.StatusNotFound,
	AccountNotFound:            http.StatusNotFound,
	MethodNotAllowed:           http.StatusMethodNotAllowed,
	BodyTimeout:                http.StatusRequestTimeout,
	AddonDisconnected:          http.StatusConflict,
	PlatformUnavailable:        http.StatusRequestTimeout,
	RequestInProgress:          http.StatusConflict,
	AlreadyExists:              http.StatusConflict,
	ConcurrentModification:     http.StatusConflict,
	AddonVersionUnsupported:    http.StatusConflict,
	AccountIdentityUnresolved:  http.StatusConflict,
	TradovateNotLinked:         http.StatusConflict,
	MonitorLocked:              http.StatusConflict,
	MonitorStoppedUseRestart:   http.StatusConflict,
	MonitorNotStopped:          http.StatusConflict,
	WouldRetrip:                http.StatusConflict,
	TandemDependency:           http.StatusConflict,
	TandemRequiresMonitor:      http.StatusConflict,
	CopierCycle:                http.StatusConflict,
	DuplicateCopier:            http.StatusConflict,
	DuplicateFollower:          http.StatusConflict,
	FollowerConflict:           http.StatusConflict,
	AutosyncConflict:           http.StatusConflict,
	GroupNameConflict:          http.StatusConflict,
	GroupLimitReached:          http.StatusConflict,
	TemplateNameConflict:       http.StatusConflict,
	LimitReached:               http.StatusConflict,
	FieldLocked:                http.StatusConflict,
	SwitchesLocked:             http.StatusConflict,
	EmailUnavailable:           http.StatusConflict,
	PreconditionFailed:         http.StatusPreconditionFailed,
	BodyTooLarge:               http.StatusRequestEntityTooLarge,
	UnsupportedContentType:     http.StatusUnsupportedMediaType,
	IdempotencyKeyReused:       http.StatusUnprocessableEntity,
	ValidationFailed:           http.StatusUnprocessableEntity,
	FieldReadOnly:              http.StatusUnprocessableEntity,
	FieldNotApplicable:         http.StatusUnprocessableEntity,
	ImmutableField:             http.StatusUnprocessableEntity,
	UseKillSwitchEndpoint:      http.StatusUnprocessableEntity,
	InvalidReplacement:         http.StatusUnprocessableEntity,
	InvalidAtmConfig:           http.StatusUnprocessableEntity,
	UpgradeRequired:            http.StatusUpgradeRequired,
	RateLimited:                http.StatusTooManyRequests,
	TooManyConcurrentRequests:  http.StatusTooManyRequests,
	InternalError:              http.StatusInternalServerError,
	StorageUnavailable:         http.StatusServiceUnavailable,
	OutcomeUnknown:             http.StatusServiceUnavailable,
	ShuttingDown:               http.StatusServiceUnavailable,
	ManagementUnavailable:      http.StatusServiceUnavailable,
	ManagementReadOnly:         http.StatusServiceUnavailable,
	FamilyUnavailable:          http.StatusServiceUnavailable,
	ManagementBusy:             http.StatusServiceUnavailable,
	BrokerUnavailable:          http.StatusServiceUnavailable,
	DeadlineExceeded:           http.StatusGatewayTimeout,
}

// Status returns the HTTP status code is answered with, or 0 when it has
// no fixed one: UnknownFunction (404 on the socket, 400 from an agent),
// the stream frames' codes, field codes, the agent's codes the relay only
// passes on, and strings that are no code. AddonDisconnected and
// AccountNotFound return their Management API status (409, 404); the
// trading API answers them 408 and 400 (tradecall.CallError).
func Status(code string) int { return statuses[code] }

// Known reports whether code is one of All.
func Known(code string) bool {
	for _, e := range All {
		if e.Code == code {
			return true
		}
	}
	return false
}
