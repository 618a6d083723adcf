package winsvc

import (
	"errors"
	"fmt"
	"strings"
)

// The security descriptors of the machine's folders on Windows (SDDL).
// Every one is owned by BUILTIN\Administrators and has a protected DACL
// (nothing is inherited from ProgramData, which lets users create files):
// SYSTEM and the Administrators have full control, inherited by what the
// folder holds; the root folder also lets Users read and list it.
const (
	// AgentSDDL is the security of …\TradeBridge\Agent, …\Agent\data and
	// …\Agent\logs, and of the files in them.
	AgentSDDL = "O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"
	// RootSDDL is the security of %ProgramData%\TradeBridge.
	RootSDDL = "O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;BU)"
	// FileSDDL is the security of a file the agent writes into a machine
	// folder (the configuration file): owned by the Administrators,
	// SYSTEM and the Administrators alone.
	FileSDDL = "O:BAD:P(A;;FA;;;SY)(A;;FA;;;BA)"
)

// Well-known SIDs, as strings.
const (
	SIDSystem         = "S-1-5-18"
	SIDAdministrators = "S-1-5-32-544"
	SIDUsers          = "S-1-5-32-545"
	SIDEveryone       = "S-1-1-0"
	SIDCreatorOwner   = "S-1-3-0"
	SIDCreatorGroup   = "S-1-3-1"
	// SIDTrustedInstaller is NT SERVICE\TrustedInstaller, which owns
	// Windows's own files and has full control of Program Files.
	SIDTrustedInstaller = "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"
)

// ACEType is the kind of an access control entry.
type ACEType int

// The kinds of access control entries the checker knows; any other kind
// (object or callback entries) is refused.
const (
	ACEAllow ACEType = iota
	ACEDeny
	ACEOther
)

// ACE flags (the AceFlags byte of an access control entry).
const (
	ACEObjectInherit    uint8 = 0x01
	ACEContainerInherit uint8 = 0x02
	ACENoPropagate      uint8 = 0x04
	ACEInheritOnly      uint8 = 0x08
	ACEInherited        uint8 = 0x10
)

// Access rights (of a file or folder) the checker knows.
const (
	rightWriteData       uint32 = 0x0002 // FILE_WRITE_DATA, FILE_ADD_FILE
	rightAppendData      uint32 = 0x0004 // FILE_APPEND_DATA, FILE_ADD_SUBDIRECTORY
	rightWriteEA         uint32 = 0x0010
	rightDeleteChild     uint32 = 0x0040
	rightWriteAttributes uint32 = 0x0100
	rightDelete          uint32 = 0x00010000
	rightWriteDAC        uint32 = 0x00040000
	rightWriteOwner      uint32 = 0x00080000
	rightSystemSecurity  uint32 = 0x01000000
	rightMaximumAllowed  uint32 = 0x02000000
	rightGenericAll      uint32 = 0x10000000
	rightGenericExecute  uint32 = 0x20000000
	rightGenericWrite    uint32 = 0x40000000
	rightGenericRead     uint32 = 0x80000000

	fileAllAccess     uint32 = 0x001F01FF
	fileGenericRead   uint32 = 0x00120089
	fileGenericWrite  uint32 = 0x00120116
	fileGenericExecut uint32 = 0x001200A0
)

// WriteRights are the rights that let a holder change a file or folder,
// its content, its security or its place: write and append (add a file
// or a subfolder), extended attributes and attributes, delete, delete a
// child, change the DACL or the owner. A SID other than SYSTEM and the
// Administrators holding any of them makes a machine file untrusted.
const WriteRights = rightWriteData | rightAppendData | rightWriteEA | rightDeleteChild | rightWriteAttributes |
	rightDelete | rightWriteDAC | rightWriteOwner | rightSystemSecurity

// ACE is one access control entry: its kind, the SID it is about (as a
// string, "S-1-5-18"), its access mask and its flags.
type ACE struct {
	Type  ACEType
	SID   string
	Mask  uint32
	Flags uint8
}

// Security is a file's or folder's owner and DACL, in a form the checker
// reads on every system. NullDACL is a missing DACL, which grants
// everyone everything.
type Security struct {
	Owner    string
	NullDACL bool
	DACL     []ACE
}

// ErrUntrusted is the error of a machine file or folder that someone
// other than SYSTEM and the Administrators owns or may change: the
// service does not trust it.
var ErrUntrusted = errors.New("not owned by SYSTEM or the Administrators, or changeable by other users")

// UntrustedError says which file or folder is untrusted and why; it
// wraps ErrUntrusted.
type UntrustedError struct {
	Path   string
	Reason string
}

func (e *UntrustedError) Error() string {
	return fmt.Sprintf("%s is not safe for the service: %s (repair it with `agent install` or `agent config set` "+
		"from an elevated prompt, or delete it)", e.Path, e.Reason)
}

func (e *UntrustedError) Unwrap() error { return ErrUntrusted }

// trustedSID reports whether sid is SYSTEM, the Administrators or
// TrustedInstaller (Windows's own installer, as trusted as SYSTEM).
func trustedSID(sid string) bool {
	return strings.EqualFold(sid, SIDSystem) || strings.EqualFold(sid, SIDAdministrators) ||
		strings.EqualFold(sid, SIDTrustedInstaller)
}

// mapGeneric turns generic rights into a file's specific ones.
func mapGeneric(mask uint32) uint32 {
	if mask&rightGenericAll != 0 {
		mask |= fileAllAccess
	}
	if mask&rightGenericWrite != 0 {
		mask |= fileGenericWrite
	}
	if mask&rightGenericRead != 0 {
		mask |= fileGenericRead
	}
	if mask&rightGenericExecute != 0 {
		mask |= fileGenericExecut
	}
	if mask&rightMaximumAllowed != 0 {
		mask |= fileAllAccess
	}
	return mask &^ (rightGenericAll | rightGenericWrite | rightGenericRead | rightGenericExecute | rightMaximumAllowed)
}

// CheckSecurity reports why a file (dir false) or folder (dir true) with
// security s may not be trusted by the service, or "" when it may: its
// owner must be SYSTEM, the Administrators (or TrustedInstaller), and no
// other SID may hold any of WriteRights. A deny entry ahead of an allow
// entry takes away what it denies to its SID (or to Everyone); an
// inherit-only entry does not apply to a file, but on a folder it counts
// (it would give what it allows to the files created in it), except for
// CREATOR OWNER and CREATOR GROUP (it gives the creator of a file rights
// on it, and only a trusted account may create one). Entries of another
// kind than allow and deny are refused.
func CheckSecurity(s Security, dir bool) string {
	if !trustedSID(s.Owner) {
		if s.Owner == "" {
			return "it has no owner"
		}
		return "its owner is not SYSTEM or the Administrators"
	}
	if s.NullDACL {
		return "it has no access list (everyone may change it)"
	}
	denied := map[string]uint32{}
	for _, a := range s.DACL {
		if a.Flags&ACEInheritOnly != 0 && (!dir || a.SID == SIDCreatorOwner || a.SID == SIDCreatorGroup) {
			continue
		}
		mask := mapGeneric(a.Mask)
		switch a.Type {
		case ACEDeny:
			denied[strings.ToUpper(a.SID)] |= mask
		case ACEAllow:
			if trustedSID(a.SID) {
				continue
			}
			mask &^= denied[strings.ToUpper(a.SID)] | denied[SIDEveryone]
			if mask&WriteRights != 0 {
				return "its access list lets another account (" + a.SID + ") change it"
			}
		default:
			return "its access list has an entry the agent does not know"
		}
	}
	return ""
}

// Trusted is CheckSecurity as an error: nil, or an *UntrustedError about
// path.
func Trusted(path string, s Security, dir bool) error {
	if why := CheckSecurity(s, dir); why != "" {
		return &UntrustedError{Path: path, Reason: why}
	}
	return nil
}
