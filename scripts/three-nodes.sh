#!/usr/bin/env bash
# Three relay nodes on one machine, sharing a PostgreSQL store, Redis
# budgets and a NATS bus (README, "Many relay nodes"), with an agent on the
# simulator connected to node a and a call made through nodes b and c.
# Needs bin/relay and bin/agent (make build). Ctrl-C stops everything.
#   STORE    PostgreSQL URL (default postgres://postgres@127.0.0.1:5432/test?sslmode=disable)
#   BUDGETS  Redis URL (default redis://127.0.0.1:6379/0)
#   BUS      NATS URL (default nats://127.0.0.1:4222)
#   PORT     node a's port; b and c take the next two, the operator
#            listeners the three after them (default 8181)
#   WORK     folder for the key file and the logs (default .three-nodes)
#   BIN      folder holding relay and agent (default bin)
#   THREE_NODES_SECONDS  stop by itself after this many seconds
set -euo pipefail
cd "$(dirname "$0")/.."

STORE=${STORE:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
BUDGETS=${BUDGETS:-redis://127.0.0.1:6379/0}
BUS=${BUS:-nats://127.0.0.1:4222}
port=${PORT:-8181}
work=${WORK:-.three-nodes}
bin=${BIN:-bin}
rm -rf "$work"
mkdir -p "$work"

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

creds=$("$bin/relay" users add --store "$STORE" --name "three-nodes" --plan elite)
field() { printf '%s' "$creds" | sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }
api_token=$(field apiToken)
agent_token=$(field agentToken)

i=0
for node in a b c; do
  "$bin/relay" serve --node "$node" --listen "127.0.0.1:$((port + i))" --operator-listen "127.0.0.1:$((port + 3 + i))" \
    --store "$STORE" --budgets "$BUDGETS" --bus "$BUS" --secret-keys "$work/secret.keys" 2>"$work/relay-$node.log" &
  pids+=($!)
  for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$((port + i))/readyz" >/dev/null 2>&1 && break
    if ! kill -0 "${pids[$i]}" 2>/dev/null; then
      echo "node $node did not start; its log:" >&2; cat "$work/relay-$node.log" >&2; exit 1
    fi
    sleep 0.1
  done
  i=$((i + 1))
done

AGENT_TOKEN="$agent_token" "$bin/agent" run --relay "http://127.0.0.1:$port" --platform sim --data "$work/agent" 2>"$work/agent.log" &
pids+=($!)
status=
for _ in $(seq 100); do
  status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $api_token" "http://127.0.0.1:$((port + 1))/v1/api/accounts" || true)
  [ "$status" = 200 ] && break
  sleep 0.1
done
if [ "$status" != 200 ]; then
  echo "the agent cannot be reached through node b; logs in $work/" >&2; cat "$work/agent.log" >&2; exit 1
fi

cat <<MSG
Nodes a, b and c on 127.0.0.1:$port, :$((port + 1)) and :$((port + 2)); the agent is connected to node a.
Logs: $work/relay-{a,b,c}.log, $work/agent.log
API token: $api_token

GET /v1/api/accounts/Sim101 through node b:
MSG
curl -s -H "Authorization: Bearer $api_token" "http://127.0.0.1:$((port + 1))/v1/api/accounts/Sim101"
echo
echo "GET /v1/api/accounts/Sim101 through node c:"
curl -s -H "Authorization: Bearer $api_token" "http://127.0.0.1:$((port + 2))/v1/api/accounts/Sim101"
echo
if [ -n "${THREE_NODES_SECONDS:-}" ]; then
  sleep "$THREE_NODES_SECONDS"
else
  echo "Ctrl-C stops the nodes and the agent."
  wait
fi
