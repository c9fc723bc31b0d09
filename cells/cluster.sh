#!/usr/bin/env bash
# make cluster: one etcd (3.7.3, built from the etcd server module), three
# seckilld cells and a seckill-router on loopback, with a demo campaign whose
# hot SKU (demo/sku-1, sale_limit 10,000 = 3 x 3,000 + 1,000 central, top-ups
# of 50) is split across the cells. Ctrl-C stops everything; the data stays
# in $DATA (remove it to start over).
#
# With arguments, the cluster runs them as a command once it is up (with
# ROUTER, ETCD, CELL_IDS and ADMIN_TOKEN in its environment), then stops
# and exits with the command's status: make bench-cells is
# "cells/cluster.sh bench/run-cells.sh". DEMO=0 publishes no demo campaign.
set -euo pipefail
BIN=$(cd "${BIN:-bin}" && pwd)
DATA=${DATA:-./cluster-data}
TOKEN=${SECKILL_ADMIN_TOKEN:-cluster-admin-token}
ETCD=127.0.0.1:${ETCD_PORT:-23790}
ROUTER=127.0.0.1:${ROUTER_PORT:-8090}
CELLS=(c1 c2 c3)
BASE=${CELL_PORT_BASE:-8081}
PORTS=($BASE $((BASE + 1)) $((BASE + 2)))

(cd internal/etcdtest/etcdserver && go build -o "$BIN/etcdserver" .)
mkdir -p "$DATA"
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

"$BIN/etcdserver" --data-dir "$DATA/etcd" --client-addr "$ETCD" --peer-addr 127.0.0.1:$((${ETCD##*:} + 10)) >"$DATA/etcd.out" 2>"$DATA/etcd.log" &
pids+=($!)
for _ in $(seq 100); do grep -q READY "$DATA/etcd.out" 2>/dev/null && break; sleep 0.1; done

if [ "${DEMO:-1}" != 0 ] && ! out=$("$BIN/seckillctl" cells publish --etcd "$ETCD" --campaign demo --sku sku-1 --sale-limit 10000 \
	--cells "$(IFS=,; echo "${CELLS[*]}")" --initial 3000 --chunk 50 2>&1); then
	grep -q "already published" <<<"$out" || { echo "$out" >&2; exit 1; }
	echo "demo/sku-1 already published in $DATA"
fi

routes=()
for i in "${!CELLS[@]}"; do
	c=${CELLS[$i]}; addr=127.0.0.1:${PORTS[$i]}
	"$BIN/seckilld" --addr "$addr" --data-dir "$DATA/$c" --cell "$c" --etcd "$ETCD" \
		--admin-token "$TOKEN" --log-level warn >"$DATA/$c.out" 2>"$DATA/$c.log" &
	pids+=($!)
	routes+=("$c=$addr")
done
"$BIN/seckill-router" --addr "$ROUTER" --etcd "$ETCD" --cells "$(IFS=,; echo "${routes[*]}")" >"$DATA/router.out" 2>"$DATA/router.log" &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$DATA/router.out" 2>/dev/null && break; sleep 0.1; done

if [ $# -gt 0 ]; then
	status=0
	ROUTER=http://$ROUTER ETCD=$ETCD CELL_IDS=$(IFS=,; echo "${CELLS[*]}") ADMIN_TOKEN=$TOKEN "$@" || status=$?
	exit $status
fi
cat <<MSG
router:  http://$ROUTER   (POST /v1/campaigns/demo/skus/sku-1/reservations, ...)
cells:   ${routes[*]}   admin token: $TOKEN
etcd:    $ETCD
audit:   $BIN/seckillctl audit --etcd $ETCD --campaign demo --admin-token $TOKEN
bench:   $BIN/seckill-bench --target http://$ROUTER --etcd $ETCD --cells $(IFS=,; echo "${CELLS[*]}") --admin-token $TOKEN
logs:    $DATA/*.log        Ctrl-C stops the cluster.
MSG
wait
