package cells

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/ledger"
)

// CellAudit is one cell's figures in the cluster audit of a SKU, read
// from its admin audit (GET /admin/campaigns/{c}/skus/{s}/audit).
type CellAudit struct {
	URL         string   `json:"url,omitempty"`
	Reachable   bool     `json:"reachable"`
	Error       string   `json:"error,omitempty"`
	Available   uint32   `json:"available"`
	Reserved    uint32   `json:"reserved"`
	Confirmed   uint32   `json:"confirmed"`
	Granted     uint64   `json:"granted"`
	Returned    uint64   `json:"returned"`
	LedgerHeld  uint64   `json:"ledger_held"` // granted - returned per the ledger
	InvariantOK bool     `json:"invariant_ok"`
	Violations  []string `json:"violations,omitempty"`
	// States counts the cell's reservations by state.
	States map[string]uint32 `json:"states,omitempty"`
	// WrittenOff is the quota written off when the cell's disk was lost
	// (ledger.WriteOffCell); such a cell is not asked for its audit.
	WrittenOff uint64 `json:"written_off,omitempty"`
	// LedgerReachable and TopUpPending are the cell's agent's own view,
	// read from its /metrics (absent when it does not export them): a
	// cell cut off from etcd goes on selling what it holds, and says so.
	LedgerReachable *bool `json:"ledger_reachable,omitempty"`
	TopUpPending    *bool `json:"top_up_pending,omitempty"`
	// LogLost: the cell's log of the SKU was lost (Agent.LogLost); the
	// cell sells nothing of it until its quota is written off.
	LogLost *bool `json:"log_lost,omitempty"`
}

// SKUAudit is the cluster audit of one celled SKU: the ledger and its
// own invariants, each cell's counts, conservation across etcd and the
// cells, and OK.
type SKUAudit struct {
	SKUID            string               `json:"sku_id"`
	Ledger           ledger.State         `json:"ledger"`
	LedgerViolations []string             `json:"ledger_violations"`
	Cells            map[string]CellAudit `json:"cells"`
	SaleLimit        uint32               `json:"sale_limit"`
	Sold             uint64               `json:"confirmed"`
	Reserved         uint64               `json:"reserved"`
	Free             uint64               `json:"ledger_free"`
	NeverGranted     uint64               `json:"never_granted"`
	Unreached        uint64               `json:"held_by_unreached_cells"` // the most this audit cannot see, and the undersell bound if they never return
	WrittenOff       uint64               `json:"written_off"`             // held by cells whose disk was lost: never resold (their paid units are unknown)
	Problems         []string             `json:"problems"`
	OK               bool                 `json:"ok"`
}

// ErrTokenRefused: a cell answered the admin token 401. The audit stops:
// every cell of a cluster is asked with the one token, so none would be
// read, and an audit that read no cell vouches for nothing.
var ErrTokenRefused = errors.New("the admin token was refused: check --admin-token or SECKILL_ADMIN_TOKEN (every cell is asked with the same one)")

// ErrOtherCell: the server at a cell's address answered the audit as
// another cell (or as a seckilld whose SKU is not celled). The cell counts
// as not reached, and the audit is not ok: it was pointed at the wrong
// server, so it cannot vouch for that cell.
var ErrOtherCell = errors.New("the address answers for another cell")

// AuditSKU audits one published SKU: the ledger in etcd, and each cell's
// admin audit at urls[cell] (default: the address the cell announced in
// etcd) with the admin token. A cell that cannot be read is listed with
// its error, and its ledger holdings count as unreached (the undersell
// bound while it stays away); the error is etcd's, or a cell's refusal of
// the token (ErrTokenRefused).
func AuditSKU(ctx context.Context, l *ledger.Ledger, p Published, urls map[string]string, token string) (SKUAudit, error) {
	s := ledger.SKU{Campaign: p.Definition.CampaignID, SKU: p.Definition.SKUID}
	st, err := l.Read(ctx, s)
	if err != nil {
		return SKUAudit{}, err
	}
	a := SKUAudit{SKUID: s.SKU, Ledger: st, LedgerViolations: st.Check(), Cells: map[string]CellAudit{},
		SaleLimit: st.Pool.SaleLimit, Free: sku.RangesUnits(st.Pool.Free), NeverGranted: uint64(st.Pool.SaleLimit + 1 - st.Pool.NextToken)}
	if a.LedgerViolations == nil {
		a.LedgerViolations = []string{}
	}
	a.Problems = append([]string{}, a.LedgerViolations...)
	for _, cell := range p.Map.Cells {
		c := CellAudit{URL: urls[cell], LedgerHeld: st.Held(cell)}
		if w, ok := st.WrittenOff[cell]; ok {
			c.WrittenOff = w.Units
			a.WrittenOff += w.Units
			a.Cells[cell] = c
			continue
		}
		if c.URL == "" {
			if resp, err := l.Client().Get(ctx, l.AddrKey(cell)); err == nil && len(resp.Kvs) == 1 {
				c.URL = string(resp.Kvs[0].Value)
			}
		}
		c.LedgerReachable, c.TopUpPending, c.LogLost = fetchAgentState(ctx, c.URL, s)
		if err := FetchCellAudit(ctx, c.URL, s, cell, token, &c); errors.Is(err, ErrTokenRefused) {
			return SKUAudit{}, fmt.Errorf("cell %s at %s: %w", cell, c.URL, err)
		} else if err != nil {
			c.Error = err.Error()
			a.Unreached += c.LedgerHeld
			if errors.Is(err, ErrOtherCell) {
				a.Problems = append(a.Problems, fmt.Sprintf("cell %s: %v", cell, err))
			}
		} else {
			c.Reachable = true
			a.Sold += uint64(c.Confirmed)
			a.Reserved += uint64(c.Reserved)
			if !c.InvariantOK {
				a.Problems = append(a.Problems, fmt.Sprintf("cell %s: invariants: %v", cell, c.Violations))
			}
			if c.LogLost != nil && *c.LogLost {
				a.Problems = append(a.Problems, fmt.Sprintf("cell %s lost its log of the SKU (it held %d per the ledger, sold in that log): write off its quota (seckillctl cells write-off --campaign %s --sku %s --cell %s)",
					cell, c.LedgerHeld, s.Campaign, s.SKU, cell))
			} else if c.Granted-c.Returned != c.LedgerHeld {
				a.Problems = append(a.Problems, fmt.Sprintf("cell %s holds %d per its log, %d per the ledger (not reconciled yet?)", cell, c.Granted-c.Returned, c.LedgerHeld))
			}
		}
		a.Cells[cell] = c
	}
	if a.Sold+a.Reserved > uint64(a.SaleLimit) {
		a.Problems = append(a.Problems, fmt.Sprintf("confirmed %d + reserved %d > sale_limit %d", a.Sold, a.Reserved, a.SaleLimit))
	}
	a.OK = len(a.Problems) == 0
	return a, nil
}

// FetchCellAudit reads the admin audit of SKU s at the cell serving at
// base (its HTTP base URL) into c's counts, within ctx. The answer must
// name cell as the SKU's cell: an address given or announced wrongly (an
// operator's typo, a port another cell's process took over) answers
// another cell's counts, which would be added twice while this cell's
// went unseen.
func FetchCellAudit(ctx context.Context, base string, s ledger.SKU, cell, token string, c *CellAudit) error {
	if base == "" {
		return errors.New("no address (give --cells, or the cell never announced one)")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/admin/campaigns/"+s.Campaign+"/skus/"+s.SKU+"/audit", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode == http.StatusUnauthorized {
			return fmt.Errorf("%s: %s: %w", resp.Status, b, ErrTokenRefused)
		}
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	var body struct {
		Cell        string            `json:"cell"`
		Available   uint32            `json:"available"`
		Reserved    uint32            `json:"reserved"`
		Confirmed   uint32            `json:"confirmed"`
		Granted     uint64            `json:"granted"`
		Returned    uint64            `json:"returned"`
		InvariantOK bool              `json:"invariant_ok"`
		Violations  []string          `json:"violations"`
		States      map[string]uint32 `json:"states"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return err
	}
	if body.Cell != cell {
		return fmt.Errorf("%w: the server at %s answers as %s, not as cell %s", ErrOtherCell, base, cellName(body.Cell), cell)
	}
	c.Available, c.Reserved, c.Confirmed = body.Available, body.Reserved, body.Confirmed
	c.Granted, c.Returned, c.InvariantOK, c.Violations = body.Granted, body.Returned, body.InvariantOK, body.Violations
	c.States = body.States
	return nil
}

// fetchAgentState reads the cell's agent gauges of SKU s from its
// /metrics (seckill_cell_ledger_reachable, seckill_cell_top_up_pending,
// seckill_cell_log_lost); nil for a gauge it cannot read.
func fetchAgentState(ctx context.Context, base string, s ledger.SKU) (reachable, pending, lost *bool) {
	if base == "" {
		return nil, nil, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/metrics", nil)
	if err != nil {
		return nil, nil, nil
	}
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, nil, nil
	}
	labels := [2]string{`campaign_id="` + s.Campaign + `"`, `sku_id="` + s.SKU + `"`}
	gauge := func(name string) *bool {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, name+"{") && strings.Contains(line, labels[0]) && strings.Contains(line, labels[1]) {
				v := strings.HasSuffix(line, " 1")
				return &v
			}
		}
		return nil
	}
	return gauge("seckill_cell_ledger_reachable"), gauge("seckill_cell_top_up_pending"), gauge("seckill_cell_log_lost")
}

// cellName names the cell an audit answered for ("" : a SKU that is not
// celled there).
func cellName(cell string) string {
	if cell == "" {
		return "a seckilld whose SKU is not celled"
	}
	return "cell " + cell
}
