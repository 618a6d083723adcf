// Package installer holds the tests of the agent's Windows installer
// (installer/wix/agent.wxs, scripts/build-installer.sh): they build the
// signed MSI on Linux into a temporary folder, read its tables back with
// msiinfo and verify the Authenticode signatures with osslsigncode. The
// package has no code of its own.
package installer

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"tradebridge/agent/winsvc"
)

const (
	// upgradeCode is the MSI's UpgradeCode, the same for every version.
	upgradeCode = "{ECA71886-A6E9-46A1-B777-413534EAA9E2}"
	// testVersion is far from what scripts/version.sh prints, so finding
	// it proves VERSION reached every place.
	testVersion = "7.3.4321"
	// canary is in the build's environment as TOKEN (and in RELAY_URL);
	// it must end up nowhere, nor codeCanary (PAIRING_CODE).
	canary     = "tb_agent_installercanary0123456789"
	codeCanary = "QZXW-7K9M"
	// defaultRelay is the build's DEFAULT_RELAY_URL in TestInstaller.
	defaultRelay = "https://relay.example.test"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// tools skips t (fails it under CI, where make test installs them) when
// the build's tools are missing.
func tools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"wixl", "msibuild", "msiinfo", "osslsigncode", "openssl", "python3", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := tool + " not found: the installer's build needs Debian's wixl, msitools, osslsigncode, openssl and python3 (scripts/test-deps.sh installs them; make test runs it)"
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}

// build runs scripts/build-installer.sh with OUT=out and the variables of
// env, in an environment without the developer's signing configuration.
func build(t *testing.T, out string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", "scripts/build-installer.sh")
	cmd.Dir = ".."
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "SIGN_"), name == "OUT", name == "VERSION", name == "ADDON_ZIP",
			name == "TOKEN", name == "RELAY_URL", name == "PLATFORM", name == "PAIRING_CODE", name == "KEEP_TOKEN",
			name == "DEFAULT_RELAY_URL", name == "HELP_URL", name == "ABOUT_URL", name == "SUPPORT_CONTACT":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "OUT="+out)
	cmd.Env = append(cmd.Env, env...)
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// The MSI built with the test certificate: its tables, its signatures and
// the version stamped into the agent it carries. The tests that build run
// one after the other: the second finds the agent's compiled packages in
// the Go build cache (a first -trimpath build for Windows takes about a
// minute).
func TestInstaller(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the agent for Windows and the MSI")
	}
	tools(t)

	out := t.TempDir()
	log, err := build(t, out, "VERSION="+testVersion, "DEFAULT_RELAY_URL="+defaultRelay+"/",
		"TOKEN="+canary, "RELAY_URL=https://"+canary+".invalid", "PLATFORM=ninjatrader", "PAIRING_CODE="+codeCanary)
	require.NoError(t, err, "build-installer.sh:\n%s", log)
	require.NotContains(t, log, canary)
	require.NotContains(t, log, codeCanary)
	// "-TEST": signed with the test certificate.
	msi := filepath.Join(out, "TradeBridgeAgent-"+testVersion+"-TEST-x64.msi")
	exe := filepath.Join(out, "agent.exe")
	require.FileExists(t, msi)
	require.FileExists(t, exe)

	t.Run("files", func(t *testing.T) {
		t.Parallel()
		files := exportTable(t, msi, "File")
		components := exportTable(t, msi, "Component")
		for _, name := range []string{"agent.exe", "TradeBridgeNinjaTraderAddOn.zip"} {
			f := files.row(t, "FileName", name)
			c := components.row(t, "Component", f["Component_"])
			assert.Equal(t, "INSTALLDIR", c["Directory_"], name)
			attrs, err := strconv.Atoi(c["Attributes"])
			require.NoError(t, err)
			assert.NotZero(t, attrs&256, "%s: a 64-bit component", name)
		}
		assert.Len(t, files.rows, 2, "nothing else is installed")
		exeSize, err := os.Stat(exe)
		require.NoError(t, err)
		assert.Equal(t, strconv.FormatInt(exeSize.Size(), 10), files.row(t, "FileName", "agent.exe")["FileSize"],
			"the MSI carries the signed agent.exe")

		dirs := exportTable(t, msi, "Directory")
		var path []string
		for id := "INSTALLDIR"; id != "TARGETDIR"; {
			d := dirs.row(t, "Directory", id)
			path = append([]string{d["DefaultDir"]}, path...)
			id = d["Directory_Parent"]
			if id == "ProgramFiles64Folder" {
				path = append([]string{id}, path...)
				break
			}
		}
		assert.Equal(t, []string{"ProgramFiles64Folder", "TradeBridge", "Agent"}, path)
	})

	t.Run("service", func(t *testing.T) {
		t.Parallel()
		svc := exportTable(t, msi, "ServiceInstall")
		require.Len(t, svc.rows, 1)
		s := svc.rows[0]
		assert.Equal(t, winsvc.Name, s["Name"])
		assert.Equal(t, "TradeBridge Agent", s["DisplayName"])
		assert.Equal(t, strings.Join(winsvc.ServiceArguments, " "), s["Arguments"])
		assert.Equal(t, "run --service", s["Arguments"], "the service's command line, never the token")
		assert.Equal(t, "16", s["ServiceType"], "own process")
		assert.Equal(t, "2", s["StartType"], "automatic")
		assert.Equal(t, strconv.Itoa(0x8000|1), s["ErrorControl"], "normal, vital")
		assert.Equal(t, "LocalSystem", s["StartName"])
		assert.Empty(t, s["Password"])
		assert.NotEmpty(t, s["Description"])

		ctl := exportTable(t, msi, "ServiceControl")
		require.Len(t, ctl.rows, 1)
		c := ctl.rows[0]
		assert.Equal(t, winsvc.Name, c["Name"])
		// Start on install (1), stop on install (2) and uninstall (0x20),
		// delete on uninstall (0x80).
		assert.Equal(t, strconv.Itoa(0x01|0x02|0x20|0x80), c["Event"])
		assert.Equal(t, "1", c["Wait"])
		assert.Empty(t, c["Arguments"])
		assert.Equal(t, s["Component_"], c["Component_"])
	})

	t.Run("properties", func(t *testing.T) {
		t.Parallel()
		props := exportTable(t, msi, "Property")
		value := func(name string) string { return props.row(t, "Property", name)["Value"] }
		assert.Equal(t, testVersion, value("ProductVersion"))
		assert.Equal(t, upgradeCode, value("UpgradeCode"))
		product, err := uuid5(upgradeCode, testVersion)
		require.NoError(t, err)
		assert.Equal(t, "{"+product+"}", value("ProductCode"), "the ProductCode is the UUIDv5 of the version")
		assert.Equal(t, "1", value("ALLUSERS"), "per machine")
		hidden := strings.Split(value("MsiHiddenProperties"), ";")
		assert.ElementsMatch(t, []string{"TOKEN", "PAIRING_CODE"}, hidden, "the token and the code stay out of the log")
		secure := strings.Split(value("SecureCustomProperties"), ";")
		for _, p := range []string{"RELAY_URL", "PAIRING_CODE", "TOKEN", "PLATFORM", "KEEP_TOKEN", "WIX_UPGRADE_DETECTED", "WIX_DOWNGRADE_DETECTED"} {
			assert.Contains(t, secure, p)
			if !strings.HasPrefix(p, "WIX_") {
				assert.False(t, props.has("Property", p), "%s has no value in the package (the default relay is set by RelayUrlDefault)", p)
			}
		}
		// Apps & features.
		assert.Equal(t, "1", value("ARPNOMODIFY"))
		assert.Equal(t, defaultRelay+"/app", value("ARPHELPLINK"), "the dashboard of the build's relay")
		assert.Equal(t, defaultRelay, value("ARPURLINFOABOUT"))
		assert.Equal(t, "TradeBridge support", value("ARPCONTACT"))
		assert.Contains(t, value("ARPCOMMENTS"), `C:\Program Files\TradeBridge\Agent\agent.exe`)
		for _, p := range []string{"ARPHELPLINK", "ARPURLINFOABOUT", "ARPCONTACT", "ARPCOMMENTS"} {
			assert.NotContains(t, value(p), "[", "%s is not a formatted string", p)
		}

		// PAIRING_CODE is the way; a TOKEN too is refused before anything
		// is done.
		lc := exportTable(t, msi, "LaunchCondition").row(t, "Condition", "NOT (PAIRING_CODE AND TOKEN)")
		assert.Contains(t, lc["Description"], "not both")
	})

	t.Run("start menu", func(t *testing.T) {
		t.Parallel()
		dirs := exportTable(t, msi, "Directory")
		folder := dirs.row(t, "Directory", "StartMenuFolder")
		assert.Equal(t, "ProgramMenuFolder", folder["Directory_Parent"], "the all-users Start menu (ALLUSERS=1)")
		assert.Equal(t, "TBAGENT|TradeBridge Agent", folder["DefaultDir"])
		assert.Equal(t, "TARGETDIR", dirs.row(t, "Directory", "ProgramMenuFolder")["Directory_Parent"])

		shortcuts := exportTable(t, msi, "Shortcut")
		require.Len(t, shortcuts.rows, 3)
		for _, tc := range []struct{ name, args string }{
			{"PAIRPC|Pair this PC", "pair"},
			{"STATUS|TradeBridge Agent status", "status --pause"},
			{"DIAG|Diagnostics for support", "diag --pause"},
		} {
			sc := shortcuts.row(t, "Name", tc.name)
			assert.Equal(t, "StartMenuFolder", sc["Directory_"], tc.name)
			assert.Equal(t, "StartMenuComponent", sc["Component_"], tc.name)
			assert.Equal(t, "[#AgentExe]", sc["Target"], "%s: agent.exe, not advertised", tc.name)
			assert.Equal(t, tc.args, sc["Arguments"], tc.name)
			assert.Equal(t, "INSTALLDIR", sc["WkDir"], tc.name)
			assert.NotEmpty(t, sc["Description"], tc.name)
		}

		// The component: 64-bit, its key a registry value (4), which says
		// where agent.exe is.
		reg := exportTable(t, msi, "Registry")
		comp := exportTable(t, msi, "Component").row(t, "Component", "StartMenuComponent")
		assert.Equal(t, "StartMenuFolder", comp["Directory_"])
		assert.Equal(t, strconv.Itoa(256|4), comp["Attributes"])
		key := reg.row(t, "Registry", comp["KeyPath"])
		assert.Equal(t, "2", key["Root"], "HKEY_LOCAL_MACHINE")
		assert.Equal(t, `Software\TradeBridge\Agent`, key["Key"])
		assert.Equal(t, "Path", key["Name"])
		assert.Equal(t, "[#AgentExe]", key["Value"])
		assert.Equal(t, testVersion, reg.row(t, "Name", "Version")["Value"])
		assert.Len(t, reg.rows, 2)

		// The folder goes on uninstallation (InstallMode 2).
		rf := exportTable(t, msi, "RemoveFile").row(t, "DirProperty", "StartMenuFolder")
		assert.Equal(t, "StartMenuComponent", rf["Component_"])
		assert.Equal(t, "2", rf["InstallMode"])
		assert.Empty(t, rf["FileName"])

		features := exportTable(t, msi, "FeatureComponents")
		assert.Equal(t, "Agent", features.row(t, "Component_", "StartMenuComponent")["Feature_"])
	})

	t.Run("no token in the package", func(t *testing.T) {
		t.Parallel()
		raw, err := os.ReadFile(msi)
		require.NoError(t, err)
		assert.False(t, bytes.Contains(raw, []byte(canary)))
		assert.False(t, bytes.Contains(raw, []byte(codeCanary)))
		names, err := exec.Command("msiinfo", "tables", msi).Output()
		require.NoError(t, err)
		for _, name := range strings.Fields(string(names)) {
			text, err := exec.Command("msiinfo", "export", msi, name).Output()
			require.NoError(t, err, name)
			assert.NotContains(t, string(text), canary, name)
			assert.NotContains(t, string(text), "tb_agent_", name)
			assert.NotContains(t, string(text), codeCanary, name)
		}
	})

	t.Run("upgrade", func(t *testing.T) {
		t.Parallel()
		up := exportTable(t, msi, "Upgrade")
		require.Len(t, up.rows, 2)
		for _, r := range up.rows {
			assert.Equal(t, upgradeCode, r["UpgradeCode"])
		}
		// Older versions: found and removed (MigrateFeatures, the maximum
		// excluded).
		older := up.row(t, "ActionProperty", "WIX_UPGRADE_DETECTED")
		assert.Empty(t, older["VersionMin"])
		assert.Equal(t, testVersion, older["VersionMax"])
		assert.Equal(t, "1", older["Attributes"])
		// Newer versions: only detected (OnlyDetect, the minimum excluded)
		// and refused by the launch condition.
		newer := up.row(t, "ActionProperty", "WIX_DOWNGRADE_DETECTED")
		assert.Equal(t, testVersion, newer["VersionMin"])
		assert.Empty(t, newer["VersionMax"])
		assert.Equal(t, "2", newer["Attributes"])
		lc := exportTable(t, msi, "LaunchCondition").row(t, "Condition", "NOT WIX_DOWNGRADE_DETECTED")
		assert.Contains(t, lc["Description"], "newer version")
	})

	t.Run("custom actions", func(t *testing.T) {
		t.Parallel()
		const (
			exeFromFile = 18     // msidbCustomActionTypeExe + SourceFile
			setProperty = 51     // msidbCustomActionTypeProperty + TextData
			ignore      = 0x40   // msidbCustomActionTypeContinue
			deferred    = 0x400  // msidbCustomActionTypeInScript
			noImperson  = 0x800  // msidbCustomActionTypeNoImpersonate
			hideTarget  = 0x2000 // msidbCustomActionTypeHideTarget
			installing  = `NOT (REMOVE~="ALL")`
			uninstall   = `REMOVE~="ALL" AND NOT UPGRADINGPRODUCTCODE`
			msiLog      = ` --msi-log "[MsiLogFileLocation]"`
		)
		cas := exportTable(t, msi, "CustomAction")
		seq := exportTable(t, msi, "InstallExecuteSequence")
		for _, tc := range []struct {
			action, target, condition string
			flags                     int
		}{
			{"ConfigSetRelayUrl", `config set relay-url "[RELAY_URL]"` + msiLog, "RELAY_URL AND " + installing, 0},
			{"ConfigSetToken", `config set token "[TOKEN]"` + msiLog, "TOKEN AND " + installing, hideTarget},
			{"ConfigSetPlatform", `config set platform "[PLATFORM]"` + msiLog, "PLATFORM AND " + installing, 0},
			{"PairWithRelay", `pair "[PAIRING_CODE]" --relay "[RELAY_URL]"` + msiLog, "PAIRING_CODE AND RELAY_URL AND " + installing, hideTarget},
			{"Pair", `pair "[PAIRING_CODE]"` + msiLog, "PAIRING_CODE AND NOT RELAY_URL AND " + installing, hideTarget},
			{"ServiceSetup", "install --msi" + msiLog, installing, 0},
			{"Unpair", "unpair" + msiLog, uninstall + ` AND NOT (KEEP_TOKEN="1")`, ignore},
			{"ConfigClear", "config clear" + msiLog, uninstall, ignore},
			{"ServiceTeardown", "uninstall --msi" + msiLog, uninstall, ignore},
		} {
			ca := cas.row(t, "Action", tc.action)
			assert.Equal(t, "AgentExe", ca["Source"], tc.action)
			assert.Equal(t, tc.target, ca["Target"], tc.action)
			assert.Equal(t, strconv.Itoa(exeFromFile|deferred|noImperson|tc.flags), ca["Type"], tc.action)
			assert.Equal(t, tc.condition, seq.row(t, "Action", tc.action)["Condition"], tc.action)
			assert.LessOrEqual(t, len(ca["Target"]), 255, "%s: the Target column holds 255 characters", tc.action)
		}

		// The build's relay for a first installation given none: set in the
		// installation's immediate part, never on an upgrade or a repair.
		def := cas.row(t, "Action", "RelayUrlDefault")
		typ, err := strconv.Atoi(def["Type"])
		require.NoError(t, err)
		assert.Equal(t, setProperty, typ&0x3f, "sets a property")
		assert.Zero(t, typ&deferred, "immediate")
		assert.Equal(t, "RELAY_URL", def["Source"])
		assert.Equal(t, defaultRelay, def["Target"])
		assert.Equal(t, `NOT RELAY_URL AND NOT Installed AND NOT WIX_UPGRADE_DETECTED AND NOT (REMOVE~="ALL")`,
			seq.row(t, "Action", "RelayUrlDefault")["Condition"])

		assert.Len(t, cas.rows, 10)
		assert.Equal(t, "AgentExe", exportTable(t, msi, "File").row(t, "FileName", "agent.exe")["File"])
	})

	t.Run("sequence", func(t *testing.T) {
		t.Parallel()
		seq := exportTable(t, msi, "InstallExecuteSequence")
		at := func(action string) int {
			n, err := strconv.Atoi(seq.row(t, "Action", action)["Sequence"])
			require.NoError(t, err, action)
			return n
		}
		for _, order := range [][]string{
			// The default relay is decided once the installed versions are
			// known, before the script is written.
			{"FindRelatedProducts", "RelayUrlDefault", "InstallValidate"},
			// The old version goes before anything of this one is done,
			// inside the transaction (a failure puts it back), where
			// Windows Installer allows it: right after InstallInitialize.
			{"InstallValidate", "InstallInitialize", "RemoveExistingProducts", "ProcessComponents"},
			// Uninstalling: the service stopped and deleted, the token
			// revoked on the relay, the configuration deleted, then the
			// agent says what stays and removes its Event Log source, then
			// the files go.
			{"StopServices", "DeleteServices", "Unpair", "ConfigClear", "ServiceTeardown", "RemoveFiles"},
			// Installing: the files, the configuration, the pairing, the
			// service registered and configured, then started.
			{"InstallFiles", "ConfigSetRelayUrl", "ConfigSetToken", "ConfigSetPlatform", "PairWithRelay", "InstallServices", "ServiceSetup", "StartServices", "InstallFinalize"},
			{"ConfigSetPlatform", "Pair", "InstallServices"},
			// The Start menu and the registry value.
			{"InstallFiles", "CreateShortcuts", "WriteRegistryValues", "InstallFinalize"},
			{"RemoveShortcuts", "RemoveFiles"},
		} {
			for i := 1; i < len(order); i++ {
				assert.Less(t, at(order[i-1]), at(order[i]), "%s before %s", order[i-1], order[i])
			}
		}
		// Nothing between InstallInitialize and RemoveExistingProducts
		// (ICE63).
		for _, r := range seq.rows {
			n, err := strconv.Atoi(r["Sequence"])
			require.NoError(t, err)
			assert.False(t, n > at("InstallInitialize") && n < at("RemoveExistingProducts"), r["Action"])
		}
	})

	t.Run("signatures", func(t *testing.T) {
		t.Parallel()
		ca := filepath.Join(out, "test-signing", "ca.pem")
		require.FileExists(t, ca)
		for _, f := range []string{exe, msi} {
			text, err := exec.Command("osslsigncode", "verify", "-CAfile", ca, "-in", f).CombinedOutput()
			require.NoError(t, err, "%s:\n%s", f, text)
			assert.Contains(t, string(text), "Signature verification: ok", f)
			assert.Contains(t, string(text), "TradeBridge Test Code Signing", f)
		}
		bad := filepath.Join(t.TempDir(), "agent.exe")
		corrupt(t, exe, bad)
		text, err := exec.Command("osslsigncode", "verify", "-CAfile", ca, "-in", bad).CombinedOutput()
		assert.Error(t, err, "a changed agent.exe fails verification:\n%s", text)
		assert.NoFileExists(t, filepath.Join(out, "test-signing", "ca.key"), "the test CA signs nothing else")
	})

	t.Run("version", func(t *testing.T) {
		t.Parallel()
		info, err := exec.Command("go", "version", "-m", exe).Output()
		require.NoError(t, err)
		for _, want := range []string{"\tpath\ttradebridge/cmd/agent", "\tbuild\tGOOS=windows", "\tbuild\tGOARCH=amd64", "\tbuild\t-trimpath=true"} {
			assert.Contains(t, string(info), want)
		}
		// -trimpath keeps -ldflags out of the build information, so the
		// stamped version is read from the variable itself.
		v, err := peStringVar(exe, "tradebridge/agent.Version")
		require.NoError(t, err)
		props := exportTable(t, msi, "Property")
		assert.Equal(t, props.row(t, "Property", "ProductVersion")["Value"], v)
		assert.Equal(t, testVersion, v)
		// VERSIONINFO and manifest (signing_test.go).
		checkResources(t, exe, testVersion, testVersion+".0", "PrivateBuild")
	})
}

// A release certificate given as a PKCS#12 file and a password file: used
// instead of the test certificate, its password never printed.
func TestInstallerRealCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the agent for Windows and the MSI")
	}
	tools(t)

	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	const password = "installer-test-passphrase-7f3a"
	require.NoError(t, os.WriteFile(file("pass"), []byte(password+"\n"), 0o600))
	for _, args := range [][]string{
		{"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2",
			"-subj", "/CN=TradeBridge Installer Test Release Signer",
			"-addext", "basicConstraints=critical,CA:FALSE", "-addext", "keyUsage=critical,digitalSignature",
			"-addext", "extendedKeyUsage=codeSigning", "-keyout", file("key.pem"), "-out", file("cert.pem")},
		{"pkcs12", "-export", "-inkey", file("key.pem"), "-in", file("cert.pem"),
			"-passout", "file:" + file("pass"), "-out", file("release.p12")},
	} {
		text, err := exec.Command("openssl", args...).CombinedOutput()
		require.NoError(t, err, "openssl %s:\n%s", args[0], text)
	}
	require.NoError(t, os.WriteFile(file("addon.zip"), []byte("PK\x05\x06"+strings.Repeat("\x00", 18)), 0o600))

	// A dev build's version, as scripts/version.sh prints it three commits
	// after the tag v7.3.4322.
	const devVersion = "7.3.4322-dev.3+g0123456789ab"
	out := filepath.Join(dir, "out")
	log, err := build(t, out, "VERSION="+devVersion, "ADDON_ZIP="+file("addon.zip"), "SUPPORT_CONTACT=",
		"SIGN_PKCS12="+file("release.p12"), "SIGN_PASS_FILE="+file("pass"), "SIGN_CA_FILE="+file("cert.pem"))
	require.NoError(t, err, "build-installer.sh:\n%s", log)
	assert.NotContains(t, log, password)
	assert.Contains(t, log, "SIGN_PKCS12")
	assert.NoDirExists(t, filepath.Join(out, "test-signing"))
	msi := filepath.Join(out, "TradeBridgeAgent-7.3.4322-dev.3-g0123456789ab-x64.msi")
	props := exportTable(t, msi, "Property")
	assert.Equal(t, "7.3.4322", props.row(t, "Property", "ProductVersion")["Value"], "the tag's MAJOR.MINOR.PATCH")
	product, err := uuid5(upgradeCode, devVersion)
	require.NoError(t, err)
	assert.Equal(t, "{"+product+"}", props.row(t, "Property", "ProductCode")["Value"], "the commit is part of the ProductCode")
	checkResources(t, filepath.Join(out, "agent.exe"), devVersion, "7.3.4322.3", "Prerelease")
	for _, f := range []string{filepath.Join(out, "agent.exe"), msi} {
		text, err := exec.Command("osslsigncode", "verify", "-CAfile", file("cert.pem"), "-in", f).CombinedOutput()
		require.NoError(t, err, "%s:\n%s", f, text)
		assert.Contains(t, string(text), "TradeBridge Installer Test Release Signer", f)
	}

	// Built without DEFAULT_RELAY_URL, HELP_URL or ABOUT_URL: no default
	// relay, no links; SUPPORT_CONTACT empty: no contact.
	for _, p := range []string{"RELAY_URL", "ARPHELPLINK", "ARPURLINFOABOUT", "ARPCONTACT"} {
		assert.False(t, props.has("Property", p), p)
	}
	assert.False(t, exportTable(t, msi, "CustomAction").has("Action", "RelayUrlDefault"))
	assert.False(t, exportTable(t, msi, "InstallExecuteSequence").has("Action", "RelayUrlDefault"))
}

// What the build refuses, before building anything, without repeating the
// values it was given.
func TestInstallerRefuses(t *testing.T) {
	tools(t)
	t.Parallel()
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret-key-canary.pem")
	p12 := filepath.Join(dir, "secret-p12-canary.p12")
	require.NoError(t, os.WriteFile(p12, []byte("not read"), 0o600))
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"two-part version", []string{"VERSION=1.2"}, "VERSION must be MAJOR.MINOR.PATCH"},
		{"version suffix", []string{"VERSION=1.2.3-dirty"}, "VERSION must be MAJOR.MINOR.PATCH"},
		{"major over 255", []string{"VERSION=256.0.0"}, "out of the MSI's range"},
		{"patch over 65535", []string{"VERSION=1.0.65536"}, "out of the MSI's range"},
		{"certificate without key", []string{"VERSION=1.0.0", "SIGN_CERT=" + secret}, "SIGN_CERT and SIGN_KEY go together"},
		{"missing key file", []string{"VERSION=1.0.0", "SIGN_CERT=" + secret, "SIGN_KEY=" + secret}, "SIGN_CERT names a file that is missing"},
		{"missing pkcs12 file", []string{"VERSION=1.0.0", "SIGN_PKCS12=" + secret}, "SIGN_PKCS12 names a file that is missing"},
		{"pkcs12 without password", []string{"VERSION=1.0.0", "SIGN_PKCS12=" + p12}, "SIGN_PKCS12 needs SIGN_PASS_FILE"},
		{"pkcs12 and pem", []string{"VERSION=1.0.0", "SIGN_PKCS12=" + secret, "SIGN_KEY=" + secret}, "either SIGN_PKCS12 or SIGN_CERT"},
		{"default relay not http", []string{"VERSION=1.0.0", "DEFAULT_RELAY_URL=ftp://relay-canary.example"}, "DEFAULT_RELAY_URL must be an http"},
		{"default relay with a property", []string{"VERSION=1.0.0", "DEFAULT_RELAY_URL=https://relay.example/[TOKEN]-canary"}, "DEFAULT_RELAY_URL must be"},
		{"help link with an ampersand", []string{"VERSION=1.0.0", "HELP_URL=https://help.example/?a=1&b-canary"}, "HELP_URL must be"},
		{"about link with a quote", []string{"VERSION=1.0.0", `ABOUT_URL=https://about.example/"-canary`}, "ABOUT_URL must be"},
		{"contact with markup", []string{"VERSION=1.0.0", "SUPPORT_CONTACT=<b>support-canary</b>"}, "SUPPORT_CONTACT must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out")
			log, err := build(t, out, tc.env...)
			require.Error(t, err, log)
			assert.Contains(t, log, tc.want)
			assert.NotContains(t, log, "-canary")
			assert.NotContains(t, log, "dirty")
			assert.NoFileExists(t, filepath.Join(out, "agent.exe"))
		})
	}
}
