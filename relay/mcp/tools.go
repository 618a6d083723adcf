package mcp

import (
	"log/slog"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap/exp/zapslog"

	"tradebridge/relay/activity"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
	"tradebridge/relay/tradecall"
)

// Names of the tools that are not trading operations.
const (
	ToolGetActivity = "GetActivity"
	ToolGetMonitors = "GetMonitors"
	ToolGetCopiers  = "GetCopiers"
)

// instructions tell an assistant how the tools fit together.
const instructions = "Tools of a futures trader's accounts on their trading platform (the desktop family, run by " +
	"the trader's agent next to the platform) and, when linked, at their broker (tools prefixed tv_, run by the relay). " +
	"Start with ListAccounts; name instruments as ES 12-26, ESZ26 or a root such as ES (the resource " +
	ResourceInstruments + "). Tools that place, change, cancel or flatten act on real positions: confirm them with the " +
	"user first, and pass an idempotencyKey of your own so that a retry never trades twice. A refusal is a tool error " +
	"whose error code is explained by the resource " + ResourceErrors + "; rate_limited says retryAfter seconds."

// build makes the SDK server of a tool set: the desktop family's tools,
// the broker family's with withBroker, GetActivity, the Management API's
// reads with withManage, and the resources.
func (s *Server) build(set toolSet) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "tradebridge-relay", Title: "Tradebridge", Version: s.opts.Version},
		&sdk.ServerOptions{Instructions: instructions, Logger: slog.New(zapslog.NewHandler(s.log.Core()))})
	s.addFamily(srv, s.desktop)
	if set&withBroker != 0 {
		s.addFamily(srv, s.broker)
	}
	if s.opts.Activity != nil {
		srv.AddTool(activityTool(), s.getActivity)
	}
	if set&withManage != 0 {
		srv.AddTool(manageTool(ToolGetMonitors, "monitors"), s.manageRead("monitors"))
		srv.AddTool(manageTool(ToolGetCopiers, "copiers"), s.manageRead("copiers"))
	}
	addResources(srv)
	return srv
}

// addFamily adds one tool per function of f's route table.
func (s *Server) addFamily(srv *sdk.Server, f *family) {
	for _, fn := range f.table.Functions() {
		srv.AddTool(tradingTool(f, fn), s.trade(f, fn))
	}
}

// tradingTool describes fn of family f as a tool: its name, the route
// table's description, its arguments' schema and its annotations.
func tradingTool(f *family, fn string) *sdk.Tool {
	desc := f.table.Describe(fn)
	if f.name != "" {
		desc = "Broker family (the linked broker login, run by the relay; /v1/api/tv): " + desc
	}
	t := &sdk.Tool{Name: f.prefix + fn, Description: desc, InputSchema: f.table.ArgsSchema(fn)}
	if f.table.Write(fn) {
		t.Annotations = writeAnnotations()
	} else {
		t.Annotations = readAnnotations(true)
	}
	return t
}

// readAnnotations are a read's hints; open says it reaches the trading
// platform or the broker (the world outside the relay).
func readAnnotations(open bool) *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: ptr(false), OpenWorldHint: ptr(open)}
}

// writeAnnotations are a trading write's hints: it changes real orders
// and positions, and a repeat without an idempotencyKey runs again.
func writeAnnotations() *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{ReadOnlyHint: false, IdempotentHint: false, DestructiveHint: ptr(true), OpenWorldHint: ptr(true)}
}

func ptr[T any](v T) *T { return &v }

// activityTool describes GetActivity, whose arguments are the activity
// route's query parameters (activity.Endpoint), typed.
func activityTool() *sdk.Tool {
	return &sdk.Tool{Name: ToolGetActivity, Description: activity.Endpoint.Summary + ". " +
		"Each entry says what was done or decided (an order placed or refused, a monitor tripped, the kill switch), by which source, and its outcome; " +
		"data.next is the before of the next, older page.",
		InputSchema: tradecall.ObjectSchema(activity.Endpoint.Params, activity.Endpoint.OneOf),
		Annotations: readAnnotations(false)}
}

// manageTool describes a Management API read of resource (monitors,
// copiers) of either family.
func manageTool(name, resource string) *sdk.Tool {
	return &sdk.Tool{Name: name,
		Description: "The " + resource + " of the Management API (elite plan), with their state as the agent or the broker family last reported it: " +
			"all of the family's " + resource + ", or one by id. GET /v1/api/manage/{family}/" + resource + ".",
		InputSchema: tradecall.ObjectSchema(manageParams(resource), nil),
		Annotations: readAnnotations(false)}
}

// manageParams are the arguments of a Management API read.
func manageParams(resource string) []tradecall.Param {
	return []tradecall.Param{
		{Name: "family", In: tradecall.InBody, Type: tradecall.TString, Enum: []string{"desktop", "tv"},
			Doc: "desktop (default): the agent's " + resource + "; tv: the broker family's"},
		{Name: "id", In: tradecall.InBody, Type: tradecall.TString, Format: tradecall.FormatName, Max: 64,
			Doc: "one " + resource[:len(resource)-1] + " by id; all when omitted"},
	}
}

// writeShuttingDown answers a request that came after Close.
func writeShuttingDown(w http.ResponseWriter) {
	httpapi.WriteError(w, http.StatusServiceUnavailable, httpapi.Error{Code: errcode.ShuttingDown,
		Detail: "the relay is shutting down; retry on another node", RetryAfter: 1})
}
