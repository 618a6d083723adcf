package installlog

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// On Windows the line goes to the Application log under the service's
// source: registered on demand when the process may (an elevated prompt,
// SYSTEM), opened all the same when it may not. Run on a Windows machine
// (the manual checklist in installer/README.md); it compiles here.
func TestSystemEventLog(t *testing.T) {
	require.False(t, sourceExists("TradeBridgeAgentTestNoSuchSource"), "a missing source is missing")
	l, err := systemEventLog()
	require.NoError(t, err)
	require.NotNil(t, l)
	require.NoError(t, l.Info(NoticeEventID, "installlog test: an informational line"))
	require.NoError(t, l.Close())

	code := Report(Options{Command: "installlog test"}, WithClass(errors.New("a refused value"), ClassInvalid))
	require.Equal(t, 10, code)
}
