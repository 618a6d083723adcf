// Package scale measures one relay node at its limits: the relay's memory
// per idle agent with thousands of agents connected, the time the agents
// take to come back after the relay restarts, and what the relay refuses
// meanwhile. It holds benchmarks only (scale_test.go); they are slow, so
// they run with `make bench` or alone:
//
//	go test -run '^$' -bench 'IdleAgents|Restart' ./relay/scale/
//
// The agents run in a process of their own (the test binary started again
// with TB_SCALE_FLEET set), so that the relay's figures are the relay's
// alone. They are the real tunnel client (agent/tunnel) with a dispatcher
// that answers every call with an empty object, spread over several source
// addresses of 127.0.0.0/8 so that the relay's default per-address limits
// hold. TB_SCALE_AGENTS changes their number (default 10,000).
package scale
