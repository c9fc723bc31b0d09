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
port=$(( 20000 + RANDOM % 20000 ))
token=bench-$RANDOM$RANDOM
log=$data/seckilld.log
./bin/seckilld --addr 127.0.0.1:$port --data-dir "$data/data" --admin-token "$token" --fsync always >"$log" 2>&1 &
# (the flags recorded in the result below, as --server-flags, are these)
server=$!
cleanup() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$data"; }
trap cleanup EXIT
ready=0
for _ in $(seq 1 100); do
	if curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then ready=1; break; fi
	sleep 0.1
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
