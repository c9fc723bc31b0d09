package cells

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/ledger"
)

// A cell's admin API may define a campaign locally (uncelled: the
// router's default-cell path) only if the campaign is not published
// across cells, and only on one cell: before the first local definition
// of a campaign the cell creates its ledger.LocalKey in an etcd
// transaction that checks the campaign is not published
// (ledger.ClaimLocal), and ledger.Publish checks that key in its own.

// ClaimCampaign is httpapi.CampaignClaimer: nil when this cell may define
// campaignID locally (claimed now or before); httpapi.ErrCampaignPublished
// when the campaign is published (this cell guards a SKU of it, or etcd
// says so), httpapi.ErrCampaignOnOtherCell when another cell claimed it,
// httpapi.ErrLedgerUnreachable when etcd did not answer (or the guard has
// no ledger). A claim is never undone, so a granted one is remembered and
// not asked again.
func (g *Guard) ClaimCampaign(ctx context.Context, campaignID string) error {
	for _, p := range *g.skus.Load() {
		if p.Definition.CampaignID == campaignID {
			return fmt.Errorf("%w (this cell sells its SKU %s, map version %d)", httpapi.ErrCampaignPublished, p.Definition.SKUID, p.Map.Version)
		}
	}
	if _, ok := g.claimed.Load(campaignID); ok {
		return nil
	}
	if g.ledger == nil {
		return fmt.Errorf("%w: this cell has no ledger", httpapi.ErrLedgerUnreachable)
	}
	err := g.ledger.ClaimLocal(ctx, campaignID, g.cell)
	var local *ledger.LocalError
	switch {
	case err == nil:
		g.claimed.Store(campaignID, true)
		return nil
	case errors.Is(err, ledger.ErrPublished):
		return fmt.Errorf("%w (campaign %s)", httpapi.ErrCampaignPublished, campaignID)
	case errors.As(err, &local):
		return fmt.Errorf("%w: campaign %s is cell %s's; define it there, or through the router (which sends it there)", httpapi.ErrCampaignOnOtherCell, campaignID, local.Cell)
	}
	return fmt.Errorf("%w: %v", httpapi.ErrLedgerUnreachable, err)
}

// DefineAll defines defs locally once ClaimCampaign allowed their
// campaigns (the admin API's path; the cell defines its published SKUs on
// the engine itself): those before the first whose campaign is refused,
// which gets the refusal, as actors.Engine.DefineAll answers a list
// stopped at a definition.
func (g *Guard) DefineAll(ctx context.Context, defs []sku.Definition, each time.Duration) []error {
	for i, d := range defs {
		if err := g.ClaimCampaign(ctx, d.CampaignID); err != nil {
			errs := append(g.Engine.DefineAll(ctx, defs[:i], each), err)
			for range defs[i+1:] {
				errs = append(errs, actors.ErrNotBegun)
			}
			return errs
		}
	}
	return g.Engine.DefineAll(ctx, defs, each)
}

var _ httpapi.CampaignClaimer = (*Guard)(nil)
