#!/usr/bin/env bash
# make bench-cells: the seed sale (10,000 units, 1,000,000 attempts by
# default) through seckill-router against 1, 2 and 3 cells of one cluster
# (cells/cluster.sh runs this script with ROUTER, ETCD, CELL_IDS and
# ADMIN_TOKEN set), one after the other in the same run, then once more
# on 3 cells with no initial grants, so that every unit goes out through
# top-ups. For each run: the tool's throughput, sell-out time and reserve
# p99, its ratio to the 1-cell run, and the etcd requests the run cost
# (Txn, Range, Put, read from etcd's /metrics before and after) per
# 10,000 units sold. Extra arguments go to seckill-bench (e.g. --requests
# 200000). Results: $CELLS_OUT (default ./bench-cells), one JSON per run.
set -euo pipefail
: "${ROUTER:?run through cells/cluster.sh}" "${ETCD:?}" "${CELL_IDS:?}" "${ADMIN_TOKEN:?}"
BIN=${BIN:-bin}
out=${CELLS_OUT:-bench-cells}
mkdir -p "$out"
IFS=, read -r -a cells <<<"$CELL_IDS"

# etcd's client requests by gRPC method, summed over answer codes.
etcd_requests() {
	curl -fsS "http://$ETCD/metrics" | awk -v m="$1" '
		$1 ~ /^grpc_server_handled_total\{/ && $1 ~ ("grpc_method=\"" m "\"") && $1 ~ /etcdserverpb.KV/ { n += $2 }
		END { printf "%d", n }'
}

printf '%-22s %10s %8s %12s %10s %12s %12s %12s\n' run "req/s" ratio "sold-out s" "p99 ms" "Txn/10k" "Range/10k" "Put/10k"
base=""
run() { # run NAME CELLS [seckill-bench flags]
	local name=$1 list=$2; shift 2
	local txn0 range0 put0 txn1 range1 put1 status=0
	txn0=$(etcd_requests Txn) range0=$(etcd_requests Range) put0=$(etcd_requests Put)
	"$BIN/seckill-bench" --target "$ROUTER" --etcd "$ETCD" --cells "$list" --admin-token "$ADMIN_TOKEN" \
		--scenario seed --stock 10000 --requests 1000000 --progress off --json "$out/$name.json" "$@" >"$out/$name.txt" 2>&1 || status=$?
	txn1=$(etcd_requests Txn) range1=$(etcd_requests Range) put1=$(etcd_requests Put)
	local rps sold p99 accepted
	rps=$(awk '/^load / { for (i = 1; i <= NF; i++) if ($i == "req/s") { gsub(",", "", $(i-1)); print $(i-1) } }' "$out/$name.txt")
	sold=$(awk '/^sold out/ { print $(NF-1) }' "$out/$name.txt")
	p99=$(awk '$1 == "all" { print $5; exit }' "$out/$name.txt")
	accepted=$(awk '/^outcomes/ { gsub(",", "", $3); print $3 }' "$out/$name.txt")
	[ -n "$base" ] || base=$rps
	awk -v n="$name" -v r="$rps" -v b="$base" -v s="$sold" -v p="$p99" -v a="$accepted" \
		-v t=$((txn1 - txn0)) -v g=$((range1 - range0)) -v u=$((put1 - put0)) 'BEGIN {
		per = a > 0 ? 10000 / a : 0
		printf "%-22s %10.0f %8.2f %12s %10s %12.0f %12.0f %12.0f\n", n, r, r / b, s, p, t * per, g * per, u * per }'
	if [ $status != 0 ]; then
		echo "  $name: seckill-bench exited $status; its output: $out/$name.txt" >&2
		tail -5 "$out/$name.txt" >&2
	fi
	return $status
}

status=0
run 1-cell "${cells[0]}" "$@" || status=1
run 2-cells "${cells[0]},${cells[1]}" "$@" || status=1
run 3-cells "${cells[0]},${cells[1]},${cells[2]}" "$@" || status=1
run 3-cells-no-initial "${cells[0]},${cells[1]},${cells[2]}" --cell-initial 0 "$@" || status=1
echo "uptime: $(uptime)"
echo "(Range includes the cells' and the router's background reads: the SKUs published, every second; each agent's return request, every second)"
exit $status
