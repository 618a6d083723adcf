package tradeapi

// Routes lists the endpoint table as method and path pattern pairs, for
// the tests of package api_test.
func Routes() [][2]string {
	out := make([][2]string, len(endpoints))
	for i, ep := range endpoints {
		out[i] = [2]string{ep.Method, ep.Path}
	}
	return out
}
