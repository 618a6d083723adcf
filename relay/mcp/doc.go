// Package mcp serves the relay's Model Context Protocol endpoint, /mcp:
// the door AI assistants use to read a trader's accounts and, with a
// trade token, to trade. It is one door more over the relay's own parts,
// never one rule more (DESIGN.md): it admits through package admit,
// calls the trading operations through package tradecall as the stream
// socket does, and reads the activity log and the Management API in
// process.
//
// # Transport
//
// The endpoint is MCP's Streamable HTTP transport, served by the official
// Go SDK (github.com/modelcontextprotocol/go-sdk) in its stateless form:
// every POST stands alone, with no session to keep, so any relay node
// answers any request. Clients of the current protocol revision
// (2026-07-28) discover the server with server/discover; older clients
// initialize as before (2025-11-25 and earlier revisions the SDK
// supports). Answers are JSON (application/json), never an event stream;
// POST is the only method (stateless servers have no stream to resume
// and no session to end): others are 405 method_not_allowed.
//
// # Admission
//
// Every request is admitted by Door, as the trading API's are: the client
// address's budget, an API token in "Authorization: Bearer", the pro plan
// (403 plan_required), and at most DoorInFlight requests of one user at
// once. A request of the protocol (discovery, listing tools, reading a
// resource) costs nothing more. Each tool call is charged as the call it
// makes would be: a trading tool 1 of the user's trading budget (shared
// with the HTTP routes and the stream socket: a burst through MCP leaves
// less for HTTP), GetActivity 1 of the activity route's budget, the
// Management API's reads their own read budget (manage.Server.Invoke). A
// tool that writes needs a token of the trade scope: a read token's call
// is refused with insufficient_scope before anything is charged or run.
//
// # Tools
//
// The tools are generated from the trading API's route table
// (tradecall.Table), never written one by one: one tool per operation,
// named as the operation is (ListAccounts, PlaceOrder, FlattenEverything,
// …), whose input schema is the operation's arguments as the stream
// socket's rpc takes them (path, query and body parameters in one
// object, built by the same schema builder as the OpenAPI document), and
// whose description is the route table's. A route added to the table is
// a tool with no other change. Tools that write carry the annotations
// destructiveHint true and idempotentHint false, and take an optional
// idempotencyKey: the Idempotency-Key of the HTTP routes, in the same key
// space, so a write retried over MCP, HTTP or the socket runs once.
//
// The broker family's operations (/v1/api/tv) are the same tools with
// the prefix "tv_" (tv_PlaceOrder), listed only to a user whose plan
// includes the family and who has a linked broker login. Three more
// tools read what assistants are asked about: GetActivity (the activity
// log, GET /v1/api/activity), and, for the elite plan, GetMonitors and
// GetCopiers (the Management API's reads).
//
// A tool's result is the standard response profile's data as structured
// content, with a one-line summary and the same data as JSON text for
// clients that read text alone. A refusal is a tool error (isError true)
// whose structured content is the error object the HTTP routes answer
// (success false, error, detail, fields, retryAfter, policy): an
// assistant reads the same codes a bot author does.
//
// # Resources
//
// Two resources explain what the tools answer: the error catalogue
// (ResourceErrors: every code with its status and meaning) and the
// instrument grammar (ResourceInstruments).
package mcp
