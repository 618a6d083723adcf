#!/usr/bin/env bash
# A walk through the trading API with curl: list the accounts, read a quote,
# place a market order with an Idempotency-Key, repeat it to see the replay,
# read the positions, close half, flatten, read what was done in the
# activity log, then trade as a TradingView alert does: a market entry with
# its take profit and stop loss sent to the user's webhook, its place in
# the alert history, and a FLATTEN alert.
#
#   RELAY_URL  the relay's base URL (default http://127.0.0.1:8080, make demo's)
#   API_TOKEN  an API token (tb_api_…; make demo prints one)
#   ACCOUNT    the account to trade (default Sim101)
#   INSTRUMENT the instrument (default ES, the front month)
#
# Needs curl; prints each step and the relay's answer. The token is sent in a
# header read from standard input, so it is not on curl's command line, and it
# is never printed.
set -euo pipefail

relay=${RELAY_URL:-http://127.0.0.1:8080}
relay=${relay%/}
account=${ACCOUNT:-Sim101}
instrument=${INSTRUMENT:-ES}
: "${API_TOKEN:?set API_TOKEN to an API token (make demo prints one)}"

api="$relay/v1/api"
# A key of our own for the order: a repeat with the same key places nothing
# and returns the first answer.
key="curl-example-$(date +%s)-$$"

step() { printf '\n== %s\n' "$*"; }

# call METHOD PATH [JSON BODY] [EXTRA HEADER]: prints the status and the body;
# fails the script on a status other than 200.
call() {
  local method=$1 path=$2 body=${3:-} extra=${4:-}
  local out status
  local args=(-sS -X "$method" -o "$bodyfile" -w '%{http_code}' -D "$headers" -H @-)
  [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data "$body")
  [ -n "$extra" ] && args+=(-H "$extra")
  printf '%s %s\n' "$method" "$path"
  [ -n "$body" ] && printf '   body %s\n' "$body"
  # The Authorization header comes from standard input (-H @-).
  status=$(printf 'Authorization: Bearer %s\n' "$API_TOKEN" | curl "${args[@]}" "$api$path") || {
    echo "curl could not reach $relay" >&2; exit 1; }
  out=$(cat "$bodyfile")
  printf '<- %s %s\n' "$status" "$out"
  last=$out
  if [ "$status" != 200 ]; then
    echo "step failed with HTTP $status" >&2
    exit 1
  fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
headers=$tmp/headers
bodyfile=$tmp/body

step "1. List the accounts"
call GET /accounts

step "2. Read a quote for $instrument"
call GET "/market/quote?instrument=$(printf '%s' "$instrument" | sed 's/ /%20/g')"

order='{"action":"Buy","instrument":"'"$instrument"'","orderType":"Market","quantity":2,"timeInForce":"Day"}'
step "3. Buy 2 $instrument at market, with Idempotency-Key $key"
call POST "/accounts/$account/orders/place" "$order" "Idempotency-Key: $key"
first_id=$(printf '%s' "$last" | sed -n 's/.*"orderId":"\([^"]*\)".*/\1/p' | head -n1)
echo "   orderId $first_id"

step "4. Send the same request again with the same key: nothing new is placed"
call POST "/accounts/$account/orders/place" "$order" "Idempotency-Key: $key"
again_id=$(printf '%s' "$last" | sed -n 's/.*"orderId":"\([^"]*\)".*/\1/p' | head -n1)
replayed=$(tr -d '\r' <"$headers" | sed -n 's/^[Ii]dempotent-[Rr]eplayed: *//p')
echo "   orderId $again_id, Idempotent-Replayed: ${replayed:-absent}"
if [ "$first_id" != "$again_id" ]; then
  echo "the repeat answered another order ($again_id, not $first_id)" >&2
  exit 1
fi
echo "   same order: the replay placed nothing"

step "5. Read the positions of $account"
call GET "/accounts/$account/positions"

step "6. Close half of the $instrument position (percent 0.5)"
call POST "/accounts/$account/positions/close" '{"instrument":"'"$instrument"'","percent":0.5}'
call GET "/accounts/$account/positions"

step "7. Flatten $account"
call POST "/accounts/$account/positions/flatten" '{}'
call GET "/accounts/$account/positions"

step "8. What was done on $account: the activity log, newest first"
# The log is written just after each answer: give it a moment.
sleep 1
call GET "/activity?account=$account&limit=5"

step "9. A TradingView alert: the user's webhook, then an entry with its exits"
# GET /v1/api/webhook answers the webhook's URL and key; the key is a
# secret like the token, so only the URL is printed.
printf 'GET /webhook\n'
status=$(printf 'Authorization: Bearer %s\n' "$API_TOKEN" | curl -sS -o "$bodyfile" -w '%{http_code}' -H @- "$api/webhook") || {
  echo "curl could not reach $relay" >&2; exit 1; }
hook=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$bodyfile")
hookkey=$(sed -n 's/.*"key":"\([^"]*\)".*/\1/p' "$bodyfile")
if [ "$status" != 200 ] || [ -z "$hook" ] || [ -z "$hookkey" ]; then
  echo "step failed with HTTP $status" >&2
  exit 1
fi
printf '<- %s url %s (and the key, not printed)\n' "$status" "$hook"
# alert TEXT: posts an alert's message as TradingView does (text/plain, no
# token: the key in the message is the credential); the key's pair comes
# first and is not printed.
alert() {
  local text=$1 status
  printf 'POST %s\n   body key=…;%s\n' "$hook" "$text"
  status=$(printf 'key=%s;%s' "$hookkey" "$text" | curl -sS -X POST -o "$bodyfile" -w '%{http_code}' \
    -H 'Content-Type: text/plain' --data-binary @- "$relay$hook") || {
    echo "curl could not reach $relay" >&2; exit 1; }
  last=$(cat "$bodyfile")
  printf '<- %s %s\n' "$status" "$last"
  if [ "$status" != 200 ]; then
    echo "step failed with HTTP $status" >&2
    exit 1
  fi
}
alert "command=PLACE;account=$account;instrument=$instrument;action=BUY;qty=1;order_type=MARKET;tif=DAY;take_profit=8 ticks;stop_loss=8 ticks;"
sleep 1 # the exits go out once the entry's fill is seen
call GET "/accounts/$account/orders?activeOnly=true"

step "10. The alert history, then a FLATTEN alert (the position and its exits)"
call GET "/webhook/alerts?limit=2"
alert "command=FLATTEN;account=$account;instrument=$instrument;"
call GET "/accounts/$account/positions"

printf '\ndone\n'
