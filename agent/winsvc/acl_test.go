package winsvc

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// The machine folders' security descriptors are pinned: a change to them
// is a change to who may touch the agent.
func TestSDDLs(t *testing.T) {
	t.Parallel()
	require.Equal(t, "O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)", AgentSDDL)
	require.Equal(t, "O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;0x1200a9;;;BU)", RootSDDL)
	require.Equal(t, "O:BAD:P(A;;FA;;;SY)(A;;FA;;;BA)", FileSDDL)

	p := Paths{Root: "R", Dir: "R/A", DataDir: "R/A/d", LogDir: "R/A/l"}
	require.Equal(t, []Folder{{"R", RootSDDL}, {"R/A", AgentSDDL}, {"R/A/d", AgentSDDL}, {"R/A/l", AgentSDDL}},
		MachineFolders(p), "each folder before what it holds")
}

func TestCheckSecurity(t *testing.T) {
	t.Parallel()
	const (
		user = "S-1-5-21-1-2-3-1001"
		fa   = 0x1F01FF
		read = 0x1200a9
	)
	allow := func(sid string, mask uint32) ACE { return ACE{Type: ACEAllow, SID: sid, Mask: mask} }
	deny := func(sid string, mask uint32) ACE { return ACE{Type: ACEDeny, SID: sid, Mask: mask} }
	admins := []ACE{allow(SIDSystem, fa), allow(SIDAdministrators, fa)}
	with := func(extra ...ACE) []ACE { return append(append([]ACE(nil), admins...), extra...) }

	for _, tc := range []struct {
		name  string
		s     Security
		dir   bool
		trust bool
	}{
		{"the agent's folder", Security{Owner: SIDAdministrators, DACL: admins}, true, true},
		{"owned by SYSTEM", Security{Owner: SIDSystem, DACL: admins}, false, true},
		{"owner in lower case", Security{Owner: "s-1-5-32-544", DACL: admins}, false, true},
		{"owned by a user", Security{Owner: user, DACL: admins}, false, false},
		{"owned by Users", Security{Owner: SIDUsers, DACL: admins}, true, false},
		{"no owner", Security{DACL: admins}, false, false},
		{"no DACL", Security{Owner: SIDAdministrators, NullDACL: true}, false, false},
		{"empty DACL (nobody)", Security{Owner: SIDAdministrators}, false, true},
		{"Users read and list", Security{Owner: SIDAdministrators, DACL: with(allow(SIDUsers, read))}, true, true},
		{"Everyone full control", Security{Owner: SIDAdministrators, DACL: with(allow(SIDEveryone, fa))}, false, false},
		{"Users may add files", Security{Owner: SIDAdministrators, DACL: with(allow(SIDUsers, 0x2))}, true, false},
		{"Users may add folders", Security{Owner: SIDAdministrators, DACL: with(allow(SIDUsers, 0x4))}, true, false},
		{"a user may change the DACL", Security{Owner: SIDAdministrators, DACL: with(allow(user, 0x40000))}, false, false},
		{"a user may take ownership", Security{Owner: SIDAdministrators, DACL: with(allow(user, 0x80000))}, false, false},
		{"a user may delete", Security{Owner: SIDAdministrators, DACL: with(allow(user, 0x10000))}, false, false},
		{"a user may delete children", Security{Owner: SIDAdministrators, DACL: with(allow(user, 0x40))}, true, false},
		{"GENERIC_WRITE", Security{Owner: SIDAdministrators, DACL: with(allow(user, 0x40000000))}, false, false},
		{"GENERIC_ALL", Security{Owner: SIDAdministrators, DACL: with(allow(SIDUsers, 0x10000000))}, false, false},
		{"GENERIC_READ", Security{Owner: SIDAdministrators, DACL: with(allow(SIDUsers, 0x80000000))}, false, true},
		{"MAXIMUM_ALLOWED", Security{Owner: SIDAdministrators, DACL: with(allow(SIDUsers, 0x02000000))}, false, false},
		{"CREATOR OWNER full control", Security{Owner: SIDAdministrators, DACL: with(allow(SIDCreatorOwner, fa))}, true, false},
		{"CREATOR OWNER inherit-only on a folder", Security{Owner: SIDAdministrators,
			DACL: with(ACE{Type: ACEAllow, SID: SIDCreatorOwner, Mask: 0x10000000, Flags: ACEInheritOnly | ACEObjectInherit | ACEContainerInherit})}, true, true},
		{"Program Files (TrustedInstaller)", Security{Owner: SIDTrustedInstaller,
			DACL: with(allow(SIDTrustedInstaller, fa), allow(SIDUsers, 0x1200a9), allow("S-1-15-2-1", 0x1200a9))}, true, true},
		{"write denied to the same SID first", Security{Owner: SIDAdministrators,
			DACL: append([]ACE{deny(user, 0x40000000|0x10000|0x40000|0x80000|0x40|0x100)}, with(allow(user, fa))...)}, false, true},
		{"write denied to Everyone first", Security{Owner: SIDAdministrators,
			DACL: append([]ACE{deny(SIDEveryone, 0x10000000)}, with(allow(SIDUsers, fa))...)}, false, true},
		{"deny after the allow does not help", Security{Owner: SIDAdministrators,
			DACL: with(allow(user, fa), deny(user, fa))}, false, false},
		{"deny of part of the rights", Security{Owner: SIDAdministrators,
			DACL: append([]ACE{deny(user, 0x2)}, with(allow(user, 0x2|0x4))...)}, false, false},
		{"deny to another SID", Security{Owner: SIDAdministrators,
			DACL: append([]ACE{deny(SIDUsers, fa)}, with(allow(user, fa))...)}, false, false},
		{"inherit-only on a file", Security{Owner: SIDAdministrators,
			DACL: with(ACE{Type: ACEAllow, SID: SIDUsers, Mask: fa, Flags: ACEInheritOnly | ACEObjectInherit})}, false, true},
		{"inherit-only on a folder", Security{Owner: SIDAdministrators,
			DACL: with(ACE{Type: ACEAllow, SID: SIDUsers, Mask: fa, Flags: ACEInheritOnly | ACEObjectInherit})}, true, false},
		{"an inherited write", Security{Owner: SIDAdministrators,
			DACL: with(ACE{Type: ACEAllow, SID: SIDUsers, Mask: 0x2, Flags: ACEInherited})}, false, false},
		{"an unknown entry", Security{Owner: SIDAdministrators, DACL: with(ACE{Type: ACEOther})}, false, false},
		{"deny entries alone", Security{Owner: SIDSystem, DACL: []ACE{deny(SIDEveryone, fa)}}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			why := CheckSecurity(tc.s, tc.dir)
			if tc.trust {
				require.Empty(t, why)
				require.NoError(t, Trusted("x", tc.s, tc.dir))
				return
			}
			require.NotEmpty(t, why)
			err := Trusted(`C:\x`, tc.s, tc.dir)
			require.ErrorIs(t, err, ErrUntrusted)
			var ue *UntrustedError
			require.True(t, errors.As(err, &ue))
			require.Equal(t, `C:\x`, ue.Path)
			require.Contains(t, err.Error(), why)
		})
	}
}
