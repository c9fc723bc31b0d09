#!/usr/bin/env bash
# Baselines side by side: the hot and seed scenarios at 16, 64 and 1,024
# concurrency against Redis (Lua script, appendfsync always), PostgreSQL
# (conditional UPDATE + unique INSERTs, synchronous_commit=on), seckilld over
# HTTP (--fsync always), the engine in process, a null HTTP server (the
# HTTP ceiling) and a null server that logs each request to seckill's wal
# and answers once it is fsynced (the durable ceiling); batch cells
# (seckilld's batch reserve, Redis pipelined, the engine's batch, 64 per
# request); and wrk (Debian's, an independent load generator) against
# seckilld and the null HTTP server. --targets seckilld,seckilld-rs adds a
# replica set of two seckillds (primary + sync standby, etcd on loopback)
# beside one seckilld: what synchronous replication costs, from one run.
# Every server is private to the run, on 127.0.0.1, in a temp directory.
#
# Usage: bench/compare.sh [flags of "seckill-bench compare"]
#   e.g. bench/compare.sh --concurrency 64 --hot-duration 10s --seed-requests 1000000
#        bench/compare.sh --targets redis,postgres --json /tmp/compare.json   (one object per cell)
#        bench/compare.sh --rounds 3     (each cell its median of three rounds)
# Missing servers are installed with apt-get when running as root (and the
# script says so); a target that still cannot run is skipped with a reason.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_updated=0
install_package() {
	local package=$1
	if [ "$(id -u)" != 0 ]; then
		echo "compare.sh: $package is missing and this is not root: install it, or its target is skipped"
		return 0
	fi
	echo "compare.sh: $package is missing: installing the Debian package with apt-get"
	if [ $apt_updated = 0 ]; then
		apt-get update -qq || true
		apt_updated=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$package" >/dev/null ||
		echo "compare.sh: apt-get install $package failed: its target will be skipped"
}

command -v redis-server >/dev/null 2>&1 || install_package redis-server
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || install_package postgresql
command -v wrk >/dev/null 2>&1 || install_package wrk

mkdir -p bin
go build -ldflags "${LDFLAGS:-}" -o bin/seckill-bench ./cmd/seckill-bench

seckilld=bin/seckilld
build_log=$(mktemp)
if go build -ldflags "${LDFLAGS:-}" -o bin/seckilld ./cmd/seckilld >"$build_log" 2>&1; then
	echo "compare.sh: built bin/seckilld"
else
	echo "compare.sh: cmd/seckilld does not build (yet): the seckilld target is skipped"
	sed 's/^/    /' "$build_log" | head -5
	seckilld=/nonexistent/seckilld # never bench a stale binary
fi
rm -f "$build_log"

# Client and servers keep up to ~2,000 sockets open at 1,024 concurrency.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

exec bin/seckill-bench compare --seckilld "$seckilld" "$@"
