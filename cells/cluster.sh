#!/usr/bin/env bash
# make cluster: one etcd (3.7.3, built from the etcd server module), three
# seckilld cells and a seckill-router on loopback, with a demo campaign whose
# hot SKU (demo/sku-1, sale_limit 10,000 = 3 x 3,000 + 1,000 central, top-ups
# of 50) is split across the cells. Ctrl-C stops everything; the data stays
# in $DATA (remove it to start over). SIGINT (Ctrl-C) or SIGTERM stops the
# router, then the cells, then etcd, each with SIGTERM and waited for, and
# exits 0.
#
# With arguments, the cluster runs them as a command once it is up (with
# ROUTER, ETCD, CELL_IDS and ADMIN_TOKEN in its environment), then stops
# and exits with the command's status: make bench-cells is
# "cells/cluster.sh bench/run-cells.sh". DEMO=0 publishes no demo campaign.
#
# REPLICAS=2 (make cluster) makes each cell a replica set of two seckillds,
# replicas a and b (docs/ha.md): one leads, the other copies its logs as
# its synchronous standby, and the router follows each cell's primary.
# REPLICAS=1 (the default, make bench-cells) runs one seckilld per cell.
set -euo pipefail
BIN=$(cd "${BIN:-bin}" && pwd)
DATA=${DATA:-./cluster-data}
TOKEN=${SECKILL_ADMIN_TOKEN:-cluster-admin-token}
ETCD=127.0.0.1:${ETCD_PORT:-23790}
ROUTER=127.0.0.1:${ROUTER_PORT:-8090}
CELLS=(c1 c2 c3)
BASE=${CELL_PORT_BASE:-8081}
PORTS=($BASE $((BASE + 1)) $((BASE + 2)))
REPLICAS=${REPLICAS:-1}
case $REPLICAS in 1 | 2) ;; *) echo "cells/cluster.sh: REPLICAS must be 1 or 2" >&2; exit 2 ;; esac

(cd internal/etcdtest/etcdserver && go build -o "$BIN/etcdserver" .)
mkdir -p "$DATA"
pids=() # in the order started: etcd, the cells, the router
# stop stops the processes in the reverse order, each with SIGTERM, and
# waits for each: nothing loses etcd or its cells while it stops.
stop() {
	local i
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill -TERM "${pids[$i]}" 2>/dev/null || true
		wait "${pids[$i]}" 2>/dev/null || true
	done
	pids=()
}
trap stop EXIT
# A stop asked by a signal is the normal end of make cluster: exit 0. With
# a command, the command was cut short: 128 + the signal's number.
on_signal() {
	trap '' INT TERM
	echo "cells/cluster.sh: $1: stopping the cluster" >&2
	if [ $# -gt 1 ] && [ "$2" -gt 0 ]; then exit $((128 + $3)); fi
	exit 0
}
args=$#
trap 'on_signal SIGINT $args 2' INT
trap 'on_signal SIGTERM $args 15' TERM
trap 'on_signal SIGHUP $args 1' HUP

# spawn starts its command in the background in a process group of its
# own (job control on for that one command). A Ctrl-C in the terminal
# signals the foreground process group: make and this script, not etcd,
# the cells or the router, which every binary here stops on SIGINT as on
# SIGTERM. In the script's group they would all stop at once, etcd among
# them, and a primary could not release its leader key or its agent reach
# the ledger while it stopped; stop above stops them in order instead.
spawn() {
	set -m
	"$@" &
	set +m
}

# await waits until file holds pattern, while process pid runs (up to 2
# minutes: a loaded machine starts slowly, a broken start must not hang).
await() {
	local file=$1 pattern=$2 pid=$3 what=$4
	for _ in $(seq 1200); do
		grep -q "$pattern" "$file" 2>/dev/null && return 0
		kill -0 "$pid" 2>/dev/null || { echo "cells/cluster.sh: $what exited at start; see ${file%.out}.log" >&2; exit 1; }
		sleep 0.1
	done
	echo "cells/cluster.sh: $what did not start within 2 minutes; see ${file%.out}.log" >&2
	exit 1
}

spawn "$BIN/etcdserver" --data-dir "$DATA/etcd" --client-addr "$ETCD" --peer-addr 127.0.0.1:$((${ETCD##*:} + 10)) >"$DATA/etcd.out" 2>"$DATA/etcd.log"
pids+=($!)
await "$DATA/etcd.out" READY $! etcd

if [ "${DEMO:-1}" != 0 ] && ! out=$("$BIN/seckillctl" cells publish --etcd "$ETCD" --campaign demo --sku sku-1 --sale-limit 10000 \
	--cells "$(IFS=,; echo "${CELLS[*]}")" --initial 3000 --chunk 50 2>&1); then
	grep -q "already published" <<<"$out" || { echo "$out" >&2; exit 1; }
	echo "demo/sku-1 already published in $DATA"
fi

routes=()
procs=() # the seckillds: "name pid"
for i in "${!CELLS[@]}"; do
	c=${CELLS[$i]}; addr=127.0.0.1:${PORTS[$i]}
	if [ "$REPLICAS" = 1 ]; then
		spawn "$BIN/seckilld" --addr "$addr" --data-dir "$DATA/$c" --cell "$c" --etcd "$ETCD" \
			--admin-token "$TOKEN" --log-level warn >"$DATA/$c.out" 2>"$DATA/$c.log"
		pids+=($!); procs+=("$c $!")
	else
		# Replica a on the cell's port, b 10 ports above; replication
		# 100 ports above each. The router follows the primary in etcd.
		for r in a b; do
			off=0; [ "$r" = b ] && off=10
			spawn "$BIN/seckilld" --addr "127.0.0.1:$((PORTS[i] + off))" --data-dir "$DATA/$c-$r" --cell "$c" --etcd "$ETCD" \
				--replica "$r" --replication-addr "127.0.0.1:$((PORTS[i] + off + 100))" \
				--admin-token "$TOKEN" --log-level warn >"$DATA/$c-$r.out" 2>"$DATA/$c-$r.log"
			pids+=($!); procs+=("$c-$r $!")
		done
	fi
	routes+=("$c=$addr")
done
spawn "$BIN/seckill-router" --addr "$ROUTER" --etcd "$ETCD" --cells "$(IFS=,; echo "${routes[*]}")" >"$DATA/router.out" 2>"$DATA/router.log"
pids+=($!)
await "$DATA/router.out" listening $! seckill-router
for p in "${procs[@]}"; do await "$DATA/${p% *}.out" listening "${p#* }" "seckilld ${p% *}"; done

if [ $# -gt 0 ]; then
	status=0
	ROUTER=http://$ROUTER ETCD=$ETCD CELL_IDS=$(IFS=,; echo "${CELLS[*]}") ADMIN_TOKEN=$TOKEN "$@" || status=$?
	exit $status
fi
cat <<MSG
router:  http://$ROUTER   (POST /v1/campaigns/demo/skus/sku-1/reservations, ...)
cells:   ${routes[*]}   admin token: $TOKEN
MSG
[ "$REPLICAS" = 2 ] && cat <<MSG
replicas: each cell is a replica set of a (its port) and b (10 ports above):
         $BIN/seckillctl ha status --etcd $ETCD --replica-set c1 --admin-token $TOKEN
MSG
cat <<MSG
etcd:    $ETCD
audit:   $BIN/seckillctl audit --etcd $ETCD --campaign demo --admin-token $TOKEN
bench:   $BIN/seckill-bench --target http://$ROUTER --etcd $ETCD --cells $(IFS=,; echo "${CELLS[*]}") --admin-token $TOKEN
logs:    $DATA/*.log        Ctrl-C (or SIGTERM) stops the cluster.
MSG
wait # until a signal (its trap exits), or every process ended
