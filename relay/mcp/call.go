package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"tradebridge/protocol"
	"tradebridge/relay/activity"
	"tradebridge/relay/admit"
	"tradebridge/relay/auth"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/profile"
	"tradebridge/relay/tradecall"
)

// errNoCaller is the protocol error of a handler run without an admitted
// caller, which ServeHTTP never lets happen.
var errNoCaller = errors.New("mcp: the request was not admitted")

// trade is the handler of fn's tool in family f: the scope of a write,
// the trading budget, the arguments checked against the route table as
// the socket's rpc checks them, then the call, recorded in the activity
// log as the HTTP routes' are.
func (s *Server) trade(f *family, fn string) sdk.ToolHandler {
	scope := tradecall.FunctionScope(fn)
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		p, ok := principal(req.Extra)
		if !ok {
			return nil, errNoCaller
		}
		if e := admit.RequireScope(p, scope); e != nil {
			return failure(e), nil
		}
		if e := s.opts.Admit.Spend(p, &s.door, s.opts.Trading); e != nil {
			return failure(e), nil
		}
		call, e := f.table.Prepare(fn, req.Params.Arguments)
		if e != nil {
			return failure(e), nil
		}
		o := f.calls.Run(ctx, p, call)
		f.calls.Record(p, call, o)
		return s.outcome(o), nil
	}
}

// outcome is the tool result of a trading call's outcome: the standard
// profile's data, or the error.
func (s *Server) outcome(o tradecall.Outcome) *sdk.CallToolResult {
	if o.Gone {
		return failure(&httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.OutcomeUnknown,
			Detail: "the request ended before the outcome was known; retry with the same idempotencyKey to learn it"})
	}
	var r *sdk.CallToolResult
	if o.Err != nil {
		r = failure(o.Err)
	} else if reply, e := tradecall.Render(s.log, profile.Standard, o.Fn, o.Result); e != nil {
		r = failure(e)
	} else {
		data := reply.Get("data")
		summary := summarize(o.Fn, data)
		if o.Replayed {
			summary += " (the recorded outcome of an earlier call with this idempotencyKey; nothing ran again)"
		}
		r = success(summary, data)
	}
	if o.Replayed {
		r.Meta = sdk.Meta{metaReplayed: true}
	}
	return r
}

// metaReplayed marks, in a result's _meta, the recorded outcome of a
// write repeated with its idempotencyKey (the HTTP routes' header
// Idempotent-Replayed).
const metaReplayed = "tradebridge/replayed"

// success is a tool result carrying data (a JSON object) as structured
// content, with summary and the data as JSON text for clients that read
// text alone.
func success(summary string, data json.RawMessage) *sdk.CallToolResult {
	return &sdk.CallToolResult{
		StructuredContent: data,
		Content:           []sdk.Content{&sdk.TextContent{Text: summary}, &sdk.TextContent{Text: string(data)}},
	}
}

// failure is a tool error carrying e's error object, as the HTTP routes
// answer it, as structured content.
func failure(e *httpapi.Error) *sdk.CallToolResult {
	body, err := httpapi.EncodeError(*e)
	if err != nil {
		body = json.RawMessage(`{"success":false,"error":"internal_error"}`)
	}
	status := e.Status
	if status == 0 {
		status = errcode.Status(e.Code)
	}
	return toolError(e.Code, status, e.Detail, body)
}

// toolError is a tool error whose structured content is body, an error
// object, with its code, status and detail as a line of text before it.
func toolError(code string, status int, detail string, body json.RawMessage) *sdk.CallToolResult {
	text := code
	if status != 0 {
		text += " (" + strconv.Itoa(status) + ")"
	}
	if detail != "" {
		text += ": " + detail
	}
	return &sdk.CallToolResult{IsError: true, StructuredContent: body,
		Content: []sdk.Content{&sdk.TextContent{Text: text}, &sdk.TextContent{Text: string(body)}}}
}

// summarize is a line saying what data holds: the operation, then its
// lists' counts ("ListPositions: 2 positions"), the order it placed, or
// the names of its members.
func summarize(fn string, data json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return fn + ": done"
	}
	var parts []string
	if id := text(m["orderId"]); id != "" {
		parts = append(parts, "order "+id)
	}
	var lists []string
	for k, v := range m {
		if v = bytes.TrimSpace(v); len(v) > 0 && v[0] == '[' {
			lists = append(lists, k)
		}
	}
	sort.Strings(lists)
	for _, k := range lists {
		var items []json.RawMessage
		_ = json.Unmarshal(m[k], &items)
		parts = append(parts, fmt.Sprintf("%d %s", len(items), k))
	}
	if len(parts) == 0 {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if len(keys) > 8 {
			keys = append(keys[:8], "…")
		}
		parts = append(parts, "fields "+strings.Join(keys, ", "))
	}
	return fn + ": " + strings.Join(parts, "; ")
}

// text reads a JSON string, "" for anything else.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// activityEndpoint checks GetActivity's arguments: the activity route's
// parameters.
var activityEndpoint = &activity.Endpoint

// getActivity is GetActivity's handler: the activity route's read, on its
// budget.
func (s *Server) getActivity(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	p, ok := principal(req.Extra)
	if !ok {
		return nil, errNoCaller
	}
	if e := s.opts.Admit.Spend(p, &s.door, s.opts.ActivityBudget); e != nil {
		return failure(e), nil
	}
	args, e := tradecall.ParseArgs(activityEndpoint, req.Params.Arguments)
	if e != nil {
		return failure(e), nil
	}
	q, e := activity.Query(args)
	if e != nil {
		return failure(e), nil
	}
	page, err := activity.ReadPage(ctx, s.opts.Activity, p.UserID, q)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("reading the activity log", zap.String("user", p.UserID), zap.Error(err))
		}
		return failure(&httpapi.Error{Status: http.StatusServiceUnavailable, Code: errcode.StorageUnavailable,
			Detail: "the relay cannot read its store right now; retry shortly", RetryAfter: 5}), nil
	}
	data, err := httpapi.Marshal(page)
	if err != nil {
		return nil, err
	}
	return success(fmt.Sprintf("%s: %d entries", ToolGetActivity, len(page.Events)), data), nil
}

// manageRead is the handler of a Management API read of resource: GET
// {family}/{resource}[/{id}] in process, whose own gate and read budget
// hold.
func (s *Server) manageRead(resource string) sdk.ToolHandler {
	ep := &tradecall.Endpoint{Params: manageParams(resource)}
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		p, ok := principal(req.Extra)
		if !ok {
			return nil, errNoCaller
		}
		if !p.Plan.AtLeast(auth.PlanElite) {
			return failure(&httpapi.Error{Status: http.StatusForbidden, Code: errcode.EliteRequired,
				Detail: "the Management API needs the elite plan"}), nil
		}
		args, e := tradecall.ParseArgs(ep, req.Params.Arguments)
		if e != nil {
			return failure(e), nil
		}
		fam, _ := args["family"].(string)
		if fam == "" {
			fam = "desktop"
		}
		path := fam + "/" + resource
		if id, _ := args["id"].(string); id != "" {
			path += "/" + id
		}
		src := protocol.ActivitySource{Kind: protocol.SourceMCP, ID: auth.TokenID(p.TokenHash)}
		status, answer := s.opts.Manage.Invoke(ctx, p, src, http.MethodGet, path, nil)
		return manageResult(resource, status, answer), nil
	}
}

// manageResult is the tool result of a Management API answer: its data,
// or its error object.
func manageResult(resource string, status int, answer []byte) *sdk.CallToolResult {
	var env struct {
		Success bool            `json:"success"`
		Data    json.RawMessage `json:"data"`
		Error   string          `json:"error"`
		Detail  string          `json:"detail"`
	}
	if json.Unmarshal(answer, &env) != nil {
		return failure(&httpapi.Error{Status: http.StatusInternalServerError, Code: errcode.InternalError,
			Detail: "the Management API answered with a body the relay cannot read"})
	}
	if status/100 != 2 || !env.Success {
		return toolError(env.Error, status, env.Detail, answer)
	}
	data := env.Data
	if d := bytes.TrimSpace(data); len(d) > 0 && d[0] == '[' {
		// A list is named, as the trading results' lists are: structured
		// content is an object.
		var items []json.RawMessage
		_ = json.Unmarshal(d, &items)
		data, _ = httpapi.Marshal(map[string]any{resource: json.RawMessage(d), "count": len(items)})
	}
	return success(summarize("Get"+strings.ToUpper(resource[:1])+resource[1:], data), data)
}
