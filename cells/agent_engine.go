package cells

import (
	"context"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/sku"
)

// reportingEngine is the agent's engine with each failed call reported
// (Agent.engineFailed). The agent retries a refused call for ever, as it
// retries etcd; without the report a refusal that never heals (a GRANT
// past the log's limit of grants, an EPOCH below the one the log holds
// after etcd was reset, a SKU whose log failed) would stop the cell's
// top-ups without a line in its log.
type reportingEngine struct {
	Engine
	a *Agent
}

func (e reportingEngine) Grant(ctx context.Context, campaignID, skuID string, al sku.Allocation) error {
	return e.a.engineFailed("grant", e.Engine.Grant(ctx, campaignID, skuID, al))
}

func (e reportingEngine) Return(ctx context.Context, campaignID, skuID string, seq, epoch uint64, units uint32) (sku.Allocation, error) {
	al, err := e.Engine.Return(ctx, campaignID, skuID, seq, epoch, units)
	return al, e.a.engineFailed("return", err)
}

func (e reportingEngine) SetEpoch(ctx context.Context, campaignID, skuID string, epoch uint64) error {
	return e.a.engineFailed("record epoch", e.Engine.SetEpoch(ctx, campaignID, skuID, epoch))
}

func (e reportingEngine) Cell(ctx context.Context, campaignID, skuID string) (core.CellReport, error) {
	rep, err := e.Engine.Cell(ctx, campaignID, skuID)
	return rep, e.a.engineFailed("read the cell's report", err)
}

// engineFailed counts and logs a failed call of the engine (err nil:
// nothing) and returns err.
func (a *Agent) engineFailed(what string, err error) error {
	if err == nil {
		return nil
	}
	a.count(func(s *AgentStats) { s.EngineErrors++; s.LastEngineErr = what + ": " + err.Error() })
	a.cfg.Logger.Warn("the cell's engine refused the agent; retrying", "cell", a.cfg.Cell,
		"campaign_id", a.cfg.SKU.Campaign, "sku_id", a.cfg.SKU.SKU, "op", what, "err", err)
	return err
}
