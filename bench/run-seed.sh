#!/usr/bin/env bash
# make bench: the seed sale: 10,000 units,
# 1,000,000 buyers, through a freshly started seckilld (fsync on) with its
# own temp data dir on 127.0.0.1, then the audit. Exits non-zero when the
# audit fails (oversold, duplicate winners, invariant violations, or
# accepted != sale_limit).
#
# Usage: bench/run-seed.sh [extra seckill-bench flags], e.g. --report /tmp/seed.html
# (make bench BENCH_ARGS="..." passes them). The result is written as JSON to
# $SEED_JSON (default ./bench-seed.json); the script says where at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x bin/seckilld ] && [ -x bin/seckill-bench ] || make build >/dev/null

data=$(mktemp -d /tmp/seckill-seed-XXXXXX)
token=bench-$RANDOM$RANDOM
log=$data/seckilld.log
server=
cleanup() { [ -n "$server" ] && { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }; rm -rf "$data"; }
trap cleanup EXIT
# A port drawn at random may be taken meanwhile (another server, an
# outgoing connection's ephemeral port): seckilld then exits at once with
# "address already in use", and another port is drawn. Readiness is waited
# for as long as seckilld runs, up to a minute (a loaded machine).
ready=0
for _ in 1 2 3 4 5; do
	port=$(( 20000 + RANDOM % 12000 ))
	# In a session of its own: a Ctrl-C reaches every process of the
	# terminal's foreground group, and seckilld must outlive it so that
	# seckill-bench, interrupted, still reads its audit; cleanup stops it.
	# (the flags recorded in the result below, as --server-flags, are these)
	setsid ./bin/seckilld --addr 127.0.0.1:$port --data-dir "$data/data" --admin-token "$token" --fsync always >"$log" 2>&1 &
	server=$!
	for _ in $(seq 1 600); do
		if curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then ready=1; break; fi
		kill -0 "$server" 2>/dev/null || break
		sleep 0.1
	done
	[ $ready = 1 ] && break
	wait "$server" 2>/dev/null || true
	server=
	grep -q "address already in use" "$log" || break
done
if [ $ready = 0 ]; then
	echo "run-seed.sh: seckilld did not become ready; its log:" >&2
	cat "$log" >&2
	exit 3
fi
echo "seckilld pid $server on 127.0.0.1:$port, data in $data/data (fsync always)"
server_flags="--fsync always"
result=${SEED_JSON:-bench-seed.json}
status=0
./bin/seckill-bench --target "http://127.0.0.1:$port" --admin-token "$token" --scenario seed \
	--stock 10000 --requests 1000000 --json "$result" \
	--server-flags "$server_flags" --server-pid "$server" "$@" || status=$?
[ -f "$result" ] && echo "result: $result (JSON; seckill-bench report $result OUT.html renders it)"
exit $status
