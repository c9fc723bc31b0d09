package compare

import (
	"context"
	"os"
	"runtime"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/bench"
)

// The comparison drives the engine in process (no HTTP, fsync on) through
// the small interfaces below; actorsEngine (engine_actors.go) is the real
// one and tests put an in-memory stand-in behind EngineFactory.

// Reserver is one SKU's reservation entry point of the in-process engine.
// It returns once the decision is durable (fsync on). accepted: a unit is
// reserved for the request (the same requestID again must answer accepted
// again); soldOut: refused for lack of stock; neither: refused for another
// business reason (the user already holds a unit). err: no decision.
type Reserver interface {
	Reserve(ctx context.Context, requestID, userID string) (accepted bool, soldOut bool, err error)
}

// Engine is the in-process engine as the comparison sees it.
type Engine interface {
	// DefineSKU creates a SKU with saleLimit units, open for reservations now.
	DefineSKU(ctx context.Context, campaignID, skuID string, saleLimit int64) (Reserver, error)
	// Audit returns the SKU's counters and the engine's own invariant check.
	Audit(ctx context.Context, campaignID, skuID string) (EngineAudit, error)
	// Close flushes and closes the engine.
	Close() error
}

// EngineAudit is the engine's account of one SKU.
type EngineAudit struct {
	// SaleLimit, Available, Reserved and Confirmed are the SKU's counters.
	SaleLimit, Available, Reserved, Confirmed int64
	// InvariantOK is the engine's own check of its invariants.
	InvariantOK bool
}

// EngineFactory opens the engine with its log in dataDir and fsync on.
var EngineFactory = openActorsEngine

// EngineTarget drives the engine in process through EngineFactory.
type EngineTarget struct {
	workDir string
	dir     string
	engine  Engine
	procs   int // GOMAXPROCS before Start, restored by Close
}

// NewEngineTarget returns the target; its data goes under workDir.
func NewEngineTarget(workDir string) *EngineTarget { return &EngineTarget{workDir: workDir} }

// Name returns "engine".
func (t *EngineTarget) Name() string { return "engine" }

// Start opens the engine, with GOMAXPROCS as seckilld sets it
// (actors.TuneProcs) until Close.
func (t *EngineTarget) Start(ctx context.Context) error {
	t.procs = actors.TuneProcs()
	dir, err := os.MkdirTemp(t.workDir, "seckill-compare-engine-")
	if err != nil {
		return err
	}
	t.dir = dir
	t.engine, err = EngineFactory(dir)
	return err
}

// Prepare defines the SKU in the engine.
func (t *EngineTarget) Prepare(ctx context.Context, sku SKURef) (bench.Reserver, error) {
	reserver, err := t.engine.DefineSKU(ctx, sku.CampaignID, sku.SKUID, sku.SaleLimit)
	if err != nil {
		return nil, err
	}
	return engineReserver{reserver}, nil
}

// engineReserver adapts the engine's Reserver to bench.Reserver. The
// request id stands for the reservation id, so a user who wins twice with
// two requests shows as a duplicate winner.
type engineReserver struct{ inner Reserver }

// Reserve calls the engine.
func (r engineReserver) Reserve(ctx context.Context, requestID, userID string) (bench.Reply, error) {
	accepted, soldOut, err := r.inner.Reserve(ctx, requestID, userID)
	switch {
	case err != nil:
		return bench.Reply{}, err
	case accepted:
		return bench.Reply{Outcome: bench.OutcomeAccepted, ReservationID: requestID}, nil
	case soldOut:
		return bench.Reply{Outcome: bench.OutcomeSoldOut}, nil
	}
	return bench.Reply{Outcome: bench.OutcomeAlreadyPurchased}, nil
}

// Audit reads the engine's audit.
func (t *EngineTarget) Audit(ctx context.Context, sku SKURef) (Audit, error) {
	audit, err := t.engine.Audit(ctx, sku.CampaignID, sku.SKUID)
	if err != nil {
		return Audit{}, err
	}
	return auditFromReport(sku, bench.AuditReport{
		SaleLimit: audit.SaleLimit, Available: audit.Available, Reserved: audit.Reserved,
		Confirmed: audit.Confirmed, InvariantOK: audit.InvariantOK,
	}), nil
}

// ServerCPU is not separable: the engine runs in this process, so its CPU
// shows in the client column.
func (t *EngineTarget) ServerCPU() (time.Duration, bool) { return 0, false }

// Close closes the engine and removes its directory.
func (t *EngineTarget) Close() error {
	var err error
	if t.engine != nil {
		err = t.engine.Close()
	}
	if t.dir != "" {
		_ = os.RemoveAll(t.dir)
	}
	if t.procs > 0 {
		runtime.GOMAXPROCS(t.procs)
	}
	return err
}
