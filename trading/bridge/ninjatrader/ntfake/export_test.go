package ntfake

// HoldEvents stops (on) or resumes reading the simulator's event stream,
// so a test can make the simulator drop events for this reader.
func (s *Server) HoldEvents(on bool) { s.do(func() { s.ls.held = on }) }
