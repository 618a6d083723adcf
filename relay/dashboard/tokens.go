package dashboard

import "tradebridge/relay/auth"

// tokenName is the name a token was given, "" for none.
func tokenName(auth.TokenInfo) string { return "" }
