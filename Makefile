# seckill: make run (the engine on its demo campaign), make test (what CI runs).
GO       ?= go
BIN      := bin
PKGS     := ./...
ADDR     ?= 127.0.0.1:8080
DATA     ?= ./data

.PHONY: all build run test test-long bench bench-engine bench-audit bench-compare bench-passes bench-feed soak fuzz sim sim-mutants clean cluster bench-cells

all: build

# --version reads the commit from the build information; where the toolchain
# records none (a git worktree, GOFLAGS=-buildvcs=false) these stamp it.
VERSION_PKG := github.com/seckill/seckill/internal/version
LDFLAGS     := -X $(VERSION_PKG).commit=$(shell git rev-parse HEAD 2>/dev/null) -X $(VERSION_PKG).buildTime=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/seckilld ./cmd/seckilld
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/seckill-bench ./cmd/seckill-bench
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/seckillctl ./cmd/seckillctl
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/seckill-router ./cmd/seckill-router
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/seckill-relay ./cmd/seckill-relay
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/seckill-sim ./cmd/seckill-sim

## run: build the binaries and start seckilld on $(ADDR) with data in $(DATA) (demo campaign when none is given).
run: build
	./$(BIN)/seckilld --addr $(ADDR) --data-dir $(DATA)

## cluster: one etcd, three cells and a router on loopback; the demo hot SKU split across the cells (cells/cluster.sh).
cluster: build
	BIN=$(BIN) ./cells/cluster.sh

## test: vet + race-enabled tests of every package, bounded for CI (fuzz targets run their seed corpus),
## and after each package's tests its benchmarks, each once at tiny sizes (SECKILL_BENCH_TINY=1,
## internal/benchsize): a change that breaks a benchmark fails here, not at the next measurement.
test:
	$(GO) vet $(PKGS)
	SECKILL_BENCH_TINY=1 $(GO) test -race -count=1 -bench . -benchtime 1x -timeout 12m $(PKGS)

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
	./bench/compare.sh $(COMPARE_ARGS)

## bench-passes: reserve throughput with and without entry passes (issue #14) through one seckilld over loopback,
## the load tool's client minting the passes, in alternating rounds; per-pair ratios and their medians
## (flags of "seckill-bench compare passes" in PASSES_ARGS, e.g. make bench-passes PASSES_ARGS="--pairs 9").
PASSES_ARGS ?=
bench-passes: build
	./$(BIN)/seckill-bench compare passes --seckilld ./$(BIN)/seckilld $(PASSES_ARGS)

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
## of one SKU, then of a campaign-scope campaign (make sim SEED=N replays one seed exactly and
## prints its shortest failing history; SIM_MODE=-campaign replays a campaign seed).
SIM_SEEDS ?= 10000
SIM_STEPS ?= 200
SEED      ?=
SIM_MODE  ?=
sim:
	$(GO) build -o $(BIN)/seckill-sim ./cmd/seckill-sim
	./$(BIN)/seckill-sim -steps $(SIM_STEPS) $(if $(SEED),-seed $(SEED),-seeds $(SIM_SEEDS)) $(SIM_MODE)
	$(if $(SEED),,./$(BIN)/seckill-sim -campaign -steps $(SIM_STEPS) -seeds $(SIM_SEEDS))

## sim-mutants: build the simulator with each planted bug and fail if one survives 2,000 seeds.
SIM_MUTANTS := ackbeforefsync keeptorntail retryfsync replaytwice timerexpiry healfsync releaseunknown releasewaitlisted
sim-mutants:
	@survived=""; for m in $(SIM_MUTANTS); do \
		mode=""; case $$m in releaseunknown|releasewaitlisted) mode=-campaign;; esac; \
		$(GO) build -tags mutant_$$m -o $(BIN)/seckill-sim-mutant ./cmd/seckill-sim || exit 2; \
		./$(BIN)/seckill-sim-mutant $$mode -seeds 2000 -steps $(SIM_STEPS) -stop > $(BIN)/sim-mutant-$$m.txt 2>&1; status=$$?; \
		if [ $$status -eq 1 ]; then echo "mutant $$m: caught ($$(grep -m1 '^FAIL' $(BIN)/sim-mutant-$$m.txt))"; \
		elif [ $$status -eq 0 ]; then echo "mutant $$m: SURVIVED 2000 seeds"; survived="$$survived $$m"; \
		else cat $(BIN)/sim-mutant-$$m.txt; exit 2; fi; \
	done; rm -f $(BIN)/seckill-sim-mutant; \
	if [ -n "$$survived" ]; then echo "surviving mutants:$$survived"; exit 1; fi

clean:
	rm -rf $(BIN)
