package compare

import (
	"context"
	"log/slog"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// actorsEngine is the real engine (package actors) behind Engine.
type actorsEngine struct{ e *actors.Engine }

// openActorsEngine opens the engine with its logs in dataDir, fsync on.
func openActorsEngine(dataDir string) (Engine, error) {
	e, err := actors.Open(actors.Config{DataDir: dataDir, Fsync: wal.FsyncAlways,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	return actorsEngine{e}, nil
}

// DefineSKU defines a SKU open from now for a day.
func (a actorsEngine) DefineSKU(ctx context.Context, campaignID, skuID string, saleLimit int64) (Reserver, error) {
	now := time.Now().UnixMilli()
	d := sku.Definition{CampaignID: campaignID, SKUID: skuID, StartAt: now - 1000, EndAt: now + 86_400_000,
		PaymentWindowMs: sku.DefaultPaymentWindowMs, SaleLimit: uint32(min(saleLimit, sku.MaxSaleLimit)), ReleaseOnClose: true}
	if err := a.e.Define(ctx, d); err != nil {
		return nil, err
	}
	return actorsReserver{a.e, campaignID, skuID}, nil
}

// Audit runs the engine's audit of the SKU.
func (a actorsEngine) Audit(ctx context.Context, campaignID, skuID string) (EngineAudit, error) {
	au, err := a.e.Audit(ctx, campaignID, skuID)
	if err != nil {
		return EngineAudit{}, err
	}
	c := au.Counts
	return EngineAudit{SaleLimit: int64(c.SaleLimit), Available: int64(c.Available), Reserved: int64(c.Reserved),
		Confirmed: int64(c.Confirmed), InvariantOK: au.OK()}, nil
}

// Close flushes and closes the engine.
func (a actorsEngine) Close() error { return a.e.Close() }

type actorsReserver struct {
	e                 *actors.Engine
	campaignID, skuID string
}

// Reserve calls Engine.Reserve; it returns once the decision is durable.
func (r actorsReserver) Reserve(ctx context.Context, requestID, userID string) (accepted, soldOut bool, err error) {
	res, err := r.e.Reserve(ctx, r.campaignID, r.skuID, requestID, userID)
	if err != nil {
		return false, false, err
	}
	return res.Outcome == sku.OutcomeAccepted, res.Outcome == sku.OutcomeSoldOut, nil
}
