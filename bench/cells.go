package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/internal/timefmt"
	"github.com/seckill/seckill/ledger"
)

// CellsConfig makes the tool sell celled SKUs through a seckill-router
// (package cells, docs/cells.md): the scenario's
// campaign is not PUT through the target (the router would hand it to
// one cell, uncelled) but published in etcd as the control plane does
// (cells.Publish, as seckillctl cells publish), every SKU split over
// Cells; the tool then waits until the router routes it and every cell
// holds its initial grant, runs the scenario through the router
// unchanged, and reads the audit and the refund list from etcd and every
// cell (cells.AuditSKU), not from one cell.
type CellsConfig struct {
	// Etcd lists the etcd endpoints (host:port, comma-separated); empty:
	// the target is one seckilld and nothing here applies.
	Etcd string
	// Prefix is the ledger's key prefix ("" = ledger.DefaultPrefix).
	Prefix string
	// Cells names the cells each SKU is split over (an even cell map).
	Cells []string
	// Initial is each cell's initial grant, in units; negative: the
	// default, 90% of the SKU's sale_limit split evenly (the rest is the
	// central pool the cells top up from).
	Initial int64
	// Chunk is the units of one top-up.
	Chunk uint32
}

// MaxCelledStock bounds --stock with --etcd: a cell keeps one 4-byte
// token slot for every token id up to the highest it sold, its holes
// included (actors/sku tokens.go), and the last cell of a map is granted
// the highest ids, so its memory follows the SKU's sale_limit, not its
// share (64 MiB at this bound). The hot scenario's default stock is cut to
// it.
const MaxCelledStock = 1 << 24

// Enabled reports whether the target is a router of celled SKUs.
func (c CellsConfig) Enabled() bool { return c.Etcd != "" }

// initialFor returns each cell's initial grant for a SKU of saleLimit.
func (c CellsConfig) initialFor(saleLimit int64) uint32 {
	if c.Initial >= 0 {
		return uint32(c.Initial)
	}
	return uint32(saleLimit * 9 / 10 / int64(len(c.Cells)))
}

// validate checks the celled options against the rest of the run.
func (c CellsConfig) validate(config *Config) []error {
	if !c.Enabled() {
		if len(c.Cells) > 0 {
			return []error{errors.New("--cells needs --etcd")}
		}
		return nil
	}
	var problems []error
	if _, err := cells.EvenMap(1, c.Cells); err != nil {
		problems = append(problems, fmt.Errorf("--cells: %w", err))
	}
	if config.Stock > MaxCelledStock {
		problems = append(problems, fmt.Errorf("--stock %d with --etcd: at most %d (a cell's token slots span the ids up to its highest sold)", config.Stock, MaxCelledStock))
	}
	if c.Chunk == 0 {
		problems = append(problems, errors.New("--cell-chunk must be positive"))
	}
	if len(c.Cells) > 0 && c.Initial >= 0 && c.Initial*int64(len(c.Cells)) > config.Stock {
		problems = append(problems, fmt.Errorf("--cell-initial %d × %d cells exceeds --stock %d", c.Initial, len(c.Cells), config.Stock))
	}
	switch {
	case config.Scenario == ScenarioLottery:
		problems = append(problems, errors.New("a lottery SKU cannot be celled (its draw needs every entry in one log): run it without --etcd"))
	case config.EntryPassKeys != "":
		problems = append(problems, errors.New("--entry-pass-keys with --etcd: a published celled SKU has no entry_pass setting yet"))
	}
	return problems
}

// cellControl is the tool's control plane for celled SKUs: publish,
// wait until routed and granted, audit, refunds.
type cellControl struct {
	config CellsConfig
	ledger *ledger.Ledger
	close  func()
	router *Client
	token  string
	// published holds what define published, by campaign + "/" + sku.
	published map[string]cells.Published
}

// readyTimeout bounds the wait for the router and the cells to take a
// newly published SKU (they look every second).
const readyTimeout = 30 * time.Second

func newCellControl(config CellsConfig, router *Client, adminToken string) (*cellControl, error) {
	client, err := ledger.Dial(strings.Split(config.Etcd, ","))
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	return &cellControl{config: config, ledger: ledger.New(client, config.Prefix), close: func() { client.Close() },
		router: router, token: adminToken, published: map[string]cells.Published{}}, nil
}

// define publishes every SKU of the campaign as a celled SKU, then waits
// until each is ready.
func (cc *cellControl) define(ctx context.Context, spec CampaignSpec) error {
	startAt, err := time.Parse(timefmt.Layout, spec.StartAt)
	if err != nil {
		return fmt.Errorf("start_at: %w", err)
	}
	endAt, err := time.Parse(timefmt.Layout, spec.EndAt)
	if err != nil {
		return fmt.Errorf("end_at: %w", err)
	}
	window, err := time.ParseDuration(spec.PaymentWindow)
	if err != nil {
		return fmt.Errorf("payment_window: %w", err)
	}
	m, err := cells.EvenMap(1, cc.config.Cells)
	if err != nil {
		return err
	}
	for _, s := range spec.SKUs {
		d := sku.Definition{CampaignID: spec.CampaignID, SKUID: s.SKUID, StartAt: startAt.UnixMilli(), EndAt: endAt.UnixMilli(),
			PaymentWindowMs: window.Milliseconds(), SaleLimit: uint32(s.SaleLimit), ReleaseOnClose: spec.ReleaseOnClose}
		var grants []ledger.InitialGrant
		for _, cell := range m.Cells {
			grants = append(grants, ledger.InitialGrant{Cell: cell, Units: cc.config.initialFor(s.SaleLimit)})
		}
		if _, err := cells.Publish(ctx, cc.ledger, d, m, cc.config.Chunk, grants); err != nil {
			return fmt.Errorf("publish %s/%s: %w", spec.CampaignID, s.SKUID, err)
		}
		cc.published[spec.CampaignID+"/"+s.SKUID] = cells.Published{Definition: d, Map: m}
	}
	for _, s := range spec.SKUs {
		if err := cc.waitReady(ctx, spec.CampaignID, s.SKUID); err != nil {
			return err
		}
	}
	return nil
}

// waitReady waits until the router routes the SKU by its map and every
// cell of the map holds what the ledger granted it (its initial grant).
func (cc *cellControl) waitReady(ctx context.Context, campaignID, skuID string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	p := cc.published[campaignID+"/"+skuID]
	last := "the router has no map for it"
	for {
		_, err := cc.router.api.RouterMap(ctx, campaignID, skuID)
		code, _, terr := status(err)
		if code == 200 {
			last = "a cell does not hold its grant yet"
			a, err := cells.AuditSKU(ctx, cc.ledger, p, nil, cc.token)
			if err == nil && cellsHoldGrants(a) {
				return nil
			}
			if err != nil {
				last = err.Error()
			}
		} else if terr == nil && code != 404 {
			last = fmt.Sprintf("the target answered %v to GET /router/campaigns/%s/skus/%s: is it a seckill-router?", err, campaignID, skuID)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s/%s not ready within %s: %s", campaignID, skuID, readyTimeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cellsHoldGrants reports whether every cell answered its audit and logs
// what the ledger says it holds.
func cellsHoldGrants(a cells.SKUAudit) bool {
	for _, c := range a.Cells {
		if !c.Reachable || c.Granted-c.Returned != c.LedgerHeld {
			return false
		}
	}
	return true
}

// audit is the cluster audit of one SKU as one AuditReport: the cells'
// counts added up, and the units no cell holds (free in the ledger, never
// granted) counted as available, so that available + reserved + confirmed
// = sale_limit is the conservation across etcd and the cells. A cell the
// audit cannot read is a violation.
func (cc *cellControl) audit(ctx context.Context, campaignID, skuID string) (AuditReport, error) {
	p, ok := cc.published[campaignID+"/"+skuID]
	if !ok {
		return AuditReport{}, fmt.Errorf("audit %s/%s: not published by this run", campaignID, skuID)
	}
	a, err := cells.AuditSKU(ctx, cc.ledger, p, nil, cc.token)
	if err != nil {
		return AuditReport{}, fmt.Errorf("audit %s/%s: %w", campaignID, skuID, err)
	}
	report := AuditReport{SaleLimit: int64(a.SaleLimit), Available: int64(a.Free + a.NeverGranted),
		Reserved: int64(a.Reserved), Confirmed: int64(a.Sold), InvariantOK: a.OK, States: map[string]int64{}}
	problems := append([]string(nil), a.Problems...)
	for _, cell := range p.Map.Cells {
		c := a.Cells[cell]
		if c.WrittenOff > 0 {
			problems = append(problems, fmt.Sprintf("cell %s was written off (%d units lost with its disk)", cell, c.WrittenOff))
			report.InvariantOK = false
			continue
		}
		if !c.Reachable {
			problems = append(problems, fmt.Sprintf("cell %s unreachable (holds %d units): %s", cell, c.LedgerHeld, c.Error))
			report.InvariantOK = false
			continue
		}
		report.Available += int64(c.Available)
		for state, n := range c.States {
			report.States[state] += int64(n)
		}
	}
	for _, problem := range problems {
		b, _ := json.Marshal(problem)
		report.Violations = append(report.Violations, b)
	}
	return report, nil
}

// refunds gathers the refund lists of every cell of the SKU, each read at
// the address the cell announced in etcd.
func (cc *cellControl) refunds(ctx context.Context, campaignID, skuID string) ([]string, error) {
	p, ok := cc.published[campaignID+"/"+skuID]
	if !ok {
		return nil, fmt.Errorf("refunds %s/%s: not published by this run", campaignID, skuID)
	}
	var ids []string
	for _, cell := range p.Map.Cells {
		resp, err := cc.ledger.Client().Get(ctx, cc.ledger.AddrKey(cell))
		if err != nil {
			return nil, fmt.Errorf("refunds: address of cell %s: %w", cell, err)
		}
		if len(resp.Kvs) != 1 {
			return nil, fmt.Errorf("refunds: cell %s announced no address", cell)
		}
		client, err := NewClient(ClientOptions{Target: string(resp.Kvs[0].Value), AdminToken: cc.token})
		if err != nil {
			return nil, fmt.Errorf("refunds: cell %s: %w", cell, err)
		}
		got, err := client.Refunds(ctx, campaignID, skuID)
		client.CloseIdle()
		if err != nil {
			return nil, fmt.Errorf("cell %s: %w", cell, err)
		}
		ids = append(ids, got...)
	}
	return ids, nil
}
