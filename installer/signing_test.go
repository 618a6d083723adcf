package installer

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tc-hib/winres"
	"github.com/tc-hib/winres/version"
)

// The release path of scripts/build-installer.sh (make release): a key on a
// PKCS#11 token (SoftHSM, in a temporary folder) signs agent.exe and the
// MSI through osslsigncode and OpenSSL's pkcs11 engine, a local RFC 3161
// timestamp authority (openssl ts behind an HTTP server on loopback)
// countersigns both, and the build verifies the result. The version comes
// from a tag, so the build runs in a temporary git copy of the tree.

const (
	// releaseTag is created in the temporary copies only.
	releaseTag = "v7.4.0"
	// tokenPIN is the test token's PIN; the build reads it from a file
	// and must never print it.
	tokenPIN   = "947261"
	tokenLabel = "tradebridge-release"
	// win10 is the supportedOS Id of Windows 10 and 11.
	win10 = "{8e0f7a12-bfb3-4fe8-b9a5-48fd50a15a9a}"
)

// softhsmModule is SoftHSM's PKCS#11 library as Debian's softhsm2 installs it.
var softhsmModule = "/usr/lib/softhsm/libsofthsm2.so"

// hsmTools skips t (fails it under CI, where make test installs them) when
// what the PKCS#11 path needs is missing.
func hsmTools(t *testing.T) {
	t.Helper()
	tools(t)
	missing := ""
	for _, tool := range []string{"softhsm2-util", "pkcs11-tool", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = tool + " not found"
		}
	}
	if _, err := os.Stat(softhsmModule); err != nil && missing == "" {
		missing = softhsmModule + " not found"
	}
	if missing == "" && exec.Command("openssl", "engine", "-t", "pkcs11").Run() != nil {
		missing = "the OpenSSL engine pkcs11 is missing"
	}
	if missing != "" {
		msg := missing + ": the release signing path needs Debian's softhsm2, libengine-pkcs11-openssl, opensc and git (scripts/test-deps.sh installs them; make test runs it)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// run runs name with args in dir (any folder when empty) and env added to
// the test's environment, failing t with its output when it fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
	return string(out)
}

// gitEnv keeps the developer's git configuration out of the test's commits.
var gitEnv = []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	"GIT_AUTHOR_NAME=installer test", "GIT_AUTHOR_EMAIL=test@example.invalid",
	"GIT_COMMITTER_NAME=installer test", "GIT_COMMITTER_EMAIL=test@example.invalid"}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(run(t, dir, gitEnv, "git", append([]string{"-c", "init.defaultBranch=main",
		"-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...))
}

// commitAll commits everything in dir, a new repository unless it is one.
func commitAll(t *testing.T, dir, msg string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		git(t, dir, "init", "-q")
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "--allow-empty", "-m", msg)
}

// copyTree copies the files of the repository's working tree (tracked and
// untracked, not ignored; as they are, uncommitted changes included) into a
// new git repository with one commit, skipping t outside a git checkout.
func copyTree(t *testing.T) string {
	t.Helper()
	list, err := exec.Command("git", "-C", "..", "ls-files", "-z", "-c", "-o", "--exclude-standard").Output()
	if err != nil {
		t.Skip("not a git checkout: the release path takes its version from a tag")
	}
	dst := t.TempDir()
	for _, name := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		src := filepath.Join("..", name)
		info, err := os.Lstat(src)
		if os.IsNotExist(err) {
			continue // deleted, not yet committed
		}
		require.NoError(t, err)
		if !info.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dst, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dst, name), b, info.Mode().Perm()))
	}
	commitAll(t, dst, "the tree under test")
	return dst
}

// scriptsRepo is a git repository holding only scripts/version.sh and
// scripts/build-installer.sh: enough for what is decided before a build.
func scriptsRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
	for _, name := range []string{"version.sh", "build-installer.sh"} {
		b, err := os.ReadFile(filepath.Join("..", "scripts", name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "scripts", name), b, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("/build/\n/out/\n"), 0o644))
	commitAll(t, dir, "scripts")
	return dir
}

// buildIn runs scripts/build-installer.sh of the tree dir with OUT=out and
// env, in an environment without the developer's build and signing
// configuration.
func buildIn(t *testing.T, dir, out string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", "scripts/build-installer.sh")
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "SIGN_"), strings.HasPrefix(name, "GIT_"), name == "OUT", name == "VERSION",
			name == "RELEASE", name == "ADDON_ZIP", name == "SOFTHSM2_CONF",
			name == "TOKEN", name == "PAIRING_CODE", name == "RELAY_URL", name == "PLATFORM":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, gitEnv...)
	cmd.Env = append(cmd.Env, "OUT="+out)
	cmd.Env = append(cmd.Env, env...)
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// pki is the test's certificates: a root, a code-signing certificate
// issued by it, a timestamp authority's, one that looks like
// build-installer.sh's test certificate, and a second root with its own
// timestamp authority that the release trusts for nothing.
type pki struct {
	dir string
}

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

func newPKI(t *testing.T) pki {
	t.Helper()
	p := pki{dir: t.TempDir()}
	ossl := func(args ...string) { run(t, p.dir, nil, "openssl", args...) }
	exts := map[string]string{
		"ca.ext":   "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash\n",
		"sign.ext": "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=codeSigning\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n",
		"tsa.ext":  "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,nonRepudiation\nextendedKeyUsage=critical,timeStamping\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n",
	}
	for name, text := range exts {
		require.NoError(t, os.WriteFile(p.path(name), []byte(text), 0o600))
	}
	root := func(name, cn string) {
		ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2", "-subj", "/CN="+cn,
			"-keyout", name+".key", "-out", name+".pem", "-addext", "basicConstraints=critical,CA:TRUE",
			"-addext", "keyUsage=critical,keyCertSign,cRLSign")
	}
	issue := func(name, subj, ca, ext string) {
		ossl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-sha256", "-subj", subj, "-keyout", name+".key", "-out", name+".csr")
		ossl("x509", "-req", "-sha256", "-days", "2", "-in", name+".csr", "-CA", ca+".pem", "-CAkey", ca+".key",
			"-set_serial", "0x"+strings.TrimSpace(run(t, p.dir, nil, "openssl", "rand", "-hex", "8")),
			"-extfile", ext, "-out", name+".pem")
		// PKCS#8, as softhsm2-util imports it, and DER, as pkcs11-tool does.
		ossl("pkcs8", "-topk8", "-nocrypt", "-in", name+".key", "-out", name+".p8")
		ossl("x509", "-in", name+".pem", "-outform", "der", "-out", name+".der")
	}
	root("ca", "TradeBridge Signing Test Root")
	issue("release", "/CN=TradeBridge Release Signing (HSM test)/O=TradeBridge", "ca", "sign.ext")
	issue("tsa", "/CN=TradeBridge Test TSA", "ca", "tsa.ext")
	issue("lookalike", "/CN=TradeBridge Test Code Signing/O=TradeBridge (test certificate, not trusted)", "ca", "sign.ext")
	root("rogue-ca", "Untrusted Root")
	issue("rogue-tsa", "/CN=Untrusted TSA", "rogue-ca", "tsa.ext")
	return p
}

// token is a SoftHSM token in a temporary folder holding the release key
// and certificate (object release) and the look-alike of the test
// certificate (object lookalike).
type token struct {
	conf    string // SOFTHSM2_CONF
	pinFile string
}

func newToken(t *testing.T, p pki) token {
	t.Helper()
	dir := t.TempDir()
	tk := token{conf: filepath.Join(dir, "softhsm2.conf"), pinFile: filepath.Join(dir, "pin")}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "tokens"), 0o700))
	require.NoError(t, os.WriteFile(tk.conf, []byte("directories.tokendir = "+filepath.Join(dir, "tokens")+
		"\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n"), 0o600))
	require.NoError(t, os.WriteFile(tk.pinFile, []byte(tokenPIN+"\n"), 0o600))
	env := []string{"SOFTHSM2_CONF=" + tk.conf}
	run(t, dir, env, "softhsm2-util", "--init-token", "--free", "--label", tokenLabel, "--pin", tokenPIN, "--so-pin", "19283746")
	for i, name := range []string{"release", "lookalike"} {
		id := fmt.Sprintf("%02x", i+1)
		run(t, dir, env, "softhsm2-util", "--import", p.path(name+".p8"), "--token", tokenLabel,
			"--label", name, "--id", id, "--pin", tokenPIN)
		run(t, dir, env, "pkcs11-tool", "--module", softhsmModule, "--token-label", tokenLabel, "--login",
			"--pin", tokenPIN, "--write-object", p.path(name+".der"), "--type", "cert", "--id", id, "--label", name)
	}
	return tk
}

// signEnv is the release's signing configuration for the token's object.
func (tk token) signEnv(object string) []string {
	return []string{
		"SOFTHSM2_CONF=" + tk.conf,
		"SIGN_PKCS11_MODULE=" + softhsmModule,
		"SIGN_PKCS11_KEY=pkcs11:token=" + tokenLabel + ";object=" + object + ";type=private",
		"SIGN_PKCS11_CERT=pkcs11:token=" + tokenLabel + ";object=" + object + ";type=cert",
		"SIGN_PIN_FILE=" + tk.pinFile,
	}
}

// tsa is an RFC 3161 timestamp authority: openssl ts -reply behind an
// HTTP server on loopback, answering what osslsigncode posts (except on
// the path /broken, where it fails); requests counts its replies.
type tsa struct {
	*httptest.Server
	requests atomic.Int32
}

func newTSA(t *testing.T, p pki, name string) *tsa {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "tsa.cnf")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "serial"), []byte("01\n"), 0o600))
	require.NoError(t, os.WriteFile(conf, []byte(strings.Join([]string{
		"[tsa]", "default_tsa = tsa_config", "[tsa_config]",
		"serial = " + filepath.Join(dir, "serial"),
		"crypto_device = builtin",
		"signer_cert = " + p.path(name+".pem"),
		"certs = " + p.path(name+".pem"),
		"signer_key = " + p.path(name+".key"),
		"signer_digest = sha256",
		"default_policy = 1.3.6.1.4.1.4146.2.3",
		"other_policies = 1.3.6.1.4.1.4146.2.2",
		"digests = sha256, sha384, sha512",
		"accuracy = secs:1",
		"ordering = yes",
		"tsa_name = yes",
		"ess_cert_id_chain = no",
		"ess_cert_id_alg = sha256", ""}, "\n")), 0o600))
	s := &tsa{}
	var mu sync.Mutex // one reply at a time: the serial file
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/broken" {
			http.Error(w, "out of order", http.StatusInternalServerError)
			return
		}
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/timestamp-query" {
			http.Error(w, "want a POST of application/timestamp-query", http.StatusBadRequest)
			return
		}
		query, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		n := s.requests.Add(1)
		q, rep := filepath.Join(dir, fmt.Sprintf("%d.tsq", n)), filepath.Join(dir, fmt.Sprintf("%d.tsr", n))
		if err := os.WriteFile(q, query, 0o600); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if out, err := exec.Command("openssl", "ts", "-reply", "-config", conf, "-queryfile", q, "-out", rep).CombinedOutput(); err != nil {
			http.Error(w, string(out), http.StatusInternalServerError)
			return
		}
		reply, err := os.ReadFile(rep)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/timestamp-reply")
		_, _ = w.Write(reply)
	}))
	t.Cleanup(s.Close)
	return s
}

// resources is what agent.exe's VERSIONINFO and manifest say.
type resources struct {
	FileVersion, ProductVersion, Flags string            // the fixed part
	Strings                            map[string]string // the string table
	ExecutionLevel                     string
	SupportedOS                        []string
	ActiveCodePage                     string
}

// readResources reads the resources of the Windows executable at path.
func readResources(t *testing.T, path string) resources {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rs, err := winres.LoadFromEXE(f)
	require.NoError(t, err)
	var vdata, mdata [][]byte
	rs.WalkType(winres.RT_VERSION, func(_ winres.Identifier, _ uint16, data []byte) bool {
		vdata = append(vdata, data)
		return true
	})
	rs.WalkType(winres.RT_MANIFEST, func(_ winres.Identifier, _ uint16, data []byte) bool {
		mdata = append(mdata, data)
		return true
	})
	require.Len(t, vdata, 1, "one VERSIONINFO")
	require.Len(t, mdata, 1, "one manifest")

	vi, err := version.FromBytes(vdata[0])
	require.NoError(t, err)
	raw, err := json.Marshal(vi)
	require.NoError(t, err)
	var j struct {
		Fixed struct {
			FileVersion    string `json:"file_version"`
			ProductVersion string `json:"product_version"`
			Flags          string `json:"flags"`
		} `json:"fixed"`
		Info map[string]map[string]string `json:"info"`
	}
	require.NoError(t, json.Unmarshal(raw, &j))
	require.Len(t, j.Info, 1, "one language")
	res := resources{FileVersion: j.Fixed.FileVersion, ProductVersion: j.Fixed.ProductVersion, Flags: j.Fixed.Flags}
	for _, table := range j.Info {
		res.Strings = table
	}

	var m struct {
		Trust struct {
			Level struct {
				Level string `xml:"level,attr"`
			} `xml:"security>requestedPrivileges>requestedExecutionLevel"`
		} `xml:"trustInfo"`
		OS []struct {
			ID string `xml:"Id,attr"`
		} `xml:"compatibility>application>supportedOS"`
		CodePage string `xml:"application>windowsSettings>activeCodePage"`
	}
	require.NoError(t, xml.Unmarshal(mdata[0], &m), "the manifest:\n%s", mdata[0])
	res.ExecutionLevel = m.Trust.Level.Level
	for _, s := range m.OS {
		res.SupportedOS = append(res.SupportedOS, s.ID)
	}
	res.ActiveCodePage = m.CodePage
	return res
}

// checkResources checks the resources of agent.exe built as version v
// (scripts/version.sh's form) with FileVersion fileVersion and the fixed
// flags flags.
func checkResources(t *testing.T, exe, v, fileVersion, flags string) {
	t.Helper()
	res := readResources(t, exe)
	assert.Equal(t, fileVersion, res.FileVersion)
	assert.Equal(t, fileVersion, res.ProductVersion)
	assert.Equal(t, flags, res.Flags)
	for key, want := range map[string]string{
		"ProductName":      "TradeBridge Agent",
		"FileDescription":  "TradeBridge Agent",
		"CompanyName":      "TradeBridge",
		"OriginalFilename": "agent.exe",
		"ProductVersion":   v,
		"FileVersion":      v,
	} {
		assert.Equal(t, want, res.Strings[key], key)
	}
	if strings.Contains(flags, "PrivateBuild") {
		assert.Contains(t, res.Strings["PrivateBuild"], "test certificate")
	} else {
		assert.NotContains(t, res.Strings, "PrivateBuild")
	}
	assert.Equal(t, "asInvoker", res.ExecutionLevel)
	assert.Equal(t, []string{win10}, res.SupportedOS)
	assert.Equal(t, "UTF-8", res.ActiveCodePage)
}

// verifyReport is osslsigncode verify's report on path against the
// roots of p (the signature's and the timestamp's).
func verifyReport(t *testing.T, p pki, path string) string {
	t.Helper()
	out, err := exec.Command("osslsigncode", "verify", "-CAfile", p.path("ca.pem"), "-TSA-CAfile", p.path("ca.pem"), "-in", path).CombinedOutput()
	require.NoError(t, err, "%s:\n%s", path, out)
	return string(out)
}

// The release: built from a tagged copy of the tree, both files signed by
// the token's key and timestamped by the local TSA, what the release
// refuses once it has signed; then builds that must fail after the agent's
// build (the Go build cache makes them quick).
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the agent for Windows and the MSI")
	}
	hsmTools(t)

	p := newPKI(t)
	tk := newToken(t, p)
	goodTSA := newTSA(t, p, "tsa")
	rogueTSA := newTSA(t, p, "rogue-tsa")
	tree := copyTree(t)
	git(t, tree, "tag", "-a", releaseTag, "-m", "release "+releaseTag)
	addon := filepath.Join(t.TempDir(), "addon.zip")
	require.NoError(t, os.WriteFile(addon, []byte("PK\x05\x06"+strings.Repeat("\x00", 18)), 0o600))
	release := func(object string, extra ...string) []string {
		env := append(tk.signEnv(object), "RELEASE=1", "ADDON_ZIP="+addon,
			"SIGN_TIMESTAMP_URL="+goodTSA.URL+"/", "SIGN_CA_FILE="+p.path("ca.pem"))
		return append(env, extra...)
	}

	out := filepath.Join(t.TempDir(), "out")
	log, err := buildIn(t, tree, out, release("release")...)
	require.NoError(t, err, "build-installer.sh:\n%s", log)
	assert.NotContains(t, log, tokenPIN)
	assert.Contains(t, log, "RELEASE 7.4.0")
	assert.Equal(t, int32(2), goodTSA.requests.Load(), "one timestamp for agent.exe, one for the MSI")
	msi := filepath.Join(out, "TradeBridgeAgent-7.4.0-x64.msi")
	exe := filepath.Join(out, "agent.exe")
	require.FileExists(t, msi)
	assert.NoDirExists(t, filepath.Join(out, "test-signing"))
	assert.Empty(t, git(t, tree, "status", "--porcelain"), "the build leaves the tree as it was")

	t.Run("signed by the token, timestamped", func(t *testing.T) {
		for _, f := range []string{exe, msi} {
			report := verifyReport(t, p, f)
			assert.Contains(t, report, "Signature verification: ok", f)
			assert.Contains(t, report, "Subject: /CN=TradeBridge Release Signing (HSM test)/O=TradeBridge", f)
			assert.Contains(t, report, "Timestamp time:", f)
			assert.Contains(t, report, "Timestamp Server Signature verification: ok", f)
			assert.Contains(t, report, "Subject: /CN=TradeBridge Test TSA", f)
		}
	})

	t.Run("version from the tag", func(t *testing.T) {
		props := exportTable(t, msi, "Property")
		assert.Equal(t, "7.4.0", props.row(t, "Property", "ProductVersion")["Value"])
		product, err := uuid5(upgradeCode, "7.4.0")
		require.NoError(t, err)
		assert.Equal(t, "{"+product+"}", props.row(t, "Property", "ProductCode")["Value"])
		v, err := peStringVar(exe, "tradebridge/agent.Version")
		require.NoError(t, err)
		assert.Equal(t, "7.4.0", v)
		checkResources(t, exe, "7.4.0", "7.4.0.0", "")
	})

	for _, tc := range []struct {
		name   string
		env    []string
		want   string
		before int32 // TSA requests expected from the good TSA
	}{
		{"the test certificate on the token", release("lookalike"), "refuses the test certificate", 1},
		{"a timestamp from an untrusted TSA", release("release", "SIGN_TIMESTAMP_URL="+rogueTSA.URL+"/"),
			"the timestamp of agent.exe does not verify", 0},
		{"a TSA that fails", release("release", "SIGN_TIMESTAMP_URL="+goodTSA.URL+"/broken"), "signing agent.exe failed", 0},
		{"a wrong PIN", release("release", "SIGN_PIN_FILE="+p.path("ca.ext")), "signing agent.exe failed", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			was := goodTSA.requests.Load()
			out := filepath.Join(t.TempDir(), "out")
			log, err := buildIn(t, tree, out, tc.env...)
			require.Error(t, err, log)
			assert.Contains(t, log, tc.want)
			assert.NotContains(t, log, tokenPIN)
			assert.NoFileExists(t, filepath.Join(out, "agent.exe"))
			assert.NoFileExists(t, filepath.Join(out, "TradeBridgeAgent-7.4.0-x64.msi"))
			assert.Equal(t, was+tc.before, goodTSA.requests.Load())
		})
	}
	assert.NotZero(t, rogueTSA.requests.Load())

	// The key on the token, its certificate (and the chain to add to the
	// signatures) in PEM files.
	t.Run("the certificate in a file", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out")
		log, err := buildIn(t, tree, out, release("release", "SIGN_PKCS11_CERT=",
			"SIGN_CERT="+p.path("release.pem"), "SIGN_CHAIN_FILE="+p.path("ca.pem"))...)
		require.NoError(t, err, "build-installer.sh:\n%s", log)
		for _, f := range []string{filepath.Join(out, "agent.exe"), filepath.Join(out, "TradeBridgeAgent-7.4.0-x64.msi")} {
			report := verifyReport(t, p, f)
			assert.Contains(t, report, "Signature verification: ok", f)
			assert.Contains(t, report, "Subject: /CN=TradeBridge Release Signing (HSM test)/O=TradeBridge", f)
			assert.Contains(t, report, "Timestamp Server Signature verification: ok", f)
		}
	})
}

// What the release refuses before building anything: the test certificate,
// a key in a file, no timestamp, no roots to verify with, a version that is
// not a clean checkout of a release tag, a PIN where it would be seen.
func TestReleaseRefuses(t *testing.T) {
	tools(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	t.Parallel()
	files := t.TempDir()
	secret := filepath.Join(files, "secret-canary")
	require.NoError(t, os.WriteFile(secret, []byte("not read"), 0o600))
	pkcs11 := []string{"SIGN_PKCS11_MODULE=" + secret, "SIGN_PKCS11_KEY=pkcs11:token=t;object=k;type=private",
		"SIGN_PKCS11_CERT=pkcs11:token=t;object=k;type=cert", "SIGN_PIN_FILE=" + secret}
	ready := append([]string{"RELEASE=1", "SIGN_TIMESTAMP_URL=http://127.0.0.1:9/", "SIGN_CA_FILE=" + secret}, pkcs11...)
	with := func(env []string, extra ...string) []string { return append(append([]string(nil), env...), extra...) }
	without := func(env []string, name string) []string {
		var kept []string
		for _, kv := range env {
			if !strings.HasPrefix(kv, name+"=") {
				kept = append(kept, kv)
			}
		}
		return kept
	}
	const tagged = "v1.4.2"
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) // after the commit of the scripts
		env   []string
		want  string
	}{
		{"the test certificate", nil, []string{"RELEASE=1", "SIGN_TIMESTAMP_URL=http://127.0.0.1:9/"}, "RELEASE=1 refuses the test certificate"},
		{"a key in a PKCS#12 file", nil, []string{"RELEASE=1", "SIGN_PKCS12=" + secret, "SIGN_PASS_FILE=" + secret}, "signs only with a PKCS#11 key"},
		{"a key in a PEM file", nil, []string{"RELEASE=1", "SIGN_CERT=" + secret, "SIGN_KEY=" + secret}, "signs only with a PKCS#11 key"},
		{"no timestamp", nil, without(ready, "SIGN_TIMESTAMP_URL"), "RELEASE=1 needs SIGN_TIMESTAMP_URL"},
		{"no roots", nil, without(ready, "SIGN_CA_FILE"), "RELEASE=1 needs SIGN_CA_FILE"},
		{"RELEASE not 1", nil, with(without(ready, "RELEASE"), "RELEASE=yes"), "RELEASE must be 1 or unset"},
		{"no tag", func(t *testing.T, dir string) {}, ready, "needs HEAD tagged vMAJOR.MINOR.PATCH (scripts/version.sh prints 0.0.0-dev+g"},
		{"a commit after the tag", func(t *testing.T, dir string) {
			git(t, dir, "tag", tagged)
			commitAll(t, dir, "after the tag")
		}, ready, "needs HEAD tagged vMAJOR.MINOR.PATCH (scripts/version.sh prints 1.4.2-dev.1+g"},
		{"a pre-release tag", func(t *testing.T, dir string) {
			git(t, dir, "tag", "v1.5.0-rc1")
		}, ready, "needs HEAD tagged vMAJOR.MINOR.PATCH (scripts/version.sh prints 0.0.0-dev+g"},
		{"a changed file", func(t *testing.T, dir string) {
			git(t, dir, "tag", tagged)
			require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("/build/\n"), 0o644))
		}, ready, "refuses a tree with uncommitted or untracked changes"},
		{"an untracked file", func(t *testing.T, dir string) {
			git(t, dir, "tag", tagged)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "extra.go"), []byte("package x\n"), 0o644))
		}, ready, "refuses a tree with uncommitted or untracked changes"},
		{"VERSION other than the tag", func(t *testing.T, dir string) {
			git(t, dir, "tag", tagged)
		}, with(ready, "VERSION=1.4.3"), "takes the version from HEAD's tag v1.4.2; VERSION differs"},
		{"a PIN in the key's URI", func(t *testing.T, dir string) {
			git(t, dir, "tag", tagged)
		}, with(without(ready, "SIGN_PKCS11_KEY"), "SIGN_PKCS11_KEY=pkcs11:token=t;object=k?pin-value=secret-canary"), "SIGN_PKCS11_KEY must not carry the PIN"},
		{"a key that is not a URI", func(t *testing.T, dir string) {
			git(t, dir, "tag", tagged)
		}, with(without(ready, "SIGN_PKCS11_KEY"), "SIGN_PKCS11_KEY=secret-canary"), "SIGN_PKCS11_KEY must be a pkcs11: URI"},
		{"no PIN file", func(t *testing.T, dir string) {
			git(t, dir, "tag", tagged)
		}, without(ready, "SIGN_PIN_FILE"), "SIGN_PKCS11_KEY needs SIGN_PIN_FILE"},
		{"two certificates", func(t *testing.T, dir string) {
			git(t, dir, "tag", tagged)
		}, with(ready, "SIGN_CERT="+secret), "set either SIGN_PKCS11_CERT or SIGN_CERT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := scriptsRepo(t)
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			out := filepath.Join(t.TempDir(), "out")
			log, err := buildIn(t, dir, out, tc.env...)
			require.Error(t, err, log)
			assert.Contains(t, log, tc.want)
			assert.NotContains(t, log, "canary")
			assert.NotContains(t, log, "agent.exe 1.4", "refused before building")
			assert.NoFileExists(t, filepath.Join(out, "agent.exe"))
		})
	}
}

// scripts/version.sh on the histories a build meets.
func TestVersionScript(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	t.Parallel()
	hash := `\+g[0-9a-f]{12}`
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string // a regular expression
	}{
		{"no tag", func(t *testing.T, dir string) {}, `^0\.0\.0-dev` + hash + `$`},
		{"at a tag", func(t *testing.T, dir string) { git(t, dir, "tag", "v0.17.3") }, `^0\.17\.3$`},
		{"at an annotated tag", func(t *testing.T, dir string) { git(t, dir, "tag", "-a", "v0.17.3", "-m", "r") }, `^0\.17\.3$`},
		{"commits after the tag", func(t *testing.T, dir string) {
			git(t, dir, "tag", "v0.17.3")
			commitAll(t, dir, "one")
			commitAll(t, dir, "two")
		}, `^0\.17\.3-dev\.2` + hash + `$`},
		{"the newest of two tags", func(t *testing.T, dir string) {
			git(t, dir, "tag", "v0.17.3")
			commitAll(t, dir, "one")
			git(t, dir, "tag", "v0.18.0")
			commitAll(t, dir, "two")
		}, `^0\.18\.0-dev\.1` + hash + `$`},
		{"a tag with a suffix is not a release", func(t *testing.T, dir string) {
			git(t, dir, "tag", "v0.17.3")
			commitAll(t, dir, "one")
			git(t, dir, "tag", "v0.18.0-rc1")
		}, `^0\.17\.3-dev\.1` + hash + `$`},
		{"other tags", func(t *testing.T, dir string) {
			git(t, dir, "tag", "release-1")
			git(t, dir, "tag", "v2")
		}, `^0\.0\.0-dev` + hash + `$`},
		{"uncommitted changes at the tag", func(t *testing.T, dir string) {
			git(t, dir, "tag", "v0.17.3")
			require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("x\n"), 0o644))
		}, `^0\.17\.3-dev\.0` + hash + `\.dirty$`},
		{"an untracked file after the tag", func(t *testing.T, dir string) {
			git(t, dir, "tag", "v0.17.3")
			commitAll(t, dir, "one")
			require.NoError(t, os.WriteFile(filepath.Join(dir, "new.txt"), []byte("x\n"), 0o644))
		}, `^0\.17\.3-dev\.1` + hash + `\.dirty$`},
		{"an ignored file", func(t *testing.T, dir string) {
			git(t, dir, "tag", "v0.17.3")
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "build"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "build", "x"), []byte("x\n"), 0o644))
		}, `^0\.17\.3$`},
		{"a shallow clone", func(t *testing.T, dir string) {
			git(t, dir, "tag", "v0.17.3")
			commitAll(t, dir, "one")
			clone := filepath.Join(t.TempDir(), "clone")
			git(t, "", "clone", "-q", "--depth", "1", "--no-tags", "file://"+dir, clone)
			require.NoError(t, os.RemoveAll(dir))
			require.NoError(t, os.Rename(clone, dir))
		}, `^0\.0\.0-dev` + hash + `$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := scriptsRepo(t)
			tc.setup(t, dir)
			got := strings.TrimSpace(run(t, dir, gitEnv, "bash", "scripts/version.sh"))
			assert.Regexp(t, regexp.MustCompile(tc.want), got)
			head := git(t, dir, "rev-parse", "--short=12", "HEAD")
			if strings.Contains(got, "+g") {
				assert.Contains(t, got, "+g"+head, "names the commit")
			}
		})
	}
	t.Run("not a git checkout", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "scripts"), 0o755))
		b, err := os.ReadFile(filepath.Join("..", "scripts", "version.sh"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "scripts", "version.sh"), b, 0o755))
		got := run(t, dir, []string{"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir)}, "bash", "scripts/version.sh")
		assert.Equal(t, "0.0.0-dev\n", got)
	})
}
