#!/usr/bin/env bash
# Builds the agent's signed Windows installer on Linux (make installer):
#
#   OUT/agent.exe                          the agent for Windows x64, signed
#   OUT/TradeBridgeAgent-VERSION-x64.msi   the installer (installer/wix/agent.wxs), signed
#
# Environment (all optional):
#   OUT        output folder (default build/installer at the repository's root)
#   VERSION    MAJOR.MINOR.PATCH (default scripts/version.sh); stamped into the
#              binary (-X tradebridge/agent.Version), the MSI's ProductVersion
#              and the MSI's file name
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
#   SIGN_CERT + SIGN_KEY   PEM certificate (chain) and private key
#   SIGN_PKCS12            a .p12/.pfx file instead
#   SIGN_PASS_FILE         a file holding the key's or the PKCS#12's password
#   SIGN_TIMESTAMP_URL     an RFC 3161 timestamp server (default: no timestamp)
#   SIGN_CA_FILE           PEM roots to verify the signatures with (real
#                          certificate only; default: not verified)
#
# Needs: go, wixl and msibuild/msiinfo (Debian: wixl, msitools), osslsigncode,
# openssl, python3 (the add-on archive). Keys and passwords are never printed.
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
VERSION="${VERSION:-$(./scripts/version.sh)}"
wxs="$root/installer/wix/agent.wxs"

die() { echo "build-installer: $*" >&2; exit 1; }
for tool in "$GO" wixl msibuild msiinfo osslsigncode openssl; do
  command -v "$tool" >/dev/null || die "$tool not found (Debian: apt-get install wixl msitools osslsigncode openssl; scripts/test-deps.sh)"
done

# Windows Installer compares MAJOR.MINOR.BUILD, at most 255.255.65535.
[[ "$VERSION" =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] || die "VERSION must be MAJOR.MINOR.PATCH (digits only)"
(( 10#${BASH_REMATCH[1]} <= 255 && 10#${BASH_REMATCH[2]} <= 255 && 10#${BASH_REMATCH[3]} <= 65535 )) ||
  die "VERSION is out of the MSI's range (at most 255.255.65535)"

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
msi_name="TradeBridgeAgent-$VERSION-x64.msi"
work="$(mktemp -d "$OUT/.work.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# --- signing configuration ------------------------------------------------
sign_args=()
verify_ca=""
readable() { [ -r "$2" ] || die "$1 names a file that is missing or unreadable"; }
if [ -n "${SIGN_PKCS12:-}" ]; then
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
fi
if [ -n "${SIGN_TIMESTAMP_URL:-}" ]; then
  sign_args+=(-ts "$SIGN_TIMESTAMP_URL")
fi
[ -z "$verify_ca" ] || readable SIGN_CA_FILE "$verify_ca"

# sign IN OUTFILE: Authenticode (SHA-256) with the configured certificate,
# then, when roots are known, a verification against them.
sign() {
  local in=$1 out=$2
  rm -f "$out"
  if ! osslsigncode sign "${sign_args[@]}" -h sha256 -n "TradeBridge Agent" \
      -in "$in" -out "$out" >"$work/sign.log" 2>&1; then
    cat "$work/sign.log" >&2
    die "signing ${out##*/} failed"
  fi
  if [ -n "$verify_ca" ] && ! osslsigncode verify -CAfile "$verify_ca" -in "$out" >"$work/verify.log" 2>&1; then
    cat "$work/verify.log" >&2
    die "the signature of ${out##*/} does not verify"
  fi
}

# --- the agent ------------------------------------------------------------
# -w drops DWARF; the symbol table stays, so the stamped version can be read
# back from the file (installer/installer_test.go). -trimpath keeps the build
# machine's paths out of the binary.
echo "build-installer: agent.exe $VERSION (windows/amd64)"
GOOS=windows GOARCH=amd64 CGO_ENABLED=0 "$GO" build -trimpath \
  -ldflags "-w -X tradebridge/agent.Version=$VERSION" -o "$work/agent.exe" ./cmd/agent
sign "$work/agent.exe" "$work/agent-signed.exe"

# --- the add-on archive ---------------------------------------------------
if [ -z "${ADDON_ZIP:-}" ]; then
  ./installer/ninjatrader/build.sh export >/dev/null
  ADDON_ZIP="$root/build/TradeBridgeNinjaTraderAddOn.zip"
fi
[ -s "$ADDON_ZIP" ] || die "ADDON_ZIP names a missing or empty file"
cp "$ADDON_ZIP" "$work/addon.zip"

# --- the MSI --------------------------------------------------------------
# ProductCode: a UUIDv5 of the version in the namespace of the UpgradeCode,
# so rebuilding one version gives the same product (RFC 9562, section 5.5).
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
(cd "$work" && wixl -a x64 -D "Version=$VERSION" -D "ProductCode=$product_code" \
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

sign "$work/unsigned.msi" "$work/signed.msi"

mv -f "$work/agent-signed.exe" "$OUT/agent.exe"
mv -f "$work/signed.msi" "$OUT/$msi_name"
echo "build-installer: signed with $signer${SIGN_TIMESTAMP_URL:+, timestamped}"
(cd "$OUT" && sha256sum agent.exe "$msi_name" | sed 's/^/build-installer: sha256 /')
echo "build-installer: wrote ${OUT#"$root"/}/$msi_name (ProductCode {$product_code})"
