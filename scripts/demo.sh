#!/usr/bin/env bash
# Starts a relay and an agent on the simulator, creates a demo user, and
# prints curl lines that work against them. Ctrl-C stops both.
#   DEMO_PORT     relay port (default 8080)
#   DEMO_OPERATOR_PORT  port of the relay's operator routes, GET /metrics (default DEMO_PORT + 1)
#   DEMO_SECONDS  stop by itself after this many seconds (default: run until Ctrl-C)
#   DEMO_SIM_START  start the simulator's clock at this RFC 3339 time, e.g. to trade
#                 while the real market is closed (agent run --sim-start)
#   DEMO_DIR      the demo's data and logs (default .demo), wiped at start
#   DEMO_BIN      where the relay and agent commands are (default bin, make build's)
# A demo that is running already (its pid in DEMO_DIR/demo.pid) or a port
# that answers already makes the script refuse to start, wiping nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

port=${DEMO_PORT:-8080}
operator_port=${DEMO_OPERATOR_PORT:-$((port + 1))}
base="http://127.0.0.1:${port}"
work=${DEMO_DIR:-.demo}
bin=${DEMO_BIN:-bin}

# Another demo of this folder: its pid file names a live process that is a
# demo (a pid the system gave another program since is not one).
if [ -f "$work/demo.pid" ]; then
  other=$(cat "$work/demo.pid" 2>/dev/null || true)
  if [ -n "$other" ] && kill -0 "$other" 2>/dev/null && ps -o args= -p "$other" 2>/dev/null | grep -q demo.sh; then
    echo "a demo is already running (pid $other, its data in $work/): stop it first (Ctrl-C in its terminal, or kill $other); nothing was changed" >&2
    exit 1
  fi
fi
for p in "$port" "$operator_port"; do
  if curl -s -o /dev/null --max-time 2 "http://127.0.0.1:${p}/" 2>/dev/null; then
    echo "something already answers on 127.0.0.1:${p} (another demo or relay?): stop it, or choose other ports with DEMO_PORT=8090 (and DEMO_OPERATOR_PORT); nothing was changed" >&2
    exit 1
  fi
done

rm -rf "$work"
mkdir -p "$work"
echo $$ >"$work/demo.pid"

# The demo user signs in to the dashboard with this email and password
# (a fixed password: the demo is local). The elite plan opens the
# Management API too.
demo_email=demo@example.com
demo_password=demo-password-1
creds=$(printf '%s\n' "$demo_password" | "$bin/relay" users add --data "$work/data" --name demo --plan elite \
  --email "$demo_email" --password-stdin)
field() { printf '%s' "$creds" | sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }
api_token=$(field apiToken)
agent_token=$(field agentToken)
user_id=$(field userId)
compat=$("$bin/relay" tokens issue --data "$work/data" --user "$user_id" --kind api --profile compatible)
compat_token=$(printf '%s' "$compat" | sed -n 's/.*"token":"\([^"]*\)".*/\1/p')

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -f "$work/demo.pid"
}
trap cleanup EXIT INT TERM

"$bin/relay" serve --listen "127.0.0.1:${port}" --operator-listen "127.0.0.1:${operator_port}" --data "$work/data" 2>"$work/relay.log" &
pids+=($!)
for _ in $(seq 100); do
  curl -fsS "$base/healthz" >/dev/null 2>&1 && break
  if ! kill -0 "${pids[0]}" 2>/dev/null; then
    echo "the relay did not start; its log:" >&2; cat "$work/relay.log" >&2; exit 1
  fi
  sleep 0.1
done

AGENT_TOKEN="$agent_token" AGENT_SIM_START="${DEMO_SIM_START:-}" "$bin/agent" run --relay "$base" --platform sim --data "$work/agent" 2>"$work/agent.log" &
pids+=($!)
for _ in $(seq 100); do
  status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $api_token" "$base/v1/api/accounts" || true)
  [ "$status" = 200 ] && break
  sleep 0.1
done
if [ "$status" != 200 ]; then
  echo "the agent did not connect; logs in $work/" >&2; cat "$work/agent.log" >&2; exit 1
fi

# The user's TradingView webhook (made on first read): its URL and key.
hook=$(curl -s -H "Authorization: Bearer $api_token" "$base/v1/api/webhook")
hook_url=$(printf '%s' "$hook" | sed -n 's/.*"url":"\([^"]*\)".*/\1/p')
hook_key=$(printf '%s' "$hook" | sed -n 's/.*"key":"\([^"]*\)".*/\1/p')

cat <<MSG

Relay on $base with an agent on the simulator (accounts Sim101, Sim102).
Logs: $work/relay.log, $work/agent.log

Dashboard: $base/app   (docs/dashboard.md)
  email:    $demo_email
  password: $demo_password
User id: $user_id   (elite plan)
  the commands that take it: relay tokens issue --kind support --grant $user_id,
  relay users access $user_id, relay broker link --user $user_id (each with --data $work/data)
API token (standard profile):   $api_token
API token (compatible profile): $compat_token   (see "Porting a bot" in the README)

Try:
  curl -s -H "Authorization: Bearer $api_token" $base/v1/api/accounts

  curl -s -H "Authorization: Bearer $api_token" -H 'Content-Type: application/json' \\
    -d '{"action":"Buy","instrument":"ES","orderType":"Market","quantity":1,"timeInForce":"Day"}' \\
    $base/v1/api/accounts/Sim101/orders/place

  curl -s -H "Authorization: Bearer $api_token" $base/v1/api/accounts/Sim101/positions

  curl -s -H "Authorization: Bearer $api_token" "$base/v1/api/activity?limit=5"    # what was done, newest first

  curl -s -H 'Content-Type: text/plain' --data-binary \\
    'key=$hook_key;command=PLACE;account=Sim101;instrument=ES;action=BUY;qty=1;order_type=MARKET;tif=DAY;take_profit=8 ticks;stop_loss=8 ticks;' \\
    $base$hook_url    # a TradingView alert to the user's webhook (docs/webhooks.md)

  curl -s http://127.0.0.1:${operator_port}/metrics    # the operator's listener, loopback only

AI assistants (docs/mcp.md): $base/mcp with the token as a bearer token, e.g.
  claude mcp add --transport http tradebridge $base/mcp --header "Authorization: Bearer $api_token"

Example call, GET /v1/api/accounts/Sim101:
MSG
curl -s -H "Authorization: Bearer $api_token" "$base/v1/api/accounts/Sim101"
echo
echo
if [ -n "${DEMO_SECONDS:-}" ]; then
  sleep "$DEMO_SECONDS"
else
  echo "Ctrl-C stops the relay and the agent."
  wait
fi
