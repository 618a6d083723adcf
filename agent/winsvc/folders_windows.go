package winsvc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/windows"
)

// EnsureMachineFolders creates or repairs the machine's folders
// (MachineFolders): a missing folder is created with its security
// descriptor (no moment with inherited permissions); an existing one,
// perhaps created and owned by a user, is given to the Administrators,
// its DACL replaced by a protected one, and the same is done to what it
// holds. A link (junction or symbolic link) is never followed: one in
// place of a folder, or inside one, is removed. It needs SYSTEM or an
// elevated administrator (SeRestorePrivilege, SeBackupPrivilege and
// SeTakeOwnershipPrivilege are enabled in the process's token).
func EnsureMachineFolders() error {
	enablePrivileges("SeRestorePrivilege", "SeBackupPrivilege", "SeTakeOwnershipPrivilege")
	for _, f := range MachineFolders(MachinePaths()) {
		if err := ensureFolder(f.Path, f.SDDL); err != nil {
			return fmt.Errorf("securing %s: %w", f.Path, err)
		}
	}
	return nil
}

// enablePrivileges enables the named privileges the process's token
// holds; one it does not hold is skipped (the step that needs it fails
// later with its own error).
func enablePrivileges(names ...string) {
	var tok windows.Token
	if err := windows.OpenProcessToken(windows.CurrentProcess(), windows.TOKEN_ADJUST_PRIVILEGES|windows.TOKEN_QUERY, &tok); err != nil {
		return
	}
	defer tok.Close()
	for _, n := range names {
		var luid windows.LUID
		if windows.LookupPrivilegeValue(nil, windows.StringToUTF16Ptr(n), &luid) != nil {
			continue
		}
		tp := windows.Tokenprivileges{PrivilegeCount: 1}
		tp.Privileges[0] = windows.LUIDAndAttributes{Luid: luid, Attributes: windows.SE_PRIVILEGE_ENABLED}
		_ = windows.AdjustTokenPrivileges(tok, false, &tp, 0, nil, nil)
	}
}

// ensureFolder creates the folder at path with the security sddl, or
// repairs the one there (and its content).
func ensureFolder(path, sddl string) error {
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		return err
	}
	sa := &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		err := windows.CreateDirectory(p, sa)
		if err == nil {
			return nil
		}
		if !errors.Is(err, windows.ERROR_ALREADY_EXISTS) || attempt > 0 {
			return err
		}
		removed, err := repair(path, sd)
		if err != nil || !removed {
			return err
		}
		// A link stood in the folder's place: it is gone, create the folder.
	}
}

// openNoFollow opens path itself (a link, not its target) for reading
// and changing its security, whatever its DACL says (backup semantics
// with the restore privilege).
func openNoFollow(path string, access uint32) (windows.Handle, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return windows.InvalidHandle, err
	}
	return windows.CreateFile(p, access, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
}

// repair gives the machine folder at path the security sd, and repairs
// what it holds (repairContent). A link at path is removed (removed
// reports it) instead of followed.
func repair(path string, sd *windows.SECURITY_DESCRIPTOR) (removed bool, err error) {
	h, info, err := openEntry(path)
	if err != nil {
		return false, err
	}
	if info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 {
		windows.CloseHandle(h)
		// os.Remove deletes a junction or symbolic link itself, never its target.
		return true, os.Remove(path)
	}
	if info.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY == 0 {
		windows.CloseHandle(h)
		return false, errors.New("a file stands where the folder belongs; delete it")
	}
	err = setSecurity(h, sd)
	windows.CloseHandle(h)
	if err != nil {
		return false, err
	}
	return false, repairContent(path)
}

// openEntry opens the file or folder at path itself (never a link's
// target) to read and change its security, and reads what it is.
func openEntry(path string) (windows.Handle, windows.ByHandleFileInformation, error) {
	var info windows.ByHandleFileInformation
	h, err := openNoFollow(path, windows.READ_CONTROL|windows.WRITE_DAC|windows.WRITE_OWNER)
	if err != nil {
		return h, info, err
	}
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		windows.CloseHandle(h)
		return windows.InvalidHandle, info, err
	}
	return h, info, nil
}

// repairContent repairs what the folder at path holds: a link is removed
// (never followed); a file another account owns, which may have been
// planted there, is removed rather than adopted, and so is a file with
// more than one name (a hard link to a file elsewhere, whose security
// must not change); the rest, and every subfolder, is given to the
// Administrators with a protected DACL (AgentSDDL for folders, FileSDDL
// for files), a subfolder another account owned being emptied of what
// that account could have put there and removed once empty.
func repairContent(path string) error {
	entries, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	dirSD, err := windows.SecurityDescriptorFromString(AgentSDDL)
	if err != nil {
		return err
	}
	fileSD, err := windows.SecurityDescriptorFromString(FileSDDL)
	if err != nil {
		return err
	}
	for _, e := range entries {
		child := filepath.Join(path, e.Name())
		if err := repairEntry(child, dirSD, fileSD); err != nil {
			return fmt.Errorf("%s: %w", e.Name(), err)
		}
	}
	return nil
}

// repairEntry is repairContent's work on one entry.
func repairEntry(path string, dirSD, fileSD *windows.SECURITY_DESCRIPTOR) error {
	h, info, err := openEntry(path)
	if err != nil {
		return err
	}
	owner := ""
	if sd, err := windows.GetSecurityInfo(h, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION); err == nil {
		if o, _, err := sd.Owner(); err == nil && o != nil {
			owner = o.String()
		}
	}
	isDir := info.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0
	switch {
	case info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0,
		!isDir && (!trustedSID(owner) || info.NumberOfLinks > 1):
		windows.CloseHandle(h)
		return os.Remove(path) // the link or this name of the file, never a target
	case !isDir:
		err = setSecurity(h, fileSD)
		windows.CloseHandle(h)
		return err
	}
	err = setSecurity(h, dirSD)
	windows.CloseHandle(h)
	if err != nil {
		return err
	}
	if err := repairContent(path); err != nil {
		return err
	}
	if !trustedSID(owner) {
		_ = os.Remove(path) // fails, and the folder stays repaired, when trusted files remain in it
	}
	return nil
}

// setSecurity sets the owner and the protected DACL of sd on h.
func setSecurity(h windows.Handle, sd *windows.SECURITY_DESCRIPTOR) error {
	owner, _, err := sd.Owner()
	if err != nil {
		return err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return err
	}
	return windows.SetSecurityInfo(h, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION,
		owner, nil, dacl, nil)
}

// SecurityOf converts a security descriptor to the checker's form.
func SecurityOf(sd *windows.SECURITY_DESCRIPTOR) (Security, error) {
	var s Security
	owner, _, err := sd.Owner()
	if err != nil {
		return s, err
	}
	if owner != nil {
		s.Owner = owner.String()
	}
	dacl, _, err := sd.DACL()
	switch {
	case errors.Is(err, windows.ERROR_OBJECT_NOT_FOUND):
		s.NullDACL = true
		return s, nil
	case err != nil:
		return s, err
	case dacl == nil:
		s.NullDACL = true
		return s, nil
	}
	for i := uint32(0); i < uint32(dacl.AceCount); i++ {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return s, err
		}
		a := ACE{Type: ACEOther, Mask: uint32(ace.Mask), Flags: ace.Header.AceFlags}
		switch ace.Header.AceType {
		case windows.ACCESS_ALLOWED_ACE_TYPE:
			a.Type = ACEAllow
		case windows.ACCESS_DENIED_ACE_TYPE:
			a.Type = ACEDeny
		}
		if a.Type != ACEOther {
			a.SID = (*windows.SID)(unsafe.Pointer(&ace.SidStart)).String()
		}
		s.DACL = append(s.DACL, a)
	}
	return s, nil
}

// CheckTrusted reports (an *UntrustedError) when the file or folder at
// path is a link, or is owned or changeable by someone other than SYSTEM
// and the Administrators. It reads the security of path itself, never of
// a link's target.
func CheckTrusted(path string) error {
	h, err := openNoFollow(path, windows.READ_CONTROL)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		return err
	}
	if info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 {
		return &UntrustedError{Path: path, Reason: "it is a link (junction or symbolic link)"}
	}
	sd, err := windows.GetSecurityInfo(h, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return err
	}
	s, err := SecurityOf(sd)
	if err != nil {
		return err
	}
	return Trusted(path, s, info.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0)
}
