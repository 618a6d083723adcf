package winsvc

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"
)

// These tests run on Windows only (go test ./agent/winsvc/ on a Windows
// machine; here they are compiled by GOOS=windows go vet).

// SecurityOf reads real security descriptors, built from SDDL, into the
// checker's form, and the checker judges them.
func TestSecurityOfSDDL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sddl  string
		dir   bool
		trust bool
	}{
		{AgentSDDL, true, true},
		{RootSDDL, true, true},
		{FileSDDL, false, true},
		{"O:SYD:P(A;;FA;;;SY)", false, true},
		{"O:BUD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)", true, false},                      // owned by Users
		{"O:S-1-5-21-1-2-3-1001D:P(A;;FA;;;SY)", false, false},                        // owned by a user
		{"O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;WD)", true, false},      // Everyone full control
		{"O:BAD:(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1301bf;;;BU)", true, false}, // Users modify
		{"O:BAD:(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;CI;DCLCRPCR;;;BU)", true, false},   // ProgramData's "Users may create"
		{"O:BAD:P(D;;FA;;;BU)(A;;FA;;;SY)(A;;FA;;;BU)", false, true},                  // denied first
		{"O:BAD:P(A;OICIIO;FA;;;BU)(A;;FA;;;SY)", false, true},                        // inherit-only, on a file
		{"O:BAD:P(A;OICIIO;FA;;;BU)(A;;FA;;;SY)", true, false},                        // inherit-only, on a folder
		{"O:BAD:P(A;;GW;;;WD)(A;;FA;;;SY)", false, false},                             // generic write
		{"O:BA", false, false},                                                        // no DACL
	} {
		sd, err := windows.SecurityDescriptorFromString(tc.sddl)
		require.NoError(t, err, tc.sddl)
		s, err := SecurityOf(sd)
		require.NoError(t, err, tc.sddl)
		if tc.trust {
			require.Empty(t, CheckSecurity(s, tc.dir), tc.sddl)
		} else {
			require.NotEmpty(t, CheckSecurity(s, tc.dir), tc.sddl)
		}
	}
	sd, err := windows.SecurityDescriptorFromString(RootSDDL)
	require.NoError(t, err)
	s, err := SecurityOf(sd)
	require.NoError(t, err)
	require.Equal(t, Security{Owner: SIDAdministrators, DACL: []ACE{
		{Type: ACEAllow, SID: SIDSystem, Mask: 0x1F01FF, Flags: ACEObjectInherit | ACEContainerInherit},
		{Type: ACEAllow, SID: SIDAdministrators, Mask: 0x1F01FF, Flags: ACEObjectInherit | ACEContainerInherit},
		{Type: ACEAllow, SID: SIDUsers, Mask: 0x1200a9, Flags: ACEObjectInherit | ACEContainerInherit},
	}}, s)
}

// ensureFolder creates a folder with its security, and repairs one a
// user made (its content included), removing a junction inside instead
// of following it. It needs an elevated prompt.
func TestEnsureFolderRepairs(t *testing.T) {
	if !windows.GetCurrentProcessToken().IsElevated() {
		t.Skip("needs an elevated prompt")
	}
	enablePrivileges("SeRestorePrivilege", "SeBackupPrivilege", "SeTakeOwnershipPrivilege")
	base := t.TempDir()

	fresh := filepath.Join(base, "fresh")
	require.NoError(t, ensureFolder(fresh, AgentSDDL))
	require.NoError(t, CheckTrusted(fresh))

	old := filepath.Join(base, "old")
	require.NoError(t, os.MkdirAll(filepath.Join(old, "sub"), 0o777))
	require.NoError(t, os.WriteFile(filepath.Join(old, "sub", "kept.json"), []byte("{}"), 0o666))
	planted := filepath.Join(old, "config.json")
	require.NoError(t, os.WriteFile(planted, []byte("{}"), 0o666))
	users, err := windows.StringToSid(SIDUsers)
	require.NoError(t, err)
	require.NoError(t, windows.SetNamedSecurityInfo(planted, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION,
		users, nil, nil, nil), "a file another account owns")
	require.NoError(t, os.Link(filepath.Join(old, "sub", "kept.json"), filepath.Join(old, "hardlink.json")))
	target := filepath.Join(base, "target")
	require.NoError(t, os.Mkdir(target, 0o777))
	require.NoError(t, os.WriteFile(filepath.Join(target, "keep"), []byte("x"), 0o666))
	out, err := exec.Command("cmd", "/c", "mklink", "/J", filepath.Join(old, "junction"), target).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Error(t, CheckTrusted(filepath.Join(old, "junction")), "a junction is not trusted")

	require.NoError(t, ensureFolder(old, AgentSDDL))
	require.NoError(t, CheckTrusted(old))
	require.NoError(t, CheckTrusted(filepath.Join(old, "sub")))
	require.NoError(t, CheckTrusted(filepath.Join(old, "sub", "kept.json")), "the administrators' file is adopted")
	require.NoFileExists(t, planted, "another account's file is removed, not adopted")
	require.NoFileExists(t, filepath.Join(old, "hardlink.json"), "a second name of a file is removed")
	_, err = os.Lstat(filepath.Join(old, "junction"))
	require.ErrorIs(t, err, os.ErrNotExist, "the junction is removed")
	require.FileExists(t, filepath.Join(target, "keep"), "its target is untouched")
	require.Error(t, CheckTrusted(target), "and keeps its permissions")

	// A junction in a folder's place is replaced by the folder.
	link := filepath.Join(base, "link")
	out, err = exec.Command("cmd", "/c", "mklink", "/J", link, target).CombinedOutput()
	require.NoError(t, err, string(out))
	require.NoError(t, ensureFolder(link, AgentSDDL))
	require.NoError(t, CheckTrusted(link))
	require.FileExists(t, filepath.Join(target, "keep"))
}
