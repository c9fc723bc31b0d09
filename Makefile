# seckill: make run (the engine on its demo campaign), make test (what CI runs).
GO       ?= go
BIN      := bin
PKGS     := ./...
ADDR     ?= 127.0.0.1:8080
DATA     ?= ./data

.PHONY: all build run test docs nats test-long bench bench-engine bench-audit bench-compare bench-instructions bench-passes bench-feed bench-orders soak fuzz sim sim-mutants clean cluster ha-demo bench-cells bench-failover

all: build

# --version reads the commit, its time and whether the tree had local
# changes from the build information; where the toolchain records none (a
# git worktree, GOFLAGS=-buildvcs=false) these stamp the same three, read
# as the toolchain reads them (vcs.modified: git status --porcelain is not
# empty), and the build time. Every binary a target builds gets them.
VERSION_PKG := github.com/seckill/seckill/internal/version
LDFLAGS     := -X $(VERSION_PKG).commit=$(shell git rev-parse HEAD 2>/dev/null) \
	-X $(VERSION_PKG).commitTime=$(shell TZ=UTC git show -s --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ HEAD 2>/dev/null) \
	-X $(VERSION_PKG).modified=$(shell git rev-parse HEAD >/dev/null 2>&1 && { test -z "$$(git status --porcelain 2>/dev/null)" && echo false || echo true; }) \
	-X $(VERSION_PKG).buildTime=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/seckilld ./cmd/seckilld
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/seckill-bench ./cmd/seckill-bench
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/seckillctl ./cmd/seckillctl
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/seckill-router ./cmd/seckill-router
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/seckill-relay ./cmd/seckill-relay
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/seckill-sim ./cmd/seckill-sim
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/seckill-orders ./cmd/seckill-orders

## run: build the binaries and start seckilld on $(ADDR) with data in $(DATA) (demo campaign when none is given).
run: build
	./$(BIN)/seckilld --addr $(ADDR) --data-dir $(DATA)

## nats: a NATS server with JetStream for seckill-relay, on $(NATS_ADDR):$(NATS_PORT) with its data in
## $(NATS_DATA): the nats-server module at the version go.mod pins, built and run by go run (Ctrl-C stops it).
NATS_ADDR ?= 127.0.0.1
NATS_PORT ?= 4222
NATS_DATA ?= $(DATA)/nats
nats:
	$(GO) run github.com/nats-io/nats-server/v2 --jetstream --addr $(NATS_ADDR) --port $(NATS_PORT) --store_dir $(NATS_DATA)

## cluster: one etcd, three cells of two replicas each (REPLICAS=1: one seckilld per cell) and a router on loopback;
## the demo hot SKU split across the cells (cells/cluster.sh).
cluster: build
	BIN=$(BIN) REPLICAS=$(or $(REPLICAS),2) exec ./cells/cluster.sh

## ha-demo: etcd, a replica set of two seckillds and seckill-router on loopback; a sale through the router, kill -9 of
## the primary under it, and what happened: who led, the failover time, every acknowledged reservation found, the
## killed replica back as standby, seckillctl verify of both data dirs (replica/hademo; HADEMO_DATA=DIR keeps the data).
ha-demo: build
	$(GO) run ./replica/hademo --bin $(BIN) $(if $(HADEMO_DATA),--data $(HADEMO_DATA))

## test: vet + race-enabled tests of every package, bounded for CI (fuzz targets run their seed corpus),
## and after each package's tests, in the same test binary, its benchmarks once at tiny sizes
## (SECKILL_BENCH_TINY=1, internal/benchsize): a change that breaks a benchmark fails here, not at the next
## measurement. The benchmark flags go to the test binaries (after -args), not to go test: given -bench, go test
## runs packages one at a time (tests and benchmarks that way took over 10 minutes on a quiet machine), and a
## run of its own for the benchmarks linked a second race-enabled binary of each package that has one. The
## tests run TEST_PACKAGES packages at once (go test -p; its default is the number of CPUs): most of their time
## is spent waiting on child processes (seckilld, etcd, PostgreSQL, leases running out), not computing.
## -ldflags=-w (no DWARF; stack traces and race reports read the binary's own tables) takes about a sixth off
## each link, of the test binaries and of the binaries the tests build with go build (they inherit GOFLAGS).
TEST_PACKAGES ?= 4
## The alerting rules (deploy/prometheus, a module of its own: the Prometheus packages its tests evaluate the
## rules with stay out of the engine's go.mod) are tested beside them, without -race (they run no seckill code):
## their first build is about a minute and a half of CPU, which the suite's waits on child processes absorb.
test:
	$(GO) vet $(PKGS)
	(cd deploy/prometheus && $(GO) vet ./... && GOFLAGS="$(GOFLAGS) -ldflags=-w" $(GO) test -count=1 -timeout 10m ./...) & alerts=$$!; \
	SECKILL_BENCH_TINY=1 GOFLAGS="$(GOFLAGS) -ldflags=-w" $(GO) test -race -count=1 -p $(TEST_PACKAGES) -timeout 12m $(PKGS) \
		-args -test.bench=. -test.benchtime=1x; status=$$?; \
	wait $$alerts || status=1; exit $$status

## docs: regenerate what the docs take from the code: docs/reference/ (every command's --help, the
## metrics) and the API client generated from httpapi/openapi.json; the docs tests check them in make test.
docs:
	SECKILL_UPDATE_DOCS=1 $(GO) test -count=1 -run 'TestDocs(Reference|CellMetricsReference|ReplicaMetricsReference|GeneratedClientIsCurrent)$$' ./docs/ ./cmd/seckilld/ ./internal/apiclient/

## test-long: the property tests with many more cases.
test-long:
	$(GO) test -count=1 -timeout 30m ./actors/sku/ -rapid.checks=20000

## bench: the seed sale (10,000 units, 1,000,000 buyers) through a freshly started seckilld, with the audit;
## the result in ./bench-seed.json (SEED_JSON), flags of seckill-bench in BENCH_ARGS, e.g.
## make bench BENCH_ARGS="--report bench-seed.html --concurrency 512".
BENCH_ARGS ?=
bench: build
	./bench/run-seed.sh $(BENCH_ARGS)

## bench-cells: the seed sale through seckill-router against 1, 2 and 3 cells of one make-cluster cluster
## (ratios to 1 cell, etcd requests per 10,000 units sold); flags of seckill-bench in BENCH_ARGS.
bench-cells: build
	d=$$(mktemp -d /tmp/seckill-cells-XXXXXX); BIN=$(BIN) DEMO=0 DATA=$$d ./cells/cluster.sh ./bench/run-cells.sh $(BENCH_ARGS); \
		s=$$?; rm -rf $$d; exit $$s

## bench-failover: a replica set of two (lease TTL 2 s) behind seckill-router, its primary killed with kill -9 20 times:
## the time from each kill to the first reserve accepted through the router, p50 and p99 (goal p99 <= 3 s).
bench-failover:
	$(GO) test -run XXX -bench Failover -benchtime 1x -timeout 30m ./cmd/seckillctl/

## bench-engine: the engine's own benchmarks (durable and no-sync reserve, replay, heap per reservation).
bench-engine:
	$(GO) test -run XXX -bench 'Reserve(Durable|NoSync)/callers=1$$' -benchtime 20000x -timeout 30m ./actors/
	$(GO) test -run XXX -bench 'Reserve(Durable|NoSync)/callers=(256|4096)' -benchtime 1000000x -cpu 2,3 -timeout 30m ./actors/
	$(GO) test -run XXX -bench 'Replay|HeapPerReservation|Snapshot|StartWith' -benchtime 1x -timeout 30m ./actors/
	$(GO) test -run XXX -bench 'IdleSKUs' -benchtime 3x -timeout 30m ./actors/
	$(GO) test -run XXX -bench 'MachineReserve' -benchtime 2000000x -timeout 30m ./actors/sku/
	$(GO) test -run XXX -bench . -benchtime 1x -timeout 30m ./snapshot/
	$(GO) test -run XXX -bench . -timeout 30m ./wal/

## bench-audit: the audit's time and the reserve p99 during it at 1, 4 and 8 million reservations (~2 GB of memory).
bench-audit:
	$(GO) test -run XXX -bench 'AuditDuringSale' -benchtime 1x -timeout 30m ./actors/

## bench-compare: seckilld beside Redis + Lua, PostgreSQL, the in-process engine and the null servers
## (flags of "seckill-bench compare" in COMPARE_ARGS, e.g. make bench-compare COMPARE_ARGS="--rounds 3").
COMPARE_ARGS ?=
bench-compare:
	LDFLAGS="$(LDFLAGS)" ./bench/compare.sh $(COMPARE_ARGS)

## bench-instructions: instructions per request (valgrind --tool=callgrind) of the hot reserve, the SOLD_OUT fast
## path, a batch item and a feed event beside null-http and null-fsync, each path in a process of its own, two
## rounds, one table (bench/instructions; flags in INSTR_ARGS, e.g. make bench-instructions INSTR_ARGS="--rounds 3").
INSTR_ARGS ?=
bench-instructions:
	$(GO) run ./bench/instructions $(INSTR_ARGS)

## bench-passes: reserve throughput with and without entry passes through one seckilld over loopback,
## the load tool's client minting the passes, in alternating rounds; per-pair ratios and their medians
## (flags of "seckill-bench compare passes" in PASSES_ARGS, e.g. make bench-passes PASSES_ARGS="--pairs 9").
PASSES_ARGS ?=
bench-passes: build
	./$(BIN)/seckill-bench compare passes --seckilld ./$(BIN)/seckilld $(PASSES_ARGS)

## bench-orders: the seed sale (10,000 units, 1,000,000 attempts) end to end: seckilld -> its feed -> seckill-orders
## -> PostgreSQL (private, fsync on), then a reconciliation that must be clean; prints the events/s committed into
## PostgreSQL and the lag p99 (flags of "seckill-bench orders" in ORDERS_ARGS, e.g. ORDERS_ARGS="--attempts 200000").
ORDERS_ARGS ?=
bench-orders: build
	./$(BIN)/seckill-bench orders --seckilld ./$(BIN)/seckilld --seckill-orders ./$(BIN)/seckill-orders $(ORDERS_ARGS)

## bench-feed: the event feed's benchmarks (records/s read from a 1,000,000-record log, raw and through HTTP;
## CPU per event per consumer at the tail, in process and over loopback beside a bare HTTP server's floor;
## reserve throughput with 0, 1 and 4 live consumers interleaved in rounds of the same run; the CPU of
## 1,000 idle long polls and of 1,000 idle streams' heartbeats).
bench-feed:
	$(GO) test -run XXX -bench ReadDurable -benchtime 3x -timeout 30m ./wal/
	$(GO) test -run XXX -bench 'FeedRead|FeedPageHandler|FeedTail' -benchtime 3x -timeout 30m ./httpapi/
	$(GO) test -run XXX -bench ReserveWithConsumers -benchtime 20000x -timeout 30m ./httpapi/
	$(GO) test -run XXX -bench FeedIdle -benchtime 3x -timeout 30m ./httpapi/

## soak: the kill -9 loop with many more cycles.
soak:
	SECKILL_SOAK_CYCLES=50 $(GO) test -count=1 -timeout 60m -run Kill ./...

## fuzz: run each fuzz target for a while (CI runs only their seed corpus).
fuzz:
	$(GO) test -run XXX -fuzz FuzzDecodeFrame -fuzztime 60s ./wal/
	$(GO) test -run XXX -fuzz FuzzScanSegment -fuzztime 60s ./wal/
	$(GO) test -run XXX -fuzz FuzzDecodeRecord -fuzztime 60s ./actors/sku/
	$(GO) test -run XXX -fuzz FuzzDecodeState -fuzztime 60s ./actors/sku/
	$(GO) test -run XXX -fuzz FuzzDecodeSnapshot -fuzztime 60s ./snapshot/
	$(GO) test -run XXX -fuzz 'FuzzVerify$$' -fuzztime 60s ./entrypass/
	$(GO) test -run XXX -fuzz FuzzVerifySealed -fuzztime 60s ./entrypass/

## sim: the deterministic simulation: SIM_SEEDS histories of SIM_STEPS steps, checked step by step,
## of one SKU, then of a campaign-scope campaign, then of admission over a disk that slows down, then of
## a celled SKU with the real cells agent over a faulty ledger, then of a replica set of three
## (make sim SEED=N replays one seed exactly and prints its shortest failing history;
## SIM_MODE=-campaign, -admission, -cells or -replicas replays a seed of that mode).
SIM_SEEDS ?= 10000
SIM_STEPS ?= 200
SEED      ?=
SIM_MODE  ?=
sim:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/seckill-sim ./cmd/seckill-sim
	./$(BIN)/seckill-sim -steps $(SIM_STEPS) $(if $(SEED),-seed $(SEED),-seeds $(SIM_SEEDS)) $(SIM_MODE)
	$(if $(SEED),,./$(BIN)/seckill-sim -campaign -steps $(SIM_STEPS) -seeds $(SIM_SEEDS))
	$(if $(SEED),,./$(BIN)/seckill-sim -admission -steps $(SIM_STEPS) -seeds $(SIM_SEEDS))
	$(if $(SEED),,./$(BIN)/seckill-sim -cells -steps $(SIM_STEPS) -seeds $(SIM_SEEDS))
	$(if $(SEED),,./$(BIN)/seckill-sim -replicas -steps $(SIM_STEPS) -seeds $(SIM_SEEDS))

## sim-mutants: build the simulator with each planted bug and fail if one survives 2,000 seeds.
SIM_MUTANTS := ackbeforefsync keeptorntail retryfsync replaytwice timerexpiry healfsync backoffreset releaseunknown releasewaitlisted probeskip ignorecommitlatency feedretention drawtimers auditcooldown agentnoreadback creditbeforereturn \
	ha_ackbeforestandby ha_promotenotsync ha_dropafterack ha_acceptlowerepoch ha_rejoinnocut ha_basecopynosnapshot ha_snapshotpastkept
sim-mutants:
	@survived=""; for m in $(SIM_MUTANTS); do \
		mode=""; case $$m in releaseunknown|releasewaitlisted|probeskip) mode=-campaign;; ignorecommitlatency) mode=-admission;; agentnoreadback|creditbeforereturn) mode=-cells;; ha_*) mode=-replicas;; esac; \
		$(GO) build -tags mutant_$$m -ldflags "$(LDFLAGS)" -o $(BIN)/seckill-sim-mutant ./cmd/seckill-sim || exit 2; \
		./$(BIN)/seckill-sim-mutant $$mode -seeds 2000 -steps $(SIM_STEPS) -stop > $(BIN)/sim-mutant-$$m.txt 2>&1; status=$$?; \
		if [ $$status -eq 1 ]; then echo "mutant $$m: caught ($$(grep -m1 '^FAIL' $(BIN)/sim-mutant-$$m.txt))"; \
		elif [ $$status -eq 0 ]; then echo "mutant $$m: SURVIVED 2000 seeds"; survived="$$survived $$m"; \
		else cat $(BIN)/sim-mutant-$$m.txt; exit 2; fi; \
	done; rm -f $(BIN)/seckill-sim-mutant; \
	if [ -n "$$survived" ]; then echo "surviving mutants:$$survived"; exit 1; fi

clean:
	rm -rf $(BIN)
