package dispatch

// Internals the external tests read.

// OptionsOf returns d's options, defaults filled.
func OptionsOf(d *Dispatcher) Options { return d.opts }

// Waiting counts the repeats of a running write waiting for its outcome.
func Waiting(d *Dispatcher) int64 { return d.waiting.Load() }

// Remembered counts the write outcomes d remembers.
func Remembered(d *Dispatcher) int { return d.results.len() }
