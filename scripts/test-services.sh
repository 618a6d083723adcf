#!/usr/bin/env bash
# Prints `export` lines selecting the multi-node tests for each local service
# that answers (PostgreSQL 127.0.0.1:5432, Redis 127.0.0.1:6379, NATS
# 127.0.0.1:4222), so that `eval "$(scripts/test-services.sh)"` before
# `make test` runs them; a service that does not answer leaves its tests
# skipped. A variable already set is kept.
#
# With --start it first starts, in the background, each of these services
# that is installed on the machine but not running (as the machine's own
# service commands would), quietly: a service it cannot start stays off.
set -uo pipefail

# answers HOST PORT SEND EXPECT: whether a TCP peer at HOST:PORT answers
# SEND with a first line starting with EXPECT, within 2 seconds.
answers() {
	local host=$1 port=$2 send=$3 expect=$4 line=""
	exec 3<>"/dev/tcp/$host/$port" 2>/dev/null || return 1
	[ -n "$send" ] && printf '%b' "$send" >&3
	IFS= read -r -t 2 line <&3 || true
	exec 3<&- 3>&-
	[[ "$line" == "$expect"* ]]
}

# PostgreSQL answers an SSLRequest with one byte, 'S' or 'N'.
pg_answers() {
	local b=""
	exec 3<>/dev/tcp/127.0.0.1/5432 2>/dev/null || return 1
	printf '\x00\x00\x00\x08\x04\xd2\x16\x2f' >&3
	IFS= read -r -n 1 -t 2 b <&3 || true
	exec 3<&- 3>&-
	[[ "$b" == "S" || "$b" == "N" ]]
}

start_services() {
	if ! pg_answers && command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
		pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start >/dev/null 2>&1
	fi
	if ! answers 127.0.0.1 6379 'PING\r\n' '+PONG' && command -v redis-server >/dev/null; then
		redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null 2>&1
	fi
	if ! answers 127.0.0.1 4222 '' 'INFO' && [ -x /usr/sbin/nats-server ] && command -v start-stop-daemon >/dev/null; then
		mkdir -p /var/lib/nats-server 2>/dev/null
		start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
			-a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log >/dev/null 2>&1
	fi
	sleep 1
}

if [ "${1:-}" = "--start" ]; then
	start_services >&2
fi

if [ -z "${TB_TEST_POSTGRES:-}" ] && pg_answers; then
	echo "export TB_TEST_POSTGRES='postgres://postgres@127.0.0.1:5432/test?sslmode=disable'"
fi
if [ -z "${TB_TEST_REDIS:-}" ] && answers 127.0.0.1 6379 'PING\r\n' '+PONG'; then
	echo "export TB_TEST_REDIS='redis://127.0.0.1:6379/0'"
fi
if [ -z "${TB_TEST_NATS:-}" ] && answers 127.0.0.1 4222 '' 'INFO'; then
	echo "export TB_TEST_NATS='nats://127.0.0.1:4222'"
fi
exit 0
