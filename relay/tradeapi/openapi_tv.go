package tradeapi

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/profile"
	"tradebridge/trading/bridge/tradovate/tradovatewire"
)

// The broker family's machine-readable contract, served without a token
// by the broker family's Register. Both documents hold the family's trading
// routes, generated from its route table (brokerEndpoints: the desktop
// routes it serves, under /v1/api/tv, with the broker's trailing order
// types), the link routes of package relay/broker, described by hand
// here, and the error codes the family answers (brokerErrorCodes). The
// schemas keep the fields tagged family:"tv" (Order's trailDistance).
const (
	// BrokerOpenAPIPath serves the broker family's OpenAPI 3.1 document in
	// the standard profile.
	BrokerOpenAPIPath = BrokerPrefix + "openapi.json"
	// BrokerOpenAPICompatiblePath serves it in the compatible profile.
	BrokerOpenAPICompatiblePath = BrokerPrefix + "openapi.compatible.json"
)

// BrokerDocumentPaths lists the paths of the documents the broker family's
// Register serves.
var BrokerDocumentPaths = []string{BrokerOpenAPIPath, BrokerOpenAPICompatiblePath}

// registerBrokerDocuments adds the broker family's documents to mux.
func registerBrokerDocuments(mux Mux) {
	mux.Handle("GET "+BrokerOpenAPIPath, serveDocument(func() any { return BrokerOpenAPIFor(profile.Standard) }))
	mux.Handle("GET "+BrokerOpenAPICompatiblePath, serveDocument(func() any { return BrokerOpenAPIFor(profile.Compatible) }))
}

// BrokerOpenAPIFor returns the OpenAPI 3.1 document of the broker family
// (/v1/api/tv) whose success responses are those of profile p. It panics
// when the route table and the data types disagree, which tests catch.
func BrokerOpenAPIFor(p profile.Profile) map[string]any {
	doc, err := buildOpenAPI(brokerFamily, p)
	if err != nil {
		panic(err)
	}
	return doc
}

// brokerFamily is the broker family's documents.
var brokerFamily = &docFamily{
	family:          FamilyBroker,
	endpoints:       brokerEndpoints,
	codes:           brokerErrorCodes,
	statuses:        brokerStatusDescriptions,
	title:           "Trading API, broker family (/v1/api/tv)",
	compatibleTitle: "Trading API, broker family (/v1/api/tv; compatible profile)",
	info:            brokerInfoDescription,
	standard:        brokerStandardDescription,
	compatible:      brokerCompatibleDescription,
	extra:           addLinkRoutes,
}

const brokerInfoDescription = "Trading calls run in the relay against the user's linked Tradovate login: the desktop need not be running. " +
	"The routes are those of the desktop family (/v1/api/openapi.json) that the broker serves, at the same paths with /v1/api/ replaced by /v1/api/tv/, " +
	"with the same parameters and response shapes; place, flatplace and reverseposition also take the broker's trailing order types " +
	"(TrailingStop, TrailingStopLimit) and trailDistance (in price units), and order records carry trailDistance. " +
	"A login is linked, unlinked and inspected with POST and DELETE /v1/api/tv/link, POST /v1/api/tv/link/oauth and GET /v1/api/tv/status. " +
	"Errors are {success:false, error, detail, fields, retryAfter, policy, meta:{requestId}} in both profiles; " +
	"each operation lists, per status, the error codes it can answer (x-error-codes). " +
	"An order the broker refused is 400 tradovate_<reason>, Tradovate's failureReason in snake case (tradovate_unknown_reason for a reason the relay does not know); " +
	"409 tradovate_not_linked answers when no login is linked, 503 broker_unavailable when the broker cannot be used now. " +
	"404 not_found and 405 method_not_allowed (with Allow) answer paths and methods outside this document. " +
	"Every admitted request is charged to the user's budget (180 per minute, burst 20), shared with the desktop family " +
	"and the WebSocket API at /ws/stream."

const brokerStandardDescription = "Responses are shown in the standard profile, the default: {success:true, data:{…}}, " +
	"where data is always an object (lists are named: {positions:[…], count:n}); writes that place orders also carry " +
	"orderId or orderIds at the top level. The link routes answer {success:true, data:{…}} in both profiles. " +
	"Tokens issued with the compatible profile read the document at /v1/api/tv/openapi.compatible.json."

const brokerCompatibleDescription = "Responses are shown in the compatible profile: the members of data stand at the top level " +
	"next to success ({success:true, positions:[…], count:n}); the link routes alone keep {success:true, data:{…}}. " +
	"The member names are those of the standard profile (/v1/api/tv/openapi.json); errors are the same."

// brokerStatusDescriptions say what each error status means on the broker
// family: the desktop family's, where the broker changes the meaning.
var brokerStatusDescriptions = func() map[int]string {
	m := maps.Clone(statusDescriptions)
	m[http.StatusForbidden] = "the user's plan lacks the trading API or the broker family, or (writes and the link: insufficient_scope) " +
		"the API token has the read scope: they need a trade token (the WWW-Authenticate header names the scope needed)"
	m[http.StatusNotFound] = "this relay does not offer the OAuth link (no OAuth client is configured): link API-key credentials instead"
	m[http.StatusRequestTimeout] = "the body was not received in time"
	m[http.StatusConflict] = "no Tradovate login is linked (tradovate_not_linked), the account is not one of the linked login's " +
		"(account_identity_unresolved), or a write with the same Idempotency-Key or orderId is still running"
	m[http.StatusInternalServerError] = "the relay failed"
	m[http.StatusServiceUnavailable] = "the broker cannot be used now (broker_unavailable: unreachable, connecting, its login waits on a captcha " +
		"or new credentials, or its rate limit; a keyed write answered so is not recorded and runs again when repeated), " +
		"the relay cannot check tokens or read its store right now or is shutting down, or (writes) an order write reached the broker but its answer was lost " +
		"(outcome_unknown: it is never resent; read the orders before trying again)"
	m[http.StatusGatewayTimeout] = "the broker did not answer in time"
	return m
}()

// The error codes of the broker family, decided from what relay/broker
// answers (see its Manager.Call): the desktop family's codes of each
// route (errorCodes), except
//
//   - no agent stands between: 408 addon_disconnected and
//     platform_unavailable (the latter is 503 broker_unavailable here)
//     and 400 unknown_function are never answered;
//   - an account the login does not carry is 409
//     account_identity_unresolved, not 400 account_not_found;
//   - the broker has no ATM templates: a template is 400 not_supported,
//     never atm_template_not_found;
//
// and every route answers 409 tradovate_not_linked and 503
// broker_unavailable; every write (each touches orders or positions) 400
// tradovate_<reason> for each of the broker's failure reasons
// (tradovateRejectCodes).
var brokerNotAnswered = []string{
	errcode.AddonDisconnected, errcode.PlatformUnavailable, protocol.CodeUnknownFunction,
	protocol.CodeAccountNotFound, protocol.CodeTemplateNotFound,
}

// tradovateRejectCodes are the codes of the orders the broker refuses: one per
// failure reason of its table, unknown reasons included.
var tradovateRejectCodes = func() []string {
	out := make([]string, 0, len(tradovatewire.FailureReasons))
	for _, r := range tradovatewire.FailureReasons {
		out = append(out, tradovatewire.RejectCode(r))
	}
	sort.Strings(out)
	return slices.Compact(out)
}()

// brokerErrorCodes returns the codes ep, a route of brokerEndpoints, documents
// by status, each list sorted.
func brokerErrorCodes(ep *endpoint) map[int][]string {
	out := errorCodes(ep)
	for st, codes := range out {
		out[st] = slices.DeleteFunc(codes, func(c string) bool { return slices.Contains(brokerNotAnswered, c) })
	}
	out[http.StatusConflict] = append(out[http.StatusConflict], errcode.TradovateNotLinked)
	out[http.StatusServiceUnavailable] = append(out[http.StatusServiceUnavailable], errcode.BrokerUnavailable)
	if ep.Param("account", inPath) != nil || ep.Param("account", inBody) != nil {
		out[http.StatusConflict] = append(out[http.StatusConflict], errcode.AccountIdentityUnresolved)
	}
	if isWrite(ep.Fn) {
		out[http.StatusBadRequest] = append(out[http.StatusBadRequest], tradovateRejectCodes...)
	}
	return sortedCodes(out)
}

// sortedCodes sorts each list of out and drops its repeats and the
// statuses left without a code.
func sortedCodes(out map[int][]string) map[int][]string {
	for st, codes := range out {
		if len(codes) == 0 {
			delete(out, st)
			continue
		}
		sort.Strings(codes)
		out[st] = slices.Compact(codes)
	}
	return out
}

// The link routes of package relay/broker (its LinkPath, LinkOAuthPath and
// StatusPath; a test holds them equal). The OAuth callback
// (/v1/tv/oauth/callback) is the browser's, not a bot's, and is left out.
const (
	brokerLinkPath      = BrokerPrefix + "link"
	brokerLinkOAuthPath = BrokerPrefix + "link/oauth"
	brokerStatusPath    = BrokerPrefix + "status"
)

// linkFieldMax bounds every text field of a link (relay/broker's bound).
const linkFieldMax = 4096

// linkRoute is one link route, described by hand.
type linkRoute struct {
	method, path, operationID, summary, description string
	// body is the request body's schema; nil means the route takes none.
	body object
	// data is the component name of the answer's data; top adds members
	// next to success and data.
	data string
	top  object
	// codes lists the error codes, by status.
	codes map[int][]string
}

// Error codes every link route shares: admission (the broker family's door)
// and the relay's own failures.
var linkCommonCodes = map[int][]string{
	http.StatusUnauthorized:        {errcode.Unauthorized},
	http.StatusForbidden:           {errcode.PlanRequired},
	http.StatusTooManyRequests:     {errcode.RateLimited},
	http.StatusInternalServerError: {errcode.InternalError},
	http.StatusServiceUnavailable:  {errcode.StorageUnavailable, errcode.ShuttingDown},
}

// linkBodyCodes are those of a route that reads a JSON object body whose
// fields it checks (relay/broker's readObject) and whose env must be demo
// or live.
var linkBodyCodes = map[int][]string{
	http.StatusBadRequest: {errcode.InvalidJSON, errcode.InvalidField, errcode.MissingRequiredFields, errcode.InvalidArgument},
	// The guard's and the body reader's.
	http.StatusRequestTimeout:        {errcode.BodyTimeout},
	http.StatusRequestEntityTooLarge: {errcode.BodyTooLarge},
	http.StatusUnsupportedMediaType:  {errcode.UnsupportedContentType},
}

// linkCodes merges code lists into one, by status, sorted.
func linkCodes(lists ...map[int][]string) map[int][]string {
	out := map[int][]string{}
	for _, m := range lists {
		for st, codes := range m {
			out[st] = append(out[st], codes...)
		}
	}
	return sortedCodes(out)
}

// linkRoutes are the link routes, in the order of docs/tradovate.md.
var linkRoutes = []linkRoute{
	{
		method: http.MethodPost, path: brokerLinkPath, operationID: "LinkBroker_tv_link",
		summary: "Link a Tradovate login with API-key credentials",
		description: "The relay logs in once to check the credentials and keeps that session. Nothing is stored when the broker refuses " +
			"them (400 broker_login_failed) or cannot be reached (503 broker_unavailable). Linking again replaces the link. " +
			"The secrets are sealed before they are stored, and never returned, logged or put in an error.",
		body: object{
			"type": "object", "additionalProperties": false,
			"required": []string{"env", "username", "password", "appId", "appVersion", "cid", "sec"},
			"properties": object{
				"env":        envSchema(),
				"username":   linkText("the Tradovate user name", true, false),
				"password":   linkText("the Tradovate password", true, true),
				"appId":      linkText("the API key's application id", true, false),
				"appVersion": linkText("the API key's application version", true, false),
				"cid":        object{"type": "integer", "minimum": 1, "description": "the API key's client id"},
				"sec":        linkText("the API key's secret", true, true),
				"deviceId":   linkText("the device the broker ties the login's sessions to; by default the link's own, kept when the same login is linked again", false, false),
			},
		},
		data: "BrokerStatus",
		codes: linkCodes(linkCommonCodes, linkBodyCodes, scopeCodes, map[int][]string{
			http.StatusBadRequest:         {errcode.BrokerLoginFailed},
			http.StatusServiceUnavailable: {errcode.BrokerUnavailable},
		}),
	},
	{
		method: http.MethodPost, path: brokerLinkOAuthPath, operationID: "LinkBrokerOAuth_tv_link_oauth",
		summary: "Start linking a Tradovate login through the broker's OAuth page",
		description: "Answers the broker's authorization page, for the dashboard to send the user's browser to. The broker sends the browser " +
			"back to the relay (GET /v1/tv/oauth/callback, not for bots), which stores the link; the one-time state lasts 10 minutes and binds " +
			"the callback to the user who started it. Off unless the relay has an OAuth client: then 404 not_found.",
		body: object{
			"type": "object", "additionalProperties": false,
			"required":   []string{"env"},
			"properties": object{"env": envSchema()},
		},
		data: "BrokerOAuthStart",
		codes: linkCodes(linkCommonCodes, linkBodyCodes, scopeCodes, map[int][]string{
			http.StatusNotFound:           {errcode.NotFound},
			http.StatusServiceUnavailable: {errcode.BrokerUnavailable},
		}),
	},
	{
		method: http.MethodDelete, path: brokerLinkPath, operationID: "UnlinkBroker_tv_link",
		summary: "Unlink the Tradovate login",
		description: "Stops the link's instance, then deletes the link, its strategy-tag ownership, write journal and order map. " +
			"Orders and positions at the broker are untouched. changed is false when nothing was linked.",
		data: "BrokerUnlinked",
		top:  object{"changed": object{"type": "boolean", "description": "whether a link was deleted"}},
		codes: linkCodes(linkCommonCodes, scopeCodes, map[int][]string{
			http.StatusBadRequest: {errcode.UnexpectedBody},
		}),
	},
	{
		method: http.MethodGet, path: brokerStatusPath, operationID: "GetBrokerStatus_tv_status",
		summary:     "The state of the user's Tradovate link",
		description: "Never holds a secret. Answers linked:false when no login is linked.",
		data:        "BrokerStatus",
		codes: linkCodes(linkCommonCodes, map[int][]string{
			http.StatusBadRequest: {errcode.UnexpectedBody, errcode.UnknownParameter},
		}),
	},
}

// envSchema is the schema of a link's env.
func envSchema() object {
	return object{"type": "string", "enum": []string{"demo", "live"}, "description": "the broker's environment: demo (simulated) or live; matched exactly"}
}

// linkText is the schema of a text field of a link; secret marks a
// password or a key, which the relay never returns.
func linkText(doc string, required, secret bool) object {
	s := object{"type": "string", "maxLength": linkFieldMax, "description": doc}
	if required {
		s["minLength"] = 1
	}
	if secret {
		s["format"] = "password"
	}
	return s
}

// linkSchemas are the components of the link routes' answers.
func linkSchemas() object {
	dateTime := func(doc string) object { return object{"type": "string", "format": "date-time", "description": doc} }
	return object{
		"BrokerStatus": object{
			"type":        "object",
			"description": "The state of the user's broker link, as GET /v1/api/tv/status answers it. It never holds a secret.",
			"required":    []string{"accounts", "connected", "linked"},
			"properties": object{
				"linked":   object{"type": "boolean", "description": "whether a Tradovate login is linked; the members below linkedAt are absent when not"},
				"env":      object{"type": "string", "enum": []string{"demo", "live"}, "description": "the broker's environment"},
				"method":   object{"type": "string", "enum": []string{"apikey", "oauth"}, "description": "how the login was linked: API-key credentials or the broker's OAuth page"},
				"linkedAt": dateTime("when the login was linked"),
				"session": object{"type": "string", "description": "the login's state: ok, connecting, logging_in, login_failed, captcha_required (until retryAt), " +
					"rate_limited (until retryAt) or unreachable. login_failed needs the user: link again; captcha_required is tried again at retryAt " +
					"(logging in once on Tradovate's site meanwhile helps)"},
				"tokenExpires": dateTime("when the login's token expires; it is renewed before"),
				"retryAt":      dateTime("when a rate-limited login, or one waiting after a captcha, calls the broker again"),
				"connected":    object{"type": "boolean", "description": "whether the broker's user-data socket is up"},
				"accounts":     object{"type": "array", "items": object{"type": "string"}, "description": "the login's accounts, as last seen"},
				"marketData": object{"type": "boolean", "description": "true while the broker's market-data socket is up (absent when not); it is open while an " +
					"open position or a quote subscription needs it, and while it is down open positions have no price (unrealizedUnknown)"},
				"marketDataRefused": object{"type": "array", "items": object{"type": "string"}, "description": "the instruments whose quotes the broker " +
					"refuses (no market-data entitlement on the login, or delayed data only): positions in them have no price and an unknown " +
					"unrealized P&L (unrealizedUnknown), and monitors counting it are blind. Asked again every minute; absent when none"},
			},
		},
		"BrokerUnlinked": object{
			"type":       "object",
			"required":   []string{"linked"},
			"properties": object{"linked": object{"type": "boolean", "const": false}},
		},
		"BrokerOAuthStart": object{
			"type":     "object",
			"required": []string{"authorizeUrl", "expiresAt"},
			"properties": object{
				"authorizeUrl": object{"type": "string", "format": "uri", "description": "the broker's authorization page, with the one-time state: send the user's browser there"},
				"expiresAt":    dateTime("when the one-time state expires (10 minutes)"),
			},
		},
	}
}

// linkEnvelope is the schema of lr's answer: {success:true, data:…} and
// lr's top members.
func linkEnvelope(lr *linkRoute) object {
	props := object{"success": object{"type": "boolean", "const": true}, "data": ref(lr.data)}
	required := []string{"success", "data"}
	for k, v := range lr.top {
		props[k] = v
		required = append(required, k)
	}
	return object{"type": "object", "required": required, "properties": props}
}

// addLinkRoutes adds the link routes and their schemas to f's document.
func addLinkRoutes(f *docFamily, schemas, paths object) error {
	own := linkSchemas()
	for i := range linkRoutes {
		lr := &linkRoutes[i]
		own[lr.data+"Response"] = linkEnvelope(lr)
	}
	for name, s := range own {
		if _, taken := schemas[name]; taken {
			return fmt.Errorf("api: the link routes' schema %s is also a generated schema", name)
		}
		schemas[name] = s
	}
	for i := range linkRoutes {
		lr := &linkRoutes[i]
		responses := object{"200": object{
			"description": "success (in both profiles: {success:true, data:{…}})",
			"headers":     object{"RateLimit": header(hRateLimit, true), "RateLimit-Policy": header(hRateLimitPolicy, true)},
			"content":     object{"application/json": object{"schema": ref(lr.data + "Response")}},
		}}
		for st, codes := range lr.codes {
			responses[strconv.Itoa(st)] = errorResponse(f.statuses, st, codes)
		}
		op := object{
			"operationId": lr.operationID,
			"summary":     lr.summary,
			"description": lr.description,
			"responses":   responses,
		}
		if lr.body != nil {
			op["requestBody"] = object{
				"required": true,
				"content":  object{"application/json": object{"schema": lr.body}},
			}
		}
		item, _ := paths[lr.path].(object)
		if item == nil {
			item = object{}
			paths[lr.path] = item
		}
		item[strings.ToLower(lr.method)] = op
	}
	return nil
}
