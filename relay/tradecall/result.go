package tradecall

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"tradebridge/protocol"
	"tradebridge/relay/errcode"
	"tradebridge/relay/httpapi"
)

// ErrMalformedResult reports a write's result the relay cannot stand
// behind as a success (CheckWriteResult).
var ErrMalformedResult = errors.New("tradecall: the agent's result of a write is malformed")

// CheckWriteResult checks the agent's result of the write fn, as the
// profiles check a read's record when they render it: every write answers
// a JSON object; PlaceOrder, FlatPlace and CancelReplace answer the order
// placed (orderId, unless unchanged); CancelOrder and ChangeOrder the
// order (orderId); CancelAndBracket its orders (orderIds, not empty when
// placed). A result that is none of these would be a success without the
// ids a caller acts on: it is answered as the agent's fault
// (malformedResult; CallError answers ErrMalformedResult so) and never
// recorded as the answer of a keyed write. Every door that runs a write
// checks its result here: the HTTP routes and the stream socket through
// Calls and KeyedWrites, the TradingView webhook directly.
func CheckWriteResult(fn string, result json.RawMessage) error {
	if !isObject(result) {
		return fmt.Errorf("%w: %s answered with something other than an object", ErrMalformedResult, fn)
	}
	var r struct {
		OrderID   *string   `json:"orderId"`
		OrderIDs  *[]string `json:"orderIds"`
		Unchanged bool      `json:"unchanged"`
		Placed    bool      `json:"placed"`
	}
	switch fn {
	case protocol.FnPlaceOrder, protocol.FnFlatPlace, protocol.FnCancelReplace, protocol.FnCancelOrder, protocol.FnChangeOrder,
		protocol.FnCancelAndBracket:
	default:
		return nil
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMalformedResult, fn, err)
	}
	switch fn {
	case protocol.FnCancelAndBracket:
		if r.OrderIDs == nil || (r.Placed && len(*r.OrderIDs) == 0) {
			return fmt.Errorf("%w: %s answered without orderIds", ErrMalformedResult, fn)
		}
	case protocol.FnPlaceOrder, protocol.FnFlatPlace, protocol.FnCancelReplace:
		if !r.Unchanged && (r.OrderID == nil || *r.OrderID == "") {
			return fmt.Errorf("%w: %s answered without an orderId", ErrMalformedResult, fn)
		}
	default:
		if r.OrderID == nil || *r.OrderID == "" {
			return fmt.Errorf("%w: %s answered without an orderId", ErrMalformedResult, fn)
		}
	}
	return nil
}

// isObject reports whether b is a JSON object (leading space allowed).
func isObject(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}

// malformedResult is the answer of a write whose result failed
// CheckWriteResult: 500 internal_error, as a read's record of the wrong
// shape is answered, saying that the write may have run.
func malformedResult(keyed bool) *httpapi.Error {
	detail := "the add-on answered with a result the relay cannot read; the write may have run: check the orders before sending it again"
	if keyed {
		detail = "the add-on answered with a result the relay cannot read; the write may have run: check the orders, or retry with the same Idempotency-Key or orderId, which runs nothing twice"
	}
	return &httpapi.Error{Status: http.StatusInternalServerError, Code: errcode.InternalError, Detail: detail}
}
