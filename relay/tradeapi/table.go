package tradeapi

import "tradebridge/relay/tradecall"

// The route table is package tradecall's (the WebSocket door checks its
// calls against it too); these names keep the HTTP door and the document
// generators short.
type (
	endpoint = tradecall.Endpoint
	param    = tradecall.Param
)

// Where a parameter travels, its type and its string format.
const (
	inPath  = tradecall.InPath
	inQuery = tradecall.InQuery
	inBody  = tradecall.InBody

	tString  = tradecall.TString
	tInteger = tradecall.TInteger
	tNumber  = tradecall.TNumber
	tBoolean = tradecall.TBoolean
	tObject  = tradecall.TObject

	formatInstrument   = tradecall.FormatInstrument
	formatTime         = tradecall.FormatTime
	formatPositionList = tradecall.FormatPositionList
)

// endpoints is the trading API's route table.
var endpoints = tradecall.Endpoints()
