#!/usr/bin/env bash
# Builds the TradeBridge NinjaScript add-on outside NinjaTrader.
#
#   build.sh addon    compile AddOn/*.cs with Mono's mcs against the stand-ins
#                     of NinjaTrader's types (standins/*.cs), then compile the
#                     self-test with the add-on's NinjaTrader-free files and
#                     run it under mono (the CI check; make addon)
#   build.sh export   build/TradeBridgeNinjaTraderAddOn.zip, the archive
#                     NinjaTrader imports with Tools > Import > NinjaScript
#                     Add-On...: Info.xml and AddOns/*.cs, never the stand-ins
#                     (make ninjatrader-export)
#
# Output goes under build/ at the repository's root (git-ignored).
# mcs and mono come from Debian's mono-mcs (make test-deps installs it).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$root/build/ninjatrader"

# The NinjaTrader version written in the archive's Info.xml: the oldest
# NinjaTrader 8.1 the add-on is meant for.
NT_EXPORT_VERSION="${NT_EXPORT_VERSION:-8.1.2.0}"

# The add-on's files that use nothing of NinjaTrader, which the self-test compiles.
pure=(TradeBridgeJson.cs TradeBridgeWire.cs TradeBridgeServer.cs TradeBridgeDiscovery.cs)

need() {
  if ! command -v "$1" >/dev/null; then
    echo "ninjatrader: $1 not found; install Debian's mono-mcs (make test-deps)" >&2
    exit 1
  fi
}

addon() {
  # Like the other tests that need Debian packages, the check skips where
  # make test-deps could not install them, except on CI.
  if ! command -v mcs >/dev/null || ! command -v mono >/dev/null; then
    if [ "${CI:-}" = true ]; then
      need mcs
      need mono
    fi
    echo "ninjatrader: mcs or mono not found; the add-on's compile and self-test skip (install Debian's mono-mcs)" >&2
    return 0
  fi
  mkdir -p "$out"
  # C# 6: NinjaTrader 8 compiles NinjaScript with a C# compiler of about that
  # age, so the add-on keeps to it.
  mcs -nologo -target:library -langversion:6 -warnaserror -r:System.Xml.dll \
    -out:"$out/TradeBridgeAddOn.dll" "$here"/AddOn/*.cs "$here"/standins/*.cs
  echo "ninjatrader: add-on compiles against the stand-ins"
  local files=()
  for f in "${pure[@]}"; do files+=("$here/AddOn/$f"); done
  mcs -nologo -target:exe -langversion:6 -warnaserror \
    -out:"$out/selftest.exe" "$here/selftest/TradeBridgeSelfTest.cs" "${files[@]}"
  need mono
  mono "$out/selftest.exe" "$root/docs/ninjatrader-protocol.md"
}

export_zip() {
  local stage="$out/export" zip="$root/build/TradeBridgeNinjaTraderAddOn.zip"
  rm -rf "$stage"
  mkdir -p "$stage/AddOns"
  cp "$here"/AddOn/*.cs "$stage/AddOns/"
  cat >"$stage/Info.xml" <<EOF
<?xml version="1.0" encoding="utf-8"?>
<NinjaTrader>
  <Export>
    <Version>$NT_EXPORT_VERSION</Version>
  </Export>
</NinjaTrader>
EOF
  rm -f "$zip"
  if command -v python3 >/dev/null; then
    # Entries in a fixed order with a fixed time, so the same sources give the same archive.
    python3 - "$stage" "$zip" <<'PY'
import os, sys, zipfile
stage, dest = sys.argv[1], sys.argv[2]
names = ["Info.xml"] + sorted("AddOns/" + f for f in os.listdir(os.path.join(stage, "AddOns")))
with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
    for n in names:
        info = zipfile.ZipInfo(n, date_time=(2020, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        with open(os.path.join(stage, n), "rb") as f:
            z.writestr(info, f.read())
PY
  else
    need zip
    (cd "$stage" && zip -q -X "$zip" Info.xml AddOns/*.cs)
  fi
  echo "ninjatrader: wrote ${zip#"$root"/}"
}

case "${1:-}" in
  addon) addon ;;
  export) export_zip ;;
  *)
    echo "usage: $0 addon|export" >&2
    exit 2
    ;;
esac
