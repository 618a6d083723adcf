package sysproxy

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"unsafe"

	"golang.org/x/sys/windows"
)

// WinHTTP, called through lazily loaded procedures (no cgo).
var (
	modwinhttp  = windows.NewLazySystemDLL("winhttp.dll")
	modkernel32 = windows.NewLazySystemDLL("kernel32.dll")

	procGetDefaultProxyConfiguration   = modwinhttp.NewProc("WinHttpGetDefaultProxyConfiguration")
	procGetIEProxyConfigForCurrentUser = modwinhttp.NewProc("WinHttpGetIEProxyConfigForCurrentUser")
	procOpen                           = modwinhttp.NewProc("WinHttpOpen")
	procSetTimeouts                    = modwinhttp.NewProc("WinHttpSetTimeouts")
	procGetProxyForURL                 = modwinhttp.NewProc("WinHttpGetProxyForUrl")
	procCloseHandle                    = modwinhttp.NewProc("WinHttpCloseHandle")
	procGlobalFree                     = modkernel32.NewProc("GlobalFree")
)

// WinHTTP's constants (winhttp.h).
const (
	accessTypeNoProxy    = 1
	accessTypeNamedProxy = 3

	autoProxyAutoDetect = 0x1
	autoProxyConfigURL  = 0x2
	autoDetectDHCP      = 0x1
	autoDetectDNSA      = 0x2

	errAutodetectionFailed = windows.Errno(12180) // ERROR_WINHTTP_AUTODETECTION_FAILED

	// lookupTimeoutMillis bounds each step of downloading a PAC script.
	lookupTimeoutMillis = 5000
)

// proxyInfo is WINHTTP_PROXY_INFO.
type proxyInfo struct {
	accessType uint32
	proxy      *uint16
	bypass     *uint16
}

// ieProxyConfig is WINHTTP_CURRENT_USER_IE_PROXY_CONFIG.
type ieProxyConfig struct {
	autoDetect    int32
	autoConfigURL *uint16
	proxy         *uint16
	bypass        *uint16
}

// autoProxyOptions is WINHTTP_AUTOPROXY_OPTIONS.
type autoProxyOptions struct {
	flags                 uint32
	autoDetectFlags       uint32
	autoConfigURL         *uint16
	reserved1             uintptr
	reserved2             uint32
	autoLogonIfChallenged int32
}

// DefaultSystem is the machine's WinHTTP configuration.
func DefaultSystem() System { return winHTTP{} }

// winHTTP reads the proxy configuration through WinHTTP, as Windows
// services do: the machine's default proxy (netsh winhttp set proxy)
// and automatic configuration (WPAD, PAC scripts).
type winHTTP struct{}

// takeString copies a string WinHTTP allocated and frees it.
func takeString(p *uint16) string {
	if p == nil {
		return ""
	}
	s := windows.UTF16PtrToString(p)
	procGlobalFree.Call(uintptr(unsafe.Pointer(p)))
	return s
}

func (winHTTP) DefaultProxy() (Settings, error) {
	if err := procGetDefaultProxyConfiguration.Find(); err != nil {
		return Settings{}, err
	}
	var info proxyInfo
	r, _, err := procGetDefaultProxyConfiguration.Call(uintptr(unsafe.Pointer(&info)))
	if r == 0 {
		return Settings{}, fmt.Errorf("WinHttpGetDefaultProxyConfiguration: %w", err)
	}
	s := Settings{Proxy: takeString(info.proxy), Bypass: takeString(info.bypass)}
	if info.accessType != accessTypeNamedProxy {
		return Settings{}, nil
	}
	return s, nil
}

// namedPAC is the PAC script's URL the machine's Internet settings name
// for this account (for LocalSystem: the machine's policy or the
// system account's settings), and whether they ask for detection.
func namedPAC() (string, bool) {
	if procGetIEProxyConfigForCurrentUser.Find() != nil {
		return "", true
	}
	var c ieProxyConfig
	r, _, _ := procGetIEProxyConfigForCurrentUser.Call(uintptr(unsafe.Pointer(&c)))
	if r == 0 {
		return "", true
	}
	pac := takeString(c.autoConfigURL)
	takeString(c.proxy)
	takeString(c.bypass)
	return pac, c.autoDetect != 0
}

func (winHTTP) AutoProxy(_ context.Context, target *url.URL, pacURL string) (Settings, bool, error) {
	if err := procGetProxyForURL.Find(); err != nil {
		return Settings{}, false, err
	}
	opts := autoProxyOptions{autoLogonIfChallenged: 1}
	if pacURL == "" {
		// WPAD detection always: a service has no user settings to ask
		// whether to; then the script the machine names, if any.
		opts.flags = autoProxyAutoDetect
		opts.autoDetectFlags = autoDetectDHCP | autoDetectDNSA
		pacURL, _ = namedPAC()
	}
	if pacURL != "" {
		p, err := windows.UTF16PtrFromString(pacURL)
		if err != nil {
			return Settings{}, false, err
		}
		opts.flags |= autoProxyConfigURL
		opts.autoConfigURL = p
	}
	agent, _ := windows.UTF16PtrFromString("TradeBridgeAgent")
	h, _, err := procOpen.Call(uintptr(unsafe.Pointer(agent)), accessTypeNoProxy, 0, 0, 0)
	if h == 0 {
		return Settings{}, false, fmt.Errorf("WinHttpOpen: %w", err)
	}
	defer procCloseHandle.Call(h)
	procSetTimeouts.Call(h, lookupTimeoutMillis, lookupTimeoutMillis, lookupTimeoutMillis, lookupTimeoutMillis)
	u, err := windows.UTF16PtrFromString(target.Scheme + "://" + target.Host + "/")
	if err != nil {
		return Settings{}, false, err
	}
	var info proxyInfo
	r, _, err := procGetProxyForURL.Call(h, uintptr(unsafe.Pointer(u)), uintptr(unsafe.Pointer(&opts)), uintptr(unsafe.Pointer(&info)))
	if r == 0 {
		if errors.Is(err, errAutodetectionFailed) {
			return Settings{}, false, nil // no WPAD on this network
		}
		return Settings{}, false, fmt.Errorf("WinHttpGetProxyForUrl: %w", err)
	}
	s := Settings{Proxy: takeString(info.proxy), Bypass: takeString(info.bypass)}
	if info.accessType != accessTypeNamedProxy {
		s = Settings{} // DIRECT
	}
	return s, true, nil
}
