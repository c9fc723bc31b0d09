package cells

import (
	"context"
	"fmt"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi"
)

// Guard is a cell's engine as its HTTP service sees it: a reserve for a
// user the frozen cell map gives to another cell is refused with
// actors.ErrWrongCell (421 WRONG_CELL, naming the cell), so a stale router
// cannot make a user buy twice. Every other call goes through.
type Guard struct {
	httpapi.Engine
	cell string
	maps map[string]*Map // by campaign + "/" + sku
}

// NewGuard guards engine for cell with the maps of its celled SKUs.
func NewGuard(engine httpapi.Engine, cell string, published []Published) *Guard {
	g := &Guard{Engine: engine, cell: cell, maps: map[string]*Map{}}
	for i := range published {
		d := published[i].Definition
		g.maps[d.CampaignID+"/"+d.SKUID] = &published[i].Map
	}
	return g
}

// Reserve refuses a user of another cell, then reserves.
func (g *Guard) Reserve(ctx context.Context, campaignID, skuID, requestID, userID string) (sku.Result, error) {
	if m := g.maps[campaignID+"/"+skuID]; m != nil && sku.ValidID(userID) {
		if owner := m.CellOf(campaignID, skuID, userID); owner != g.cell {
			return sku.Result{}, fmt.Errorf("%w: user %s of %s/%s is cell %s's", actors.ErrWrongCell, userID, campaignID, skuID, owner)
		}
	}
	return g.Engine.Reserve(ctx, campaignID, skuID, requestID, userID)
}
