package main

import "golang.org/x/sys/windows"

// desktopDir is the user's Desktop (OneDrive's when it is redirected
// there), or empty.
func desktopDir() string {
	dir, err := windows.KnownFolderPath(windows.FOLDERID_Desktop, 0)
	if err != nil {
		return ""
	}
	return dir
}
