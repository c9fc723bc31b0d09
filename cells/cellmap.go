// Package cells runs one SKU across several seckilld processes ("cells"):
// the frozen map that routes each user to one cell (this file), and the
// agent that keeps a cell's quota in step with the ledger in etcd
// (agent.go). See docs/cells.md.
package cells

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/ledger"
)

// Slots is the number of routing slots: slot = hash(campaign, sku,
// user_id) mod Slots, and the map gives each slot's cell.
const Slots = 1024

// MaxCells bounds the cells of one map.
const MaxCells = 256

// Map is a SKU's cell map: which cell owns each slot. It is published
// once, before the sale opens, and never changes (a live change would let
// a user who bought in one cell buy again in another); its Version is in
// every cell's DEFINE record.
type Map struct {
	Version uint64        `json:"version"`
	Cells   []string      `json:"cells"`
	Slots   [Slots]uint16 `json:"slots"` // index into Cells
}

// ErrBadMap wraps every reason a cell map is refused.
var ErrBadMap = errors.New("cells: bad cell map")

// EvenMap spreads the slots over cells round robin.
func EvenMap(version uint64, cells []string) (Map, error) {
	m := Map{Version: version, Cells: append([]string(nil), cells...)}
	for i := range m.Slots {
		m.Slots[i] = uint16(i % max(len(cells), 1))
	}
	return m, m.Validate()
}

// Validate checks the version, the cell ids and the slot indexes.
func (m Map) Validate() error {
	if m.Version == 0 || len(m.Cells) == 0 || len(m.Cells) > MaxCells {
		return fmt.Errorf("%w: version %d with %d cells (1..%d)", ErrBadMap, m.Version, len(m.Cells), MaxCells)
	}
	seen := map[string]bool{}
	for _, c := range m.Cells {
		if !sku.ValidID(c) || seen[c] {
			return fmt.Errorf("%w: cell %q invalid or repeated", ErrBadMap, c)
		}
		seen[c] = true
	}
	for i, s := range m.Slots {
		if int(s) >= len(m.Cells) {
			return fmt.Errorf("%w: slot %d names cell #%d", ErrBadMap, i, s)
		}
	}
	return nil
}

// Slot returns the routing slot of a user of a campaign's SKU whose
// campaign has purchase limit limit: FNV-1a (64 bit) of campaign, SKU and
// user, each followed by a zero byte (none of the ids may hold one), mod
// Slots. With purchase_limit "campaign" the SKU is left out (FNV-1a of
// campaign and user): every SKU of the campaign gives a user the same
// slot, so, the campaign's SKUs sharing one map (CheckCampaign), the same
// cell, whose purchase registry then sees all the user's purchases. The
// one owner of the rule: the router (Routes), the cell's guard (Guard)
// and the batch split (SplitBatch) all ask Published.CellOf.
func Slot(limit sku.PurchaseLimit, campaignID, skuID, userID string) int {
	h := fnv.New64a()
	keys := []string{campaignID, skuID, userID}
	if limit == sku.PurchaseLimitCampaign {
		keys = []string{campaignID, userID}
	}
	for _, s := range keys {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return int(h.Sum64() % Slots)
}

// CellOf returns the cell that owns userID's purchases of the published
// SKU: its map's cell of Slot (by its campaign's purchase limit).
func (p *Published) CellOf(userID string) string {
	d := &p.Definition
	return p.Map.Cells[p.Map.Slots[Slot(d.PurchaseLimit, d.CampaignID, d.SKUID, userID)]]
}

// Same reports whether m and o are one map: the same version, cells and
// slots.
func (m *Map) Same(o *Map) bool {
	return m.Version == o.Version && slices.Equal(m.Cells, o.Cells) && m.Slots == o.Slots
}

// Has reports whether cell is in the map.
func (m *Map) Has(cell string) bool {
	for _, c := range m.Cells {
		if c == cell {
			return true
		}
	}
	return false
}

// PublishOp is the etcd put of m at the SKU's cell map key, for
// ledger.Publish's transaction (created with the ledger, so never apart).
func PublishOp(l *ledger.Ledger, s ledger.SKU, m Map) (clientv3.Op, error) {
	if err := m.Validate(); err != nil {
		return clientv3.Op{}, err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return clientv3.Op{}, err
	}
	return clientv3.OpPut(l.CellMapKey(s), string(b)), nil
}

// ReadMap reads the SKU's cell map from etcd; ledger.ErrNotFound when none.
func ReadMap(ctx context.Context, l *ledger.Ledger, s ledger.SKU) (Map, error) {
	resp, err := l.Client().Get(ctx, l.CellMapKey(s))
	if err != nil {
		return Map{}, err
	}
	if len(resp.Kvs) == 0 {
		return Map{}, ledger.ErrNotFound
	}
	var m Map
	if err := json.Unmarshal(resp.Kvs[0].Value, &m); err != nil {
		return Map{}, fmt.Errorf("%w: %v", ErrBadMap, err)
	}
	return m, m.Validate()
}
