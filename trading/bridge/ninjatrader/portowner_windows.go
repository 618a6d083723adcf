package ninjatrader

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"

	"tradebridge/trading/bridge/ninjatrader/ntwire"
)

// DefaultPortOwner on Windows reads the system's TCP table
// (GetExtendedTcpTable) and the process's image (QueryFullProcessImageName).
func DefaultPortOwner() PortOwner { return windowsPortOwner{} }

// NinjaTraderExe is the name of NinjaTrader's executable.
const NinjaTraderExe = "NinjaTrader.exe"

var (
	iphlpapi                = windows.NewLazySystemDLL("iphlpapi.dll")
	procGetExtendedTcpTable = iphlpapi.NewProc("GetExtendedTcpTable")
)

const (
	tcpTableOwnerPIDListener = 3 // TCP_TABLE_OWNER_PID_LISTENER
	afInet                   = 2
	afInet6                  = 23
)

type windowsPortOwner struct{}

// listenerPIDs are the owners of the IPv4 and IPv6 listeners on port
// that accept connections to 127.0.0.1.
func listenerPIDs(port int) ([]int, error) {
	var pids []int
	for _, af := range []uint32{afInet, afInet6} {
		var size uint32
		var buf []byte
		for range 4 {
			var p uintptr
			if len(buf) > 0 {
				p = uintptr(unsafe.Pointer(&buf[0]))
			}
			r, _, _ := procGetExtendedTcpTable.Call(p, uintptr(unsafe.Pointer(&size)), 0, uintptr(af), tcpTableOwnerPIDListener, 0)
			if r == 0 {
				break
			}
			if windows.Errno(r) != windows.ERROR_INSUFFICIENT_BUFFER {
				return nil, fmt.Errorf("GetExtendedTcpTable: %w", windows.Errno(r))
			}
			buf = make([]byte, size)
		}
		if len(buf) < 4 {
			continue
		}
		n := binary.LittleEndian.Uint32(buf)
		// MIB_TCPROW_OWNER_PID: state, local addr, local port, remote addr,
		// remote port, pid (6 × 4 bytes); MIB_TCP6ROW_OWNER_PID: local addr
		// (16), scope (4), local port (4), remote addr (16), scope, port,
		// state, pid (4 each).
		rowSize, addrAt, portAt, pidAt := 24, 4, 8, 20
		if af == afInet6 {
			rowSize, addrAt, portAt, pidAt = 56, 0, 20, 52
		}
		for i := 0; i < int(n); i++ {
			row := buf[4+i*rowSize:]
			if len(row) < rowSize {
				break
			}
			p := int(binary.BigEndian.Uint16(row[portAt : portAt+2]))
			if p != port {
				continue
			}
			if af == afInet {
				a := row[addrAt : addrAt+4]
				if !(a[0] == 127 && a[1] == 0 && a[2] == 0 && a[3] == 1) && binary.LittleEndian.Uint32(a) != 0 {
					continue
				}
			} else {
				a := row[addrAt : addrAt+16]
				loop := true
				for _, b := range a[:10] {
					loop = loop && b == 0
				}
				unspecified := true
				for _, b := range a {
					unspecified = unspecified && b == 0
				}
				if !unspecified && !(loop && a[10] == 0xff && a[11] == 0xff && a[12] == 127 && a[15] == 1) {
					continue
				}
			}
			pids = append(pids, int(binary.LittleEndian.Uint32(row[pidAt:pidAt+4])))
		}
	}
	return pids, nil
}

// ListensOn implements PortOwner.
func (windowsPortOwner) ListensOn(pid, port int) (bool, error) {
	pids, err := listenerPIDs(port)
	if err != nil {
		return false, err
	}
	if len(pids) == 0 {
		return false, ErrNoListener
	}
	for _, p := range pids {
		if p != pid {
			return false, nil // another process listens there too
		}
	}
	return true, nil
}

// IsNinjaTrader implements PortOwner: the process's image is
// NinjaTrader.exe under Program Files (where users cannot write).
func (windowsPortOwner) IsNinjaTrader(pid int) (bool, error) {
	image, err := processImage(uint32(pid))
	if err != nil {
		return false, err
	}
	if !strings.EqualFold(filepath.Base(image), NinjaTraderExe) {
		return false, nil
	}
	for _, id := range []*windows.KNOWNFOLDERID{windows.FOLDERID_ProgramFiles, windows.FOLDERID_ProgramFilesX86} {
		dir, err := windows.KnownFolderPath(id, 0)
		if err == nil && dir != "" && strings.HasPrefix(strings.ToLower(image), strings.ToLower(dir)+`\`) {
			return true, nil
		}
	}
	return false, nil
}

// processImage is the full path of process pid's executable.
func processImage(pid uint32) (string, error) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return "", err
	}
	defer windows.CloseHandle(h)
	buf := make([]uint16, windows.MAX_LONG_PATH)
	size := uint32(len(buf))
	if err := windows.QueryFullProcessImageName(h, 0, &buf[0], &size); err != nil {
		return "", err
	}
	return windows.UTF16ToString(buf[:size]), nil
}

// WindowsSessions is the SessionScanner of the SYSTEM service: the
// NinjaTrader.exe processes (CreateToolhelp32Snapshot), each one's user
// (its token's), and the discovery file in that user's
// %LOCALAPPDATA%\TradeBridge (the token's known folder, else the
// profile's folder from the registry's ProfileList).
type WindowsSessions struct{}

// NinjaTraderProcesses implements SessionScanner.
func (WindowsSessions) NinjaTraderProcesses() ([]TraderProcess, error) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil, err
	}
	defer windows.CloseHandle(snap)
	var out []TraderProcess
	e := windows.ProcessEntry32{Size: uint32(unsafe.Sizeof(windows.ProcessEntry32{}))}
	for err = windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		if !strings.EqualFold(windows.UTF16ToString(e.ExeFile[:]), NinjaTraderExe) {
			continue
		}
		p, perr := traderOf(e.ProcessID)
		if errors.Is(perr, windows.ERROR_INVALID_PARAMETER) {
			continue // it exited since the snapshot
		}
		if perr != nil {
			return nil, fmt.Errorf("a NinjaTrader process: %w", perr)
		}
		out = append(out, p)
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return nil, err
	}
	return out, nil
}

// traderOf is process pid's user and discovery file.
func traderOf(pid uint32) (TraderProcess, error) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return TraderProcess{}, err
	}
	defer windows.CloseHandle(h)
	var tok windows.Token
	if err := windows.OpenProcessToken(h, windows.TOKEN_QUERY|windows.TOKEN_IMPERSONATE|windows.TOKEN_DUPLICATE, &tok); err != nil {
		return TraderProcess{}, err
	}
	defer tok.Close()
	u, err := tok.GetTokenUser()
	if err != nil {
		return TraderProcess{}, err
	}
	sid := u.User.Sid.String()
	local, err := tok.KnownFolderPath(windows.FOLDERID_LocalAppData, 0)
	if err != nil || local == "" {
		if local, err = profileLocalAppData(sid); err != nil {
			return TraderProcess{}, err
		}
	}
	return TraderProcess{PID: int(pid), User: sid,
		DiscoveryFile: filepath.Join(local, "TradeBridge", ntwire.DiscoveryFileName)}, nil
}

// profileLocalAppData is AppData\Local in the profile folder the
// registry's ProfileList names for sid.
func profileLocalAppData(sid string) (string, error) {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE,
		`SOFTWARE\Microsoft\Windows NT\CurrentVersion\ProfileList\`+sid, registry.QUERY_VALUE)
	if err != nil {
		return "", err
	}
	defer k.Close()
	dir, _, err := k.GetStringValue("ProfileImagePath")
	if err != nil {
		return "", err
	}
	if dir, err = registry.ExpandString(dir); err != nil {
		return "", err
	}
	return filepath.Join(dir, "AppData", "Local"), nil
}

// FileOwner implements SessionScanner: the owner's SID of the file
// itself (a link is refused).
func (WindowsSessions) FileOwner(path string) (string, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return "", err
	}
	h, err := windows.CreateFile(p, windows.READ_CONTROL, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND) {
			return "", os.ErrNotExist
		}
		return "", err
	}
	defer windows.CloseHandle(h)
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		return "", err
	}
	if info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 {
		return "", errors.New("the discovery file is a link")
	}
	sd, err := windows.GetSecurityInfo(h, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return "", err
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return "", err
	}
	return owner.String(), nil
}

// Trusted implements SessionScanner: SYSTEM and the Administrators.
func (WindowsSessions) Trusted(owner string) bool {
	return strings.EqualFold(owner, "S-1-5-18") || strings.EqualFold(owner, "S-1-5-32-544")
}

// DefaultSessions is the SessionScanner of an agent that runs as the
// SYSTEM service: WindowsSessions.
func DefaultSessions() SessionScanner { return WindowsSessions{} }
