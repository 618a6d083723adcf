// Package diag collects what the agent tells support staff about itself
// (protocol.Diagnostics): it counts the warnings and errors the agent logs,
// keeps the agent's latest diagnostics in a snapshot file, and writes the
// zip that `agent diag` hands to support.
package diag

// SnapshotName is the name of the diagnostics snapshot file the running
// agent keeps in its data folder, which `agent diag` reads.
const SnapshotName = "diagnostics.json"
