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
	// it must end up nowhere.
	canary = "tb_agent_installercanary0123456789"
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
			name == "TOKEN", name == "RELAY_URL", name == "PLATFORM":
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
	log, err := build(t, out, "VERSION="+testVersion,
		"TOKEN="+canary, "RELAY_URL=https://"+canary+".invalid", "PLATFORM=ninjatrader")
	require.NoError(t, err, "build-installer.sh:\n%s", log)
	require.NotContains(t, log, canary)
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
		assert.Contains(t, strings.Split(value("MsiHiddenProperties"), ";"), "TOKEN")
		secure := strings.Split(value("SecureCustomProperties"), ";")
		for _, p := range []string{"RELAY_URL", "TOKEN", "PLATFORM", "WIX_UPGRADE_DETECTED", "WIX_DOWNGRADE_DETECTED"} {
			assert.Contains(t, secure, p)
			if !strings.HasPrefix(p, "WIX_") {
				assert.False(t, props.has("Property", p), "%s has no value in the package", p)
			}
		}
	})

	t.Run("no token in the package", func(t *testing.T) {
		t.Parallel()
		raw, err := os.ReadFile(msi)
		require.NoError(t, err)
		assert.False(t, bytes.Contains(raw, []byte(canary)))
		names, err := exec.Command("msiinfo", "tables", msi).Output()
		require.NoError(t, err)
		for _, name := range strings.Fields(string(names)) {
			text, err := exec.Command("msiinfo", "export", msi, name).Output()
			require.NoError(t, err, name)
			assert.NotContains(t, string(text), canary, name)
			assert.NotContains(t, string(text), "tb_agent_", name)
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
			ignore      = 0x40   // msidbCustomActionTypeContinue
			deferred    = 0x400  // msidbCustomActionTypeInScript
			noImperson  = 0x800  // msidbCustomActionTypeNoImpersonate
			hideTarget  = 0x2000 // msidbCustomActionTypeHideTarget
			installing  = `NOT (REMOVE~="ALL")`
			uninstall   = `REMOVE~="ALL" AND NOT UPGRADINGPRODUCTCODE`
		)
		cas := exportTable(t, msi, "CustomAction")
		seq := exportTable(t, msi, "InstallExecuteSequence")
		for _, tc := range []struct {
			action, target, condition string
			flags                     int
		}{
			{"ConfigSetRelayUrl", `config set relay-url "[RELAY_URL]"`, "RELAY_URL AND " + installing, 0},
			{"ConfigSetToken", `config set token "[TOKEN]"`, "TOKEN AND " + installing, hideTarget},
			{"ConfigSetPlatform", `config set platform "[PLATFORM]"`, "PLATFORM AND " + installing, 0},
			{"ServiceSetup", "install --msi", installing, 0},
			{"ServiceTeardown", "uninstall --msi", uninstall, ignore},
			{"ConfigClear", "config clear", uninstall, ignore},
		} {
			ca := cas.row(t, "Action", tc.action)
			assert.Equal(t, "AgentExe", ca["Source"], tc.action)
			assert.Equal(t, tc.target, ca["Target"], tc.action)
			assert.Equal(t, strconv.Itoa(exeFromFile|deferred|noImperson|tc.flags), ca["Type"], tc.action)
			assert.Equal(t, tc.condition, seq.row(t, "Action", tc.action)["Condition"], tc.action)
		}
		assert.Len(t, cas.rows, 6)
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
			// The old version goes before anything of this one is done,
			// inside the transaction (a failure puts it back), where
			// Windows Installer allows it: right after InstallInitialize.
			{"InstallValidate", "InstallInitialize", "RemoveExistingProducts", "ProcessComponents"},
			// Uninstalling: the service stopped and deleted, then the
			// agent removes its Event Log source and its configuration,
			// then the files go.
			{"StopServices", "DeleteServices", "ServiceTeardown", "ConfigClear", "RemoveFiles"},
			// Installing: the files, the configuration, the service
			// registered and configured, then started.
			{"InstallFiles", "ConfigSetRelayUrl", "ConfigSetToken", "ConfigSetPlatform", "InstallServices", "ServiceSetup", "StartServices", "InstallFinalize"},
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
	log, err := build(t, out, "VERSION="+devVersion, "ADDON_ZIP="+file("addon.zip"),
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
