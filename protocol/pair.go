package protocol

// Pairing a PC: the agent exchanges a one-time pairing code (shown to the
// trader by the dashboard, or minted by the operator) for an agent token,
// and may later give that token back. Both are plain HTTP routes of the
// relay, answered in its {"success", "data"} envelope.
const (
	// PairPath is POST: body PairRequest, answer PairResponse (in
	// "data"); 401 pairing_code_invalid for a wrong, expired or used
	// code, 429 rate_limited over the client address's budget.
	PairPath = "/v1/agent/pair"
	// AgentTokenPath is DELETE, with Authorization: Bearer and the agent
	// token: the relay revokes that token and answers 204 (401
	// unauthorized when it is missing or no longer valid).
	AgentTokenPath = "/v1/agent/token"
)

// PairingCodeAlphabet are the characters of a pairing code: capital
// letters and digits without the look-alikes I, L, O, 0 and 1.
const PairingCodeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// PairingCodeLen is the number of characters of a pairing code, shown as
// two groups of four: XXXX-XXXX.
const PairingCodeLen = 8

// PairRequest is the body of POST PairPath.
type PairRequest struct {
	// Code is the pairing code, with or without its dash, in any case.
	Code string `json:"code"`
}

// PairResponse is the data of a successful POST PairPath.
type PairResponse struct {
	// Token is the new agent token (tb_agent_…).
	Token string `json:"token"`
	// UserID is the user the token belongs to.
	UserID string `json:"userId"`
}
