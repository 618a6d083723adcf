#!/usr/bin/env bash
# Builds the agent's signed Windows installer on Linux (make installer, make release):
#
#   OUT/agent.exe                          the agent for Windows x64, signed
#   OUT/TradeBridgeAgent-NAME-x64.msi      the installer (installer/wix/agent.wxs), signed
#
# NAME is VERSION ('+' written '-'), with "-TEST" added when the test
# certificate signs: TradeBridgeAgent-0.17.3-x64.msi is a release,
# TradeBridgeAgent-0.17.4-dev.2-g0123456789ab-TEST-x64.msi is not.
#
# Environment (all optional):
#   OUT        output folder (default build/installer at the repository's root)
#   VERSION    the build's version (default scripts/version.sh): MAJOR.MINOR.PATCH
#              for a release, MAJOR.MINOR.PATCH-dev… otherwise; stamped into the
#              binary (-X tradebridge/agent.Version) and its VERSIONINFO resource;
#              its MAJOR.MINOR.PATCH is the MSI's ProductVersion
#   RELEASE    1: a release (make release), refused unless HEAD carries the tag
#              vMAJOR.MINOR.PATCH, the tree is clean, a PKCS#11 key signs and
#              both signatures carry a timestamp that verifies
#   GO         the go command (default go)
#   ADDON_ZIP  the NinjaTrader add-on archive to pack (default: built now by
#              installer/ninjatrader/build.sh export, build/TradeBridgeNinjaTraderAddOn.zip)
#   DEFAULT_RELAY_URL  the relay a first installation uses when msiexec is not
#              given RELAY_URL (a double-click install); default none
#   HELP_URL, ABOUT_URL  the help and "more information" links of Apps & features
#              (default DEFAULT_RELAY_URL's dashboard, /app, and DEFAULT_RELAY_URL; none
#              without it)
#   SUPPORT_CONTACT  who to contact, in Apps & features (default "TradeBridge support";
#              empty: none)
#   Signing (installer/README.md, "Signing"): by default a test certificate,
#   generated once in OUT/test-signing/ and reused. A real certificate:
#   SIGN_PKCS11_MODULE     the PKCS#11 library of the token or HSM holding the key
#   SIGN_PKCS11_KEY        the key, a pkcs11: URI (no PIN in it)
#   SIGN_PKCS11_CERT       the certificate, a pkcs11: URI (or SIGN_CERT, a PEM file)
#   SIGN_PIN_FILE          a file holding the token's PIN
#   SIGN_PKCS11_ENGINE     the OpenSSL engine (default: the engine "pkcs11",
#                          Debian's libengine-pkcs11-openssl)
#   SIGN_CHAIN_FILE        PEM intermediate certificates to add to the signatures
#   or, keys in files (not for releases):
#   SIGN_CERT + SIGN_KEY   PEM certificate (chain) and private key
#   SIGN_PKCS12            a .p12/.pfx file instead
#   SIGN_PASS_FILE         a file holding the key's or the PKCS#12's password
#   and for any of them:
#   SIGN_TIMESTAMP_URL     RFC 3161 timestamp servers, separated by spaces, tried
#                          in turn (default: no timestamp; a release needs one)
#   SIGN_CA_FILE           PEM roots to verify the signatures with (real
#                          certificate only; default: not verified; a release
#                          needs it)
#   SIGN_TSA_CA_FILE       PEM roots to verify the timestamps with (default SIGN_CA_FILE)
#
# Needs: go, wixl and msibuild/msiinfo (Debian: wixl, msitools), osslsigncode,
# openssl, flock, python3 (the add-on archive); for a PKCS#11 key, the token's
# library and the OpenSSL pkcs11 engine. Keys, PINs and passwords are never
# printed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# A relative OUT is taken from the caller's folder; the default is under the root.
case "${OUT:-}" in
  "") OUT="$root/build/installer" ;;
  /*) ;;
  *) OUT="$PWD/$OUT" ;;
esac
cd "$root"

GO="${GO:-go}"
wxs="$root/installer/wix/agent.wxs"

die() { echo "build-installer: $*" >&2; exit 1; }
for tool in "$GO" wixl msibuild msiinfo osslsigncode openssl flock; do
  command -v "$tool" >/dev/null || die "$tool not found (Debian: apt-get install wixl msitools osslsigncode openssl; scripts/test-deps.sh)"
done

# --- release policy -------------------------------------------------------
# Checked before anything is built. A release is signed by a PKCS#11 key
# (never the test certificate or a key file), timestamped, verified against
# known roots, and built from a clean tree whose HEAD carries the release
# tag; its version comes from that tag.
case "${RELEASE:-}" in
  ""|0) release="" ;;
  1) release=1 ;;
  *) die "RELEASE must be 1 or unset" ;;
esac
if [ -n "$release" ]; then
  if [ -z "${SIGN_PKCS11_MODULE:-}${SIGN_PKCS11_KEY:-}" ]; then
    [ -n "${SIGN_PKCS12:-}${SIGN_CERT:-}${SIGN_KEY:-}" ] ||
      die "RELEASE=1 refuses the test certificate: configure the release key (SIGN_PKCS11_MODULE, SIGN_PKCS11_KEY, SIGN_PKCS11_CERT, SIGN_PIN_FILE; installer/README.md, \"Release\")"
    die "RELEASE=1 signs only with a PKCS#11 key (SIGN_PKCS11_MODULE, SIGN_PKCS11_KEY), not a key file (SIGN_PKCS12, SIGN_KEY)"
  fi
  [ -n "${SIGN_TIMESTAMP_URL:-}" ] ||
    die "RELEASE=1 needs SIGN_TIMESTAMP_URL (an RFC 3161 timestamp server): without a timestamp the signatures expire with the certificate"
  [ -n "${SIGN_CA_FILE:-}" ] ||
    die "RELEASE=1 needs SIGN_CA_FILE (the roots the signatures and their timestamps must verify against)"
  git rev-parse --is-inside-work-tree >/dev/null 2>&1 || die "RELEASE=1 needs a git checkout (the version comes from its tag)"
  [ -z "$(git status --porcelain | head -n 1)" ] ||
    die "RELEASE=1 refuses a tree with uncommitted or untracked changes (git status)"
  tagged=$(./scripts/version.sh)
  [[ "$tagged" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] && git tag --points-at HEAD | grep -xF "v$tagged" >/dev/null ||
    die "RELEASE=1 needs HEAD tagged vMAJOR.MINOR.PATCH (scripts/version.sh prints $tagged)"
  [ -z "${VERSION:-}" ] || [ "$VERSION" = "$tagged" ] ||
    die "RELEASE=1 takes the version from HEAD's tag v$tagged; VERSION differs"
  VERSION=$tagged
fi

# --- version --------------------------------------------------------------
VERSION="${VERSION:-$(./scripts/version.sh)}"
# Windows Installer compares MAJOR.MINOR.BUILD, at most 255.255.65535. A dev
# build (scripts/version.sh) installs as the release it follows, its
# MAJOR.MINOR.PATCH; its ProductCode differs (below).
[[ "$VERSION" =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)(-dev(\.([0-9]+))?(\+g[0-9a-f]+(\.dirty)?)?)?$ ]] ||
  die "VERSION must be MAJOR.MINOR.PATCH, or MAJOR.MINOR.PATCH-dev… as scripts/version.sh prints it"
(( 10#${BASH_REMATCH[1]} <= 255 && 10#${BASH_REMATCH[2]} <= 255 && 10#${BASH_REMATCH[3]} <= 65535 )) ||
  die "VERSION is out of the MSI's range (at most 255.255.65535)"
msi_version="$((10#${BASH_REMATCH[1]})).$((10#${BASH_REMATCH[2]})).$((10#${BASH_REMATCH[3]}))"
dev_commits="${BASH_REMATCH[6]:-0}"
(( 10#$dev_commits <= 65535 )) || dev_commits=65535
dev="${BASH_REMATCH[4]}"

# The installer's links and default relay: plain http(s) URLs, nothing that
# XML or Windows Installer's formatted strings would read ("&", quotes,
# brackets). The contact is plain text.
url_re='^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/%+=,:@-]*)?$'
DEFAULT_RELAY_URL="${DEFAULT_RELAY_URL:-}"
DEFAULT_RELAY_URL="${DEFAULT_RELAY_URL%/}"
if [ -n "$DEFAULT_RELAY_URL" ]; then
  HELP_URL="${HELP_URL-$DEFAULT_RELAY_URL/app}"
  ABOUT_URL="${ABOUT_URL-$DEFAULT_RELAY_URL}"
fi
HELP_URL="${HELP_URL:-}"
ABOUT_URL="${ABOUT_URL:-}"
for var in DEFAULT_RELAY_URL HELP_URL ABOUT_URL; do
  [ -z "${!var}" ] || [[ "${!var}" =~ $url_re ]] ||
    die "$var must be an http:// or https:// URL of letters, digits and . _ ~ / % + = , : @ - only"
done
SUPPORT_CONTACT="${SUPPORT_CONTACT-TradeBridge support}"
[[ "$SUPPORT_CONTACT" =~ ^[A-Za-z0-9\ .,:@/+_()-]{0,200}$ ]] ||
  die "SUPPORT_CONTACT must be at most 200 letters, digits, spaces or . , : @ / + _ ( ) -"

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
work="$(mktemp -d "$OUT/.work.XXXXXX")"
syso=""
trap 'rm -rf "$work"; [ -z "$syso" ] || rm -f "$syso"' EXIT

# --- signing configuration ------------------------------------------------
sign_args=()
verify_ca=""
test_signed=""
readable() { [ -r "$2" ] || die "$1 names a file that is missing or unreadable"; }
# pkcs11_uri NAME VALUE: a pkcs11: URI (RFC 7512) without a PIN in it.
pkcs11_uri() {
  [[ "$2" == pkcs11:* ]] || die "$1 must be a pkcs11: URI (RFC 7512)"
  [[ "$2" != *pin-value=* && "$2" != *pin-source=* ]] || die "$1 must not carry the PIN; put it in SIGN_PIN_FILE"
}
if [ -n "${SIGN_PKCS11_MODULE:-}${SIGN_PKCS11_KEY:-}${SIGN_PKCS11_CERT:-}" ]; then
  # A key that never leaves its token or HSM (osslsigncode's PKCS#11 options,
  # through the OpenSSL engine "pkcs11" of libp11). The PIN is read from
  # SIGN_PIN_FILE (-readpass), never given on a command line.
  [ -z "${SIGN_PKCS12:-}${SIGN_KEY:-}" ] || die "set either the PKCS#11 key (SIGN_PKCS11_KEY) or SIGN_PKCS12 or SIGN_KEY, not both"
  [ -n "${SIGN_PKCS11_MODULE:-}" ] || die "SIGN_PKCS11_KEY needs SIGN_PKCS11_MODULE (the token's PKCS#11 library)"
  readable SIGN_PKCS11_MODULE "$SIGN_PKCS11_MODULE"
  [ -n "${SIGN_PKCS11_KEY:-}" ] || die "SIGN_PKCS11_MODULE needs SIGN_PKCS11_KEY (a pkcs11: URI of the private key)"
  pkcs11_uri SIGN_PKCS11_KEY "$SIGN_PKCS11_KEY"
  sign_args=(-pkcs11module "$SIGN_PKCS11_MODULE" -key "$SIGN_PKCS11_KEY")
  if [ -n "${SIGN_PKCS11_CERT:-}" ]; then
    [ -z "${SIGN_CERT:-}" ] || die "set either SIGN_PKCS11_CERT or SIGN_CERT, not both"
    pkcs11_uri SIGN_PKCS11_CERT "$SIGN_PKCS11_CERT"
    sign_args+=(-pkcs11cert "$SIGN_PKCS11_CERT")
    signer="the PKCS#11 key of SIGN_PKCS11_KEY"
  else
    [ -n "${SIGN_CERT:-}" ] || die "SIGN_PKCS11_KEY needs its certificate: SIGN_PKCS11_CERT (a pkcs11: URI) or SIGN_CERT (a PEM file)"
    readable SIGN_CERT "$SIGN_CERT"
    sign_args+=(-certs "$SIGN_CERT")
    signer="the PKCS#11 key of SIGN_PKCS11_KEY"
  fi
  [ -n "${SIGN_PIN_FILE:-}" ] || die "SIGN_PKCS11_KEY needs SIGN_PIN_FILE (a file holding the token's PIN)"
  readable SIGN_PIN_FILE "$SIGN_PIN_FILE"
  sign_args+=(-login -readpass "$SIGN_PIN_FILE")
  if [ -n "${SIGN_PKCS11_ENGINE:-}" ]; then
    readable SIGN_PKCS11_ENGINE "$SIGN_PKCS11_ENGINE"
    sign_args+=(-pkcs11engine "$SIGN_PKCS11_ENGINE")
  else
    openssl engine -t pkcs11 >/dev/null 2>&1 ||
      die "the OpenSSL engine pkcs11 is missing (Debian: apt-get install libengine-pkcs11-openssl), or set SIGN_PKCS11_ENGINE"
  fi
  verify_ca="${SIGN_CA_FILE:-}"
elif [ -n "${SIGN_PKCS12:-}" ]; then
  [ -z "${SIGN_CERT:-}${SIGN_KEY:-}" ] || die "set either SIGN_PKCS12 or SIGN_CERT and SIGN_KEY, not both"
  readable SIGN_PKCS12 "$SIGN_PKCS12"
  [ -n "${SIGN_PASS_FILE:-}" ] || die "SIGN_PKCS12 needs SIGN_PASS_FILE (a file holding its password)"
  readable SIGN_PASS_FILE "$SIGN_PASS_FILE"
  sign_args=(-pkcs12 "$SIGN_PKCS12" -readpass "$SIGN_PASS_FILE")
  signer="the certificate of SIGN_PKCS12"
  verify_ca="${SIGN_CA_FILE:-}"
elif [ -n "${SIGN_CERT:-}${SIGN_KEY:-}" ]; then
  [ -n "${SIGN_CERT:-}" ] && [ -n "${SIGN_KEY:-}" ] || die "SIGN_CERT and SIGN_KEY go together"
  readable SIGN_CERT "$SIGN_CERT"
  readable SIGN_KEY "$SIGN_KEY"
  sign_args=(-certs "$SIGN_CERT" -key "$SIGN_KEY")
  if [ -n "${SIGN_PASS_FILE:-}" ]; then
    readable SIGN_PASS_FILE "$SIGN_PASS_FILE"
    sign_args+=(-readpass "$SIGN_PASS_FILE")
  fi
  signer="the certificate of SIGN_CERT"
  verify_ca="${SIGN_CA_FILE:-}"
else
  # The test certificate: a private CA (its key deleted once it has issued
  # the signing certificate) and an RSA 3072 code-signing certificate.
  # Windows trusts the signature only where ca.cer was imported.
  ts="$OUT/test-signing"
  if ! { [ -s "$ts/signing.pem" ] && [ -s "$ts/signing.key" ] && [ -s "$ts/ca.pem" ] &&
         openssl x509 -in "$ts/signing.pem" -noout -checkend 86400 >/dev/null 2>&1; }; then
    echo "build-installer: generating a test code-signing certificate in ${ts#"$root"/}/"
    rm -rf "$ts"
    mkdir -p "$ts"
    chmod 700 "$ts"
    cat >"$ts/openssl.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = TradeBridge Test Code Signing CA
O = TradeBridge (test certificate, not trusted)
[ca_ext]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[signing_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = codeSigning
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
    (
      umask 077
      openssl req -x509 -new -newkey rsa:3072 -nodes -sha256 -days 3650 \
        -config "$ts/openssl.cnf" -extensions ca_ext \
        -keyout "$ts/ca.key" -out "$ts/ca.pem"
      openssl req -new -newkey rsa:3072 -nodes -sha256 \
        -subj "/CN=TradeBridge Test Code Signing/O=TradeBridge (test certificate, not trusted)" \
        -keyout "$ts/signing.key" -out "$ts/signing.csr"
      openssl x509 -req -sha256 -days 1825 -in "$ts/signing.csr" \
        -CA "$ts/ca.pem" -CAkey "$ts/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
        -extfile "$ts/openssl.cnf" -extensions signing_ext -out "$ts/signing.pem"
      openssl x509 -in "$ts/ca.pem" -outform der -out "$ts/ca.cer"
    ) >"$work/openssl.log" 2>&1 || { cat "$work/openssl.log" >&2; die "generating the test certificate failed"; }
    rm -f "$ts/ca.key" "$ts/signing.csr" "$ts/openssl.cnf"
  fi
  sign_args=(-certs "$ts/signing.pem" -key "$ts/signing.key")
  signer="the TEST certificate (${ts#"$root"/}/signing.pem)"
  verify_ca="$ts/ca.pem"
  test_signed=1
fi
if [ -n "${SIGN_CHAIN_FILE:-}" ]; then
  readable SIGN_CHAIN_FILE "$SIGN_CHAIN_FILE"
  sign_args+=(-ac "$SIGN_CHAIN_FILE")
fi
timestamped=""
read -r -a urls <<<"${SIGN_TIMESTAMP_URL:-}"
for url in "${urls[@]}"; do
  sign_args+=(-ts "$url")
  timestamped=1
done
[ -z "$verify_ca" ] || readable SIGN_CA_FILE "$verify_ca"
tsa_ca="${SIGN_TSA_CA_FILE:-${SIGN_CA_FILE:-}}"
[ -z "$tsa_ca" ] || readable SIGN_TSA_CA_FILE "$tsa_ca"

# sign IN OUTFILE NAME: Authenticode (SHA-256) with the configured certificate,
# then the checks of the result: the signature verifies when roots are
# known; with SIGN_TIMESTAMP_URL, it carries a timestamp (a countersignature;
# osslsigncode verify exits 0 without one, or with one it cannot verify, so
# its report is read), which verifies when roots for it are known. A release
# has both roots, and its signer must be neither the test certificate nor
# self-signed.
sign() {
  local in=$1 out=$2 name=$3 subject issuer
  rm -f "$out"
  if ! osslsigncode sign "${sign_args[@]}" -h sha256 -n "TradeBridge Agent" \
      -in "$in" -out "$out" >"$work/sign.log" 2>&1; then
    cat "$work/sign.log" >&2
    die "signing $name failed"
  fi
  [ -n "$verify_ca$timestamped" ] || return 0
  local verify=(osslsigncode verify -in "$out")
  [ -z "$verify_ca" ] || verify+=(-CAfile "$verify_ca")
  [ -z "$tsa_ca" ] || verify+=(-TSA-CAfile "$tsa_ca")
  local rc=0
  "${verify[@]}" >"$work/verify.log" 2>&1 || rc=$?
  if [ -n "$verify_ca" ] && { [ "$rc" != 0 ] || ! grep -q '^Signature verification: ok' "$work/verify.log"; }; then
    cat "$work/verify.log" >&2
    die "the signature of $name does not verify"
  fi
  if [ -n "$timestamped" ]; then
    grep -q 'Timestamp time:' "$work/verify.log" ||
      die "$name carries no timestamp (countersignature) although SIGN_TIMESTAMP_URL is set"
    if [ -n "$tsa_ca" ] && ! grep -q '^Timestamp Server Signature verification: ok' "$work/verify.log"; then
      cat "$work/verify.log" >&2
      die "the timestamp of $name does not verify against SIGN_TSA_CA_FILE (or SIGN_CA_FILE)"
    fi
  fi
  if [ -n "$release" ]; then
    subject=$(awk '/^Signer.s certificate:/ { s = 1 } s && $1 == "Subject:" { sub(/^[ \t]*Subject: /, ""); print; exit }' "$work/verify.log")
    issuer=$(awk '/^Signer.s certificate:/ { s = 1 } s && $1 == "Issuer" { sub(/^[ \t]*Issuer : /, ""); print; exit }' "$work/verify.log")
    [ -n "$subject" ] && [ -n "$issuer" ] || die "cannot read the signer of $name"
    case "$subject$issuer" in
      *"TradeBridge Test Code Signing"*|*"test certificate"*)
        die "RELEASE=1 refuses the test certificate as the signer" ;;
    esac
    [ "$subject" != "$issuer" ] || die "RELEASE=1 refuses a self-signed certificate"
  fi
}

# The MSI's name says what the build is: the version as scripts/version.sh
# printed it ('+', awkward in URLs, written '-'), "-TEST" when the test
# certificate signed it.
msi_name="TradeBridgeAgent-${VERSION//+/-}${test_signed:+-TEST}-x64.msi"

# --- the agent ------------------------------------------------------------
# -w drops DWARF; the symbol table stays, so the stamped version can be read
# back from the file (installer/installer_test.go). -trimpath keeps the build
# machine's paths out of the binary.
#
# Its Windows resources (cmd/agent/winres/): the application manifest
# (agent.manifest) and a VERSIONINFO made for this build by go-winres (a
# tool of go.mod): FileVersion MAJOR.MINOR.PATCH.<commits after the tag>,
# the version string, Prerelease for a dev build, PrivateBuild when test
# signed. The linker takes them from cmd/agent/rsrc_windows_amd64.syso,
# which exists only while this build links (gitignored; the lock keeps two
# builds of one tree from linking each other's); make windows and go test
# never see it.
echo "build-installer: agent.exe $VERSION (windows/amd64)"
flags=""
[ -z "$dev" ] || flags="Prerelease"
[ -z "$test_signed" ] || flags="${flags:+$flags,}PrivateBuild"
private=""
[ -z "$test_signed" ] || private=',
      "PrivateBuild": "signed with the test certificate, not a release"'
mkdir -p "$work/winres"
cp cmd/agent/winres/agent.manifest "$work/winres/agent.manifest"
cat >"$work/winres/winres.json" <<EOF
{
  "RT_MANIFEST": { "#1": { "0409": "agent.manifest" } },
  "RT_VERSION": { "#1": { "0000": {
    "fixed": { "file_version": "$msi_version.$dev_commits", "product_version": "$msi_version.$dev_commits", "flags": "$flags" },
    "info": { "0409": {
      "CompanyName": "TradeBridge",
      "FileDescription": "TradeBridge Agent",
      "FileVersion": "$VERSION",
      "InternalName": "agent",
      "OriginalFilename": "agent.exe",
      "ProductName": "TradeBridge Agent",
      "ProductVersion": "$VERSION"$private
    } }
  } } }
}
EOF
"$GO" tool go-winres make --in "$work/winres/winres.json" --arch amd64 --out "$work/rsrc" >"$work/winres.log" 2>&1 ||
  { cat "$work/winres.log" >&2; die "go-winres failed"; }
mkdir -p "$root/build"
exec 9>"$root/build/.agent-resources.lock"
flock -w 900 9 || die "another build of this tree holds build/.agent-resources.lock"
syso="$root/cmd/agent/rsrc_windows_amd64.syso"
cp "$work/rsrc_windows_amd64.syso" "$syso"
GOOS=windows GOARCH=amd64 CGO_ENABLED=0 "$GO" build -trimpath \
  -ldflags "-w -X tradebridge/agent.Version=$VERSION" -o "$work/agent.exe" ./cmd/agent
rm -f "$syso"
syso=""
exec 9>&-
sign "$work/agent.exe" "$work/agent-signed.exe" agent.exe

# --- the add-on archive ---------------------------------------------------
if [ -z "${ADDON_ZIP:-}" ]; then
  ./installer/ninjatrader/build.sh export >/dev/null
  ADDON_ZIP="$root/build/TradeBridgeNinjaTraderAddOn.zip"
fi
[ -s "$ADDON_ZIP" ] || die "ADDON_ZIP names a missing or empty file"
cp "$ADDON_ZIP" "$work/addon.zip"

# --- the MSI --------------------------------------------------------------
# ProductCode: a UUIDv5 of the version string in the namespace of the
# UpgradeCode (RFC 9562, section 5.5), so rebuilding one version gives the
# same product, and dev builds of different commits (their version strings
# name the commit), which share the ProductVersion of the tag they follow,
# are different products (installer/README.md, "Versions").
upgrade_code=$(sed -n 's/.*UpgradeCode="\([0-9A-Fa-f-]\{36\}\)".*/\1/p' "$wxs")
[ -n "$upgrade_code" ] || die "no UpgradeCode in ${wxs#"$root"/}"
uuid5() {
  local ns_hex h variant
  ns_hex=$(printf %s "$1" | tr -d - | sed 's/../\\x&/g')
  h=$({ printf '%b' "$ns_hex"; printf %s "$2"; } | sha1sum | cut -c1-32)
  variant=$(printf %x $(( (0x${h:16:1} & 3) | 8 )))
  printf '%s-%s-5%s-%s%s-%s\n' "${h:0:8}" "${h:8:4}" "${h:13:3}" "$variant" "${h:17:3}" "${h:20:12}" | tr a-f A-F
}
product_code=$(uuid5 "$upgrade_code" "$VERSION")

# wixl reads sources relative to the current folder only. Its warnings fail
# the build: agent.wxs uses nothing wixl ignores (what wixl cannot write is
# patched below with msibuild), so any warning is a change to look at.
(cd "$work" && wixl -a x64 -D "Version=$msi_version" -D "ProductCode=$product_code" \
  -D AgentExe=agent-signed.exe -D AddOnZip=addon.zip -D "DefaultRelayUrl=$DEFAULT_RELAY_URL" \
  -D "HelpUrl=$HELP_URL" -D "AboutUrl=$ABOUT_URL" -D "Contact=$SUPPORT_CONTACT" \
  -o unsigned.msi "$wxs") >"$work/wixl.log" 2>&1 ||
  { cat "$work/wixl.log" >&2; die "wixl failed"; }
if [ -s "$work/wixl.log" ]; then
  cat "$work/wixl.log" >&2
  die "wixl warned (above); fix installer/wix/agent.wxs"
fi

# What wixl 0.101 cannot express:
#  - Property/@Secure: RELAY_URL, PAIRING_CODE, TOKEN, PLATFORM and KEEP_TOKEN
#    join SecureCustomProperties, so they reach the elevated part of the
#    installation in every case;
#  - CustomAction/@HideTarget: msidbCustomActionTypeHideTarget (0x2000) on
#    the actions given the token or the pairing code (ConfigSetToken, Pair,
#    PairWithRelay), so the logged installation script omits their command
#    lines;
#  - ServiceInstall/@Vital: msidbServiceInstallErrorControlVital (0x8000), so
#    a service that cannot be registered rolls the installation back.
secure_props="RELAY_URL;PAIRING_CODE;TOKEN;PLATFORM;KEEP_TOKEN"
hidden_actions=(ConfigSetToken Pair PairWithRelay)
cell() { # cell TABLE KEY COLUMN: one value of a table (msiinfo writes CRLF lines)
  msiinfo export "$work/unsigned.msi" "$1" | tr -d '\r' |
    awk -F'\t' -v k="$2" -v c="$3" 'NR > 3 && $1 == k { print $c }'
}
secure=$(cell Property SecureCustomProperties 2)
error_control=$(cell ServiceInstall AgentService 6)
[ -n "$secure" ] && [ -n "$error_control" ] || die "unexpected tables in the MSI wixl built"
patches=(
  -q "UPDATE \`Property\` SET \`Value\` = '$secure;$secure_props' WHERE \`Property\` = 'SecureCustomProperties'"
  -q "UPDATE \`ServiceInstall\` SET \`ErrorControl\` = $((error_control | 0x8000)) WHERE \`ServiceInstall\` = 'AgentService'"
)
declare -A hidden_type
for action in "${hidden_actions[@]}"; do
  type=$(cell CustomAction "$action" 2)
  [ -n "$type" ] || die "no custom action $action in the MSI wixl built"
  hidden_type[$action]=$((type | 0x2000))
  patches+=(-q "UPDATE \`CustomAction\` SET \`Type\` = ${hidden_type[$action]} WHERE \`Action\` = '$action'")
done
msibuild "$work/unsigned.msi" "${patches[@]}"
[ "$(cell Property SecureCustomProperties 2)" = "$secure;$secure_props" ] &&
  [ "$(cell ServiceInstall AgentService 6)" = $((error_control | 0x8000)) ] || die "patching the MSI failed"
for action in "${hidden_actions[@]}"; do
  [ "$(cell CustomAction "$action" 2)" = "${hidden_type[$action]}" ] || die "patching the MSI failed ($action)"
done

sign "$work/unsigned.msi" "$work/signed.msi" "$msi_name"

mv -f "$work/agent-signed.exe" "$OUT/agent.exe"
mv -f "$work/signed.msi" "$OUT/$msi_name"
echo "build-installer: signed with $signer${timestamped:+, timestamped}"
[ -z "$release" ] || echo "build-installer: RELEASE $VERSION (tag v$VERSION, signatures and timestamps verified)"
(cd "$OUT" && sha256sum agent.exe "$msi_name" | sed 's/^/build-installer: sha256 /')
echo "build-installer: wrote ${OUT#"$root"/}/$msi_name (ProductCode {$product_code})"
