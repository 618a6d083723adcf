package winsvc

import (
	"fmt"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/windows"
)

var (
	msi                        = windows.NewLazySystemDLL("msi.dll")
	procMsiEnumRelatedProducts = msi.NewProc("MsiEnumRelatedProductsW")
)

// MSIInstalled reports whether a version of the agent's installer (MSI)
// is installed: MsiEnumRelatedProducts on UpgradeCode.
func MSIInstalled() (bool, error) {
	if err := procMsiEnumRelatedProducts.Find(); err != nil {
		return false, err
	}
	code, err := windows.UTF16PtrFromString(UpgradeCode)
	if err != nil {
		return false, err
	}
	var product [39]uint16 // a GUID in braces and its NUL
	r, _, _ := procMsiEnumRelatedProducts.Call(uintptr(unsafe.Pointer(code)), 0, 0, uintptr(unsafe.Pointer(&product[0])))
	switch windows.Errno(r) {
	case 0:
		return true, nil
	case windows.ERROR_NO_MORE_ITEMS:
		return false, nil
	}
	return false, fmt.Errorf("asking Windows Installer for the agent's product: %w", windows.Errno(r))
}

// CheckExecutable refuses (an *UntrustedError) an executable whose
// folder or file a non-administrator may change: the SYSTEM service
// would run what they put there.
func CheckExecutable(exe string) error {
	if err := CheckTrusted(filepath.Dir(exe)); err != nil {
		return err
	}
	return CheckTrusted(exe)
}
