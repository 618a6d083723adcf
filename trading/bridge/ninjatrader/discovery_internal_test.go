package ninjatrader

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeSessions is a SessionScanner over a fixed list of processes and
// file owners.
type fakeSessions struct {
	procs  []TraderProcess
	err    error
	owners map[string]string // file → owner; missing: no such file
}

func (f fakeSessions) NinjaTraderProcesses() ([]TraderProcess, error) { return f.procs, f.err }

func (f fakeSessions) FileOwner(path string) (string, error) {
	o, ok := f.owners[path]
	if !ok {
		return "", fs.ErrNotExist
	}
	if o == "link" {
		return "", errors.New("the discovery file is a link")
	}
	return o, nil
}

func (fakeSessions) Trusted(owner string) bool { return owner == "S-1-5-18" || owner == "S-1-5-32-544" }

func TestSelectDiscovery(t *testing.T) {
	t.Parallel()
	const (
		alice = "S-1-5-21-1-2-3-1001"
		bob   = "S-1-5-21-1-2-3-1002"
	)
	aliceNT := TraderProcess{PID: 10, User: alice, DiscoveryFile: `C:\Users\alice\AppData\Local\TradeBridge\a.json`}
	aliceNT2 := TraderProcess{PID: 11, User: "s-1-5-21-1-2-3-1001", DiscoveryFile: aliceNT.DiscoveryFile}
	bobNT := TraderProcess{PID: 20, User: bob, DiscoveryFile: `C:\Users\bob\AppData\Local\TradeBridge\a.json`}
	for _, tc := range []struct {
		name    string
		s       fakeSessions
		file    string
		wantErr error
		several int
	}{
		{"no NinjaTrader", fakeSessions{}, "", errNoDiscovery, 0},
		{"one trader", fakeSessions{procs: []TraderProcess{aliceNT},
			owners: map[string]string{aliceNT.DiscoveryFile: alice}}, aliceNT.DiscoveryFile, nil, 0},
		{"two processes of one trader", fakeSessions{procs: []TraderProcess{aliceNT, aliceNT2},
			owners: map[string]string{aliceNT.DiscoveryFile: alice}}, aliceNT.DiscoveryFile, nil, 0},
		{"the file owned by the Administrators", fakeSessions{procs: []TraderProcess{aliceNT},
			owners: map[string]string{aliceNT.DiscoveryFile: "S-1-5-32-544"}}, aliceNT.DiscoveryFile, nil, 0},
		{"the add-on has not written it yet", fakeSessions{procs: []TraderProcess{aliceNT}}, "", errNoDiscovery, 0},
		{"the file owned by another user", fakeSessions{procs: []TraderProcess{aliceNT},
			owners: map[string]string{aliceNT.DiscoveryFile: bob}}, "", errDiscoveryOwner, 0},
		{"the file is a link", fakeSessions{procs: []TraderProcess{aliceNT},
			owners: map[string]string{aliceNT.DiscoveryFile: "link"}}, "", errDiscoveryOwner, 0},
		{"two traders", fakeSessions{procs: []TraderProcess{aliceNT, bobNT},
			owners: map[string]string{aliceNT.DiscoveryFile: alice, bobNT.DiscoveryFile: bob}}, "", nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file, err := SelectDiscovery(tc.s)
			switch {
			case tc.several > 0:
				var st *SeveralTradersError
				require.ErrorAs(t, err, &st)
				require.Equal(t, tc.several, st.Count)
				require.Contains(t, err.Error(), "2 users'")
				require.NotContains(t, err.Error(), "alice", "the message names the count, not the users")
			case tc.wantErr != nil:
				require.ErrorIs(t, err, tc.wantErr)
			default:
				require.NoError(t, err)
				require.Equal(t, tc.file, file)
			}
		})
	}
	_, err := SelectDiscovery(fakeSessions{err: errors.New("snapshot failed")})
	require.Error(t, err)
	require.NotErrorIs(t, err, errNoDiscovery)
}
