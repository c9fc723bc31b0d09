package cells

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/ledger"
)

// Guard is a cell's engine as its HTTP service sees it: a reserve for a
// user the frozen cell map gives to another cell is refused with an
// *actors.WrongCellError (421 WRONG_CELL, naming the cell and, once the
// cell has read it from etcd, its address), so a stale router cannot make
// a user buy twice. The HTTP service asks CheckCell before any of its
// fast answers (an empty cell's SOLD_OUT must not hide that the user's own
// cell may have stock); the reserves check again here, so that no path to
// the engine takes a reserve unguarded. A campaign is defined through the
// admin API only once the ledger allowed it (ClaimCampaign; the Guard is
// also the service's httpapi.Config.Claimer and CellGuard). Every other
// call goes through. SKUs published while the cell runs are added (Add)
// before the cell defines them.
type Guard struct {
	httpapi.Engine
	cell    string
	ledger  *ledger.Ledger                        // for ClaimCampaign (local.go); nil: no local definition
	claimed sync.Map                              // campaign id → true: claimed locally by this cell (never undone)
	mu      sync.Mutex                            // serializes Add
	skus    atomic.Pointer[map[string]*Published] // by campaign + "/" + sku; copied on Add, never changed in place
	addrs   atomic.Pointer[map[string]string]     // by cell: its announced HTTP base URL (SetAddresses); never changed in place
}

// NewGuard guards engine for cell with the maps (and purchase limits) of
// its celled SKUs; l (nil: none, every local definition is refused) is
// the ledger asked before the admin API defines a campaign locally
// (ClaimCampaign).
func NewGuard(engine httpapi.Engine, cell string, published []Published, l *ledger.Ledger) *Guard {
	g := &Guard{Engine: engine, cell: cell, ledger: l}
	g.skus.Store(&map[string]*Published{})
	for _, p := range published {
		g.Add(p)
	}
	return g
}

// Add guards one more published SKU (a map already held is kept: maps
// are frozen).
func (g *Guard) Add(p Published) {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := *g.skus.Load()
	key := p.Definition.CampaignID + "/" + p.Definition.SKUID
	if old[key] != nil {
		return
	}
	next := make(map[string]*Published, len(old)+1)
	for k, m := range old {
		next[k] = m
	}
	next[key] = &p
	g.skus.Store(&next)
}

// SetAddresses sets the HTTP base URLs the cells announced in etcd
// (ledger.CellAddrs), named in WRONG_CELL answers. addrs is kept: the
// caller must not change it afterwards.
func (g *Guard) SetAddresses(addrs map[string]string) { g.addrs.Store(&addrs) }

// Guards reports whether the SKU's map is held.
func (g *Guard) Guards(campaignID, skuID string) bool {
	return (*g.skus.Load())[campaignID+"/"+skuID] != nil
}

// ReserveWith refuses a user of another cell, then reserves with holder.
func (g *Guard) ReserveWith(ctx context.Context, campaignID, skuID, requestID, userID string, holder sku.Holder) (sku.Result, error) {
	if err := g.CheckCell(campaignID, skuID, userID); err != nil {
		return sku.Result{}, err
	}
	return g.Engine.ReserveWith(ctx, campaignID, skuID, requestID, userID, holder)
}

// ReserveBatch answers the items of users of other cells with
// actors.ErrWrongCell and sends the others, in order, as one batch.
func (g *Guard) ReserveBatch(ctx context.Context, campaignID, skuID string, items []actors.ReserveItem) ([]actors.ItemResult, error) {
	results := make([]actors.ItemResult, len(items))
	mine := make([]actors.ReserveItem, 0, len(items))
	at := make([]int, 0, len(items)) // at[j]: the item mine[j] is
	for i := range items {
		if err := g.CheckCell(campaignID, skuID, items[i].UserID); err != nil {
			results[i].Err = err
			continue
		}
		mine, at = append(mine, items[i]), append(at, i)
	}
	if len(mine) == 0 {
		return results, nil
	}
	got, err := g.Engine.ReserveBatch(ctx, campaignID, skuID, mine)
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		results[i] = got[j]
	}
	return results, nil
}

// CheckCell returns an *actors.WrongCellError (errors.Is
// actors.ErrWrongCell), naming the owner and its address when known, when
// the SKU is celled and its map gives userID to another cell
// (Published.CellOf: by campaign and user when the campaign's purchase
// limit is "campaign"); nil otherwise (also for an invalid user_id, which
// the caller refuses on its own terms). It is httpapi.CellGuard.
func (g *Guard) CheckCell(campaignID, skuID, userID string) error {
	p := (*g.skus.Load())[campaignID+"/"+skuID]
	if p == nil || !sku.ValidID(userID) {
		return nil
	}
	owner := p.CellOf(userID)
	if owner == g.cell {
		return nil
	}
	e := &actors.WrongCellError{CampaignID: campaignID, SKUID: skuID, UserID: userID, Cell: owner}
	if addrs := g.addrs.Load(); addrs != nil {
		e.Address = (*addrs)[owner]
	}
	return e
}

// The HTTP service's view of a cell's engine, and its claimer.
var (
	_ httpapi.Engine          = (*Guard)(nil)
	_ httpapi.CampaignClaimer = (*Guard)(nil)
	_ httpapi.CellGuard       = (*Guard)(nil)
)
