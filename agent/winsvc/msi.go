package winsvc

import "errors"

// UpgradeCode is the UpgradeCode of the agent's Windows installer (MSI):
// every version of the product shares it.
const UpgradeCode = "{ECA71886-A6E9-46A1-B777-413534EAA9E2}"

// ErrMSIInstalled is the refusal of `agent install` and `agent uninstall`
// when the installer (MSI) installed the agent: the installer registers
// and removes its service.
var ErrMSIInstalled = errors.New("the TradeBridge Agent installer (MSI) installed the agent on this PC: " +
	"change or remove it in Settings > Apps & features (or with msiexec), not with agent install/uninstall")
