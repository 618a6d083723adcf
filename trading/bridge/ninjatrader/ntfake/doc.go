// Package ntfake fakes the NinjaTrader add-on for tests: it speaks the
// add-on side of the protocol of docs/ninjatrader-protocol.md (types in
// package ntwire) on 127.0.0.1, so the agent's NinjaTrader bridge
// (trading/bridge/ninjatrader) can be tested on any system, alone or under
// the whole trading API (relay, tunnel, agent, bridge, fake add-on). It is
// imported by tests only.
//
// It has two modes.
//
// # Server: a fake add-on over the simulator
//
// Start serves the protocol over a *sim.Platform: it writes the discovery
// file, accepts one agent at a time, answers every method by calling the
// simulator's primitive of the same meaning, and forwards the simulator's
// event stream as numbered events. It follows the document where the
// document says what the add-on does:
//
//   - Handshake: the agent's hello is awaited for Options.HelloTimeout (a
//     silent connection is closed without a word); the secret is compared
//     in constant time. The refusals, checked in this order: bad_hello (a
//     first line that is not a hello, or not JSON), bad_secret,
//     version_unsupported (an agent version below 1) and busy (another
//     agent is connected). The welcome's protocolVersion is the lower of
//     the agent's and Options.Version.
//   - Events: one subscription to the simulator's event stream, numbered
//     1, 2, 3, … per session by the one goroutine that also writes to the
//     agent and takes snapshots, so no event numbered at or below a
//     snapshot's seq is missing from it. Events published while no agent
//     is connected are numbered and dropped (numbering belongs to the
//     session, not to a connection). When the simulator reports that this
//     reader lost events, one seq number is skipped, so the agent sees a
//     gap and takes a snapshot.
//   - A request's events first: after the simulator's call returns, every
//     event the simulator has published so far is sent, then the reply.
//     Requests are answered one at a time, in the order they arrive.
//   - Order ids: submitOrder needs an orderId valid per ntwire.ValidOrderID
//     and refuses '|' in name and strategyTag (bad_request); an id already
//     known is refused by the simulator (order_rejected). The simulator
//     keeps the agent's id, name and tag itself, so names are not encoded.
//   - Instruments are NinjaTrader's names: a root or a contract ("ES
//     12-26"). A month code ("ESZ26") is refused as instrument_unknown,
//     cause malformed, as NinjaTrader cannot resolve it.
//   - Errors of the simulator map onto the document's codes by their
//     bridge sentinels and types (bridge.ErrAccountNotFound is
//     account_not_found, a *bridge.InstrumentError instrument_unknown with
//     its cause, root, months and front, a *bridge.RejectError
//     order_rejected, a *bridge.RequestError bad_request, …; anything else
//     is internal). Every message is a fixed sentence, or the simulator's
//     reason for a refused order or request, which never repeats the
//     request.
//   - Connections: SetConnectionStatus changes a connection's status as
//     NinjaTrader would report it: a connection event and an account event
//     per account follow, records carry the status, and submitOrder,
//     cancelOrder, changeOrder and flatten on its accounts answer
//     not_connected until it is Connected again.
//   - Pings: the fake answers every ping, sends one after Options.PingAfter
//     in which it sent nothing, and closes a connection that sent nothing
//     for Options.DeadAfter.
//   - subscribeBars and unsubscribeBars check their params and answer {}:
//     the fake sends no bar events.
//
// Tests drive the fake's life like NinjaTrader's: Drop cuts the agent's
// connection, Restart starts a new session (new id, seq from 1, new port
// and secret), Stop and Resume close NinjaTrader and start it again, and
// Close stops the add-on.
//
// # Replayer: a recorded exchange
//
// Replay plays a transcript, a file that says line by line what the agent
// must send and what the fake answers, for tests of the client's handling
// of disconnects, events out of order or repeated, and restarts, which the
// simulator never produces. The format, one item per line:
//
//	# a comment (blank lines are skipped too)
//	> {"type":"hello","protocolVersion":1,"secret":"$secret"}
//	< {"type":"welcome","protocolVersion":1,"sessionId":"s1",…}
//	> {"type":"request","method":"submitOrder","params":{"orderId":"$oid"}}
//	< {"type":"reply","id":"$id","result":{"order":{"orderId":"$oid",…}}}
//	! drop
//	! restart
//	! wait 50ms
//	! quiet 300ms
//
// The items:
//
//   - "> message": the agent must send a message that contains the given
//     fields with the given values (a subset match: objects may have more
//     fields, arrays must have as many elements). A string "$name" in it
//     captures the agent's value under that name the first time and must
//     equal it afterwards; "$secret" is always the discovery file's
//     secret. The id of each such message is captured as "$id".
//   - "< message": the fake sends the message; a string "$name" in it is
//     replaced by the captured value ("$id": the id of the latest "> "
//     message).
//   - "! drop": the fake closes the connection abruptly; the next lines
//     belong to the agent's next connection.
//   - "! restart": NinjaTrader restarts: the fake closes the connection,
//     removes the discovery file, listens on a new port with a new secret
//     and writes the file again; the next lines belong to the next
//     connection.
//   - "! wait D": the fake pauses for the duration D (Go syntax).
//   - "! quiet D": the agent must send nothing for D.
//
// The agent's pings are answered at once and, like its pongs, never
// matched against the transcript. A line that does not match fails the
// test (t.Errorf) and ends the replay; after the last line the connection
// stays open, its pings answered, until Close.
package ntfake
