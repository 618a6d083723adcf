package main

import (
	"os"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// shellExecuteInfo has SHELLEXECUTEINFOW's layout: 112 bytes on 64-bit
// Windows, 60 on 32-bit, hProcess last.
func TestShellExecuteInfoLayout(t *testing.T) {
	t.Parallel()
	var info shellExecuteInfo
	want, last := uintptr(112), uintptr(104)
	if runtime.GOARCH == "386" {
		want, last = 60, 56
	}
	require.Equal(t, want, unsafe.Sizeof(info))
	require.Equal(t, last, unsafe.Offsetof(info.hProcess))
}

// A file is no console; openBrowser opens web pages only.
func TestWindowsPairHelpers(t *testing.T) {
	t.Parallel()
	f, err := os.CreateTemp(t.TempDir(), "x")
	require.NoError(t, err)
	defer f.Close()
	require.False(t, isTerminal(f))
	require.Error(t, openBrowser(`C:\Windows\System32\calc.exe`))
}
