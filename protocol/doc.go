// Package protocol is the wire format of the tunnel between the relay and an
// agent. It imports only the standard library, so a third party can build
// an agent from this package and its README alone.
//
// # Transport
//
// The agent dials GET /v1/agent/connect on the relay (ws:// or wss://) with
// "Authorization: Bearer <agent token>" and offers the WebSocket subprotocol
// Subprotocol(ProtocolVersion), e.g. "tradebridge.tunnel.v1". The relay
// checks the token before upgrading (401 with a JSON body otherwise) and
// refuses versions it does not speak (400, error
// "protocol_version_unsupported"). WebSocket compression is off. Binary
// messages carry one yamux session (github.com/hashicorp/yamux, spec.md of
// that repository); the agent is the yamux client. Each yamux frame travels
// as exactly one WebSocket message (header and body together). Both ends
// ping every 5 s and drop the connection when a ping is not answered within
// 7 s.
//
// # Streams
//
//   - The agent opens the first stream, the control stream, and sends Hello.
//     The relay answers Welcome, or closes the WebSocket with
//     CloseVersionUnsupported or CloseBadHandshake. After Welcome the agent
//     sends Events on it; the relay sends nothing more on it.
//   - The relay opens every other stream. On each it sends Requests (and
//     Cancels) and the agent answers each Request with one Response with the
//     same ID, in any order. The relay keeps one long-lived stream for most
//     calls and opens a stream per call for large replies (bars).
//   - The agent never opens a second stream; the relay closes any it does.
//
// # Frames
//
// Every message on a stream is a frame:
//
//	+----------------------+----------+----------------------------+
//	| length: uint32, BE   | type: u8 | payload: `length` bytes    |
//	+----------------------+----------+----------------------------+
//
// The payload is a UTF-8 JSON object whose shape the type names (Hello,
// Welcome, Request, Response, Cancel, Event). length counts the payload
// only and must not exceed MaxFrameSize (4 MiB): a larger length, or an
// unknown type, ends the tunnel with CloseFrameTooLarge or
// CloseProtocolError. Unknown JSON fields are ignored, so later versions
// may add fields without a version change.
//
// # Calls
//
// A Request names the function (Fn, one of the Fn* constants), a per-stream
// unique ID, TimeoutMs (relative, so clocks need not agree) and Args (the
// function's argument object, e.g. PlaceOrderArgs). Writes carry a
// RequestID: an agent answers a repeated RequestID with the first outcome
// and runs nothing, so a caller whose tunnel dropped mid-call can retry
// safely. A Request may carry Trace, the relay's id of the HTTP or stream
// request that made the call (the X-Request-Id its caller saw), which the
// agent writes in its log lines about the call; it is optional and changes
// nothing in what the call does, so it was added without a version change.
// A Response carries either Result (the function's result object,
// e.g. OrderResult) or Error (a stable Code from Codes and a Detail).
// A Cancel abandons a call; the agent answers it with CodeCancelled if it
// was still running. A write that has started is not abandoned: it runs to
// its end so that its outcome is recorded.
//
// # Closing
//
// The relay ends a tunnel with a WebSocket close code from the Close*
// constants: CloseReplaced when a newer connection of the same user took
// over, CloseRevoked when the agent token was revoked, CloseShuttingDown
// when the relay stops. Agents reconnect with exponential backoff and full
// jitter (0.5 s base, 30 s cap), waiting longer after a refusal that a
// quick retry cannot fix.
//
// Golden frames of every type, as hex dumps, are in the repository's
// protocol/testdata/frames; "go test ./protocol -update" rewrites them.
package protocol
