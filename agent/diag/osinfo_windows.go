package diag

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// osVersion reads the Windows version with RtlGetVersion, which, unlike
// GetVersionEx, is not lied to by the application's manifest.
func osVersion() string {
	v := windows.RtlGetVersion()
	name := "Windows"
	switch {
	case v.MajorVersion == 10 && v.BuildNumber >= 22000:
		name = "Windows 11"
	case v.MajorVersion == 10:
		name = "Windows 10"
	}
	if v.ProductType != 0 && v.ProductType != 1 { // VER_NT_WORKSTATION is 1
		name = "Windows Server"
	}
	return fmt.Sprintf("%s (%d.%d.%d)", name, v.MajorVersion, v.MinorVersion, v.BuildNumber)
}
