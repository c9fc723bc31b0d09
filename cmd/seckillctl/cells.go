package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/ledger"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The control plane of celled SKUs (package cells): seckillctl is a
// command, not a daemon; it is never on a request's path.

// runCells runs "cells publish", "cells return" and "cells write-off".
func runCells(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError("cells: publish, return or write-off")
	}
	switch args[0] {
	case "publish":
		return runCellsPublish(args[1:], stdout)
	case "return":
		return runCellsReturn(args[1:], stdout)
	case "write-off":
		return runCellsWriteOff(args[1:], stdout)
	}
	return usageError("cells: unknown %q (publish, return or write-off)", args[0])
}

// ledgerFlags are the flags every command on the ledger takes: where etcd
// is, the ledger's key prefix, the campaign, and (withSKU) the SKU.
type ledgerFlags struct {
	etcd, prefix, campaign, sku *string
}

// addLedgerFlags registers --etcd, --etcd-prefix, --campaign and, with
// withSKU, --sku on fs.
func addLedgerFlags(fs *flag.FlagSet, withSKU bool) ledgerFlags {
	f := ledgerFlags{
		etcd:     fs.String("etcd", "", "etcd endpoints"),
		prefix:   fs.String("etcd-prefix", ledger.DefaultPrefix, "ledger key prefix"),
		campaign: fs.String("campaign", "", "campaign id"),
	}
	if withSKU {
		f.sku = fs.String("sku", "", "SKU id")
	}
	return f
}

// namedID is an id flag's name, as the user types it, and its value.
type namedID struct{ name, value string }

// named returns --campaign, --sku and --cell (cell) with their values.
func (f ledgerFlags) named(cell string) []namedID {
	return []namedID{{"--campaign", *f.campaign}, {"--sku", *f.sku}, {"--cell", cell}}
}

// validIDs is the usage error of cmd for the first of ids that is not an
// id (sku.ValidID: what the ledger's keys and the cells take), or nil, so
// that it is refused before etcd is asked.
func validIDs(cmd string, ids ...namedID) error {
	for _, id := range ids {
		if !sku.ValidID(id.value) {
			return usageError("%s: %s %q is not an id", cmd, id.name, id.value)
		}
	}
	return nil
}

// skuOf returns the SKU the flags name.
func (f ledgerFlags) skuOf() ledger.SKU { return ledger.SKU{Campaign: *f.campaign, SKU: *f.sku} }

// etcdProbeTimeout bounds the first read of ledgerFlags.open.
const etcdProbeTimeout = 5 * time.Second

// open connects to the ledger, with a context of the command's timeout;
// done closes both.
func (f ledgerFlags) open(timeout time.Duration) (*ledger.Ledger, context.Context, func(), error) {
	if *f.etcd == "" {
		return nil, nil, nil, usageError("--etcd is required")
	}
	c, err := ledger.Dial(strings.Split(*f.etcd, ","))
	if err != nil {
		return nil, nil, nil, err
	}
	// One read first, bounded apart from the command's timeout: an etcd
	// that is down or mistyped is then said in those terms within
	// seconds, not as the command's own deadline running out.
	probe, cancelProbe := context.WithTimeout(context.Background(), etcdProbeTimeout)
	_, err = c.Get(probe, *f.prefix, clientv3.WithCountOnly())
	cancelProbe()
	if err != nil {
		c.Close()
		return nil, nil, nil, fmt.Errorf("etcd at %s did not answer within %v: %w", *f.etcd, etcdProbeTimeout, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	return ledger.New(c, *f.prefix), ctx, func() { cancel(); c.Close() }, nil
}

func runCellsPublish(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("cells publish", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	lf := addLedgerFlags(fs, true)
	saleLimit := fs.Uint("sale-limit", 0, "units of the whole SKU")
	cellList := fs.String("cells", "", "cell ids, comma-separated")
	initial := fs.Uint("initial", 0, "units each cell is granted up front (allocation 1)")
	chunk := fs.Uint("chunk", 50, "units of one top-up")
	start := fs.String("start", "", "start_at, RFC 3339 (default: now)")
	end := fs.String("end", "", "end_at, RFC 3339 (default: start + 24h)")
	window := fs.Duration("payment-window", 15*time.Minute, "payment window")
	release := fs.Bool("release-on-close", true, "a closed unpaid reservation's token goes back to the pool")
	scope := fs.String("purchase-limit", "sku", `"sku" or "campaign" (one live purchase per user over the campaign's SKUs; they must then share --cells)`)
	if err := fs.Parse(args); err != nil {
		return usageError("cells publish: %v", err)
	}
	if err := required("cells publish", flagGiven{"--campaign", *lf.campaign != ""}, flagGiven{"--sku", *lf.sku != ""},
		flagGiven{"--sale-limit", *saleLimit != 0}, flagGiven{"--cells", *cellList != ""}); err != nil {
		return err
	}
	// The ledger and the definition hold units in 32 bits: a larger figure
	// must be refused, not cut (4294967306 would publish 10).
	if *saleLimit > sku.MaxSaleLimit || *chunk > sku.MaxSaleLimit {
		return usageError("cells publish: --sale-limit and --chunk must be at most %d", sku.MaxSaleLimit)
	}
	limit, ok := sku.ParsePurchaseLimit(*scope)
	if !ok {
		return usageError(`--purchase-limit must be "sku" or "campaign"`)
	}
	startAt, endAt := time.Now(), time.Time{}
	var err error
	if *start != "" {
		if startAt, err = time.Parse(time.RFC3339, *start); err != nil {
			return usageError("--start: %v", err)
		}
	}
	if endAt = startAt.Add(24 * time.Hour); *end != "" {
		if endAt, err = time.Parse(time.RFC3339, *end); err != nil {
			return usageError("--end: %v", err)
		}
	}
	ids := strings.Split(*cellList, ",")
	m, err := cells.EvenMap(1, ids)
	if err != nil {
		return usageError("--cells: %v", err)
	}
	d := sku.Definition{CampaignID: *lf.campaign, SKUID: *lf.sku, StartAt: startAt.UnixMilli(), EndAt: endAt.UnixMilli(),
		PaymentWindowMs: window.Milliseconds(), SaleLimit: uint32(*saleLimit), ReleaseOnClose: *release, PurchaseLimit: limit}
	if err := d.ValidateNew(); err != nil {
		return usageError("%v", err)
	}
	if *chunk == 0 || uint64(*initial)*uint64(len(ids)) > uint64(*saleLimit) {
		return usageError("--chunk must be positive and --initial × cells at most --sale-limit")
	}
	var grants []ledger.InitialGrant
	for _, c := range ids {
		grants = append(grants, ledger.InitialGrant{Cell: c, Units: uint32(*initial)})
	}
	l, ctx, done, err := lf.open(10 * time.Second)
	if err != nil {
		return err
	}
	defer done()
	allocs, err := cells.Publish(ctx, l, d, m, uint32(*chunk), grants)
	var local *ledger.LocalError
	switch { // exit 1: refused by what etcd holds, nothing published
	case errors.As(err, &local):
		return &checkFailed{msg: fmt.Sprintf("cells publish %s/%s refused: %v; nothing was published. Its SKUs are sold by cell %s alone: publish under another campaign id",
			d.CampaignID, d.SKUID, err, local.Cell)}
	case errors.Is(err, ledger.ErrExists):
		// A repeat of a publish whose answer was lost lands here too: the
		// first attempt may have been the one that published it.
		return &checkFailed{msg: fmt.Sprintf("cells publish %s/%s refused: %v; this run published nothing (an earlier run did, "+
			"perhaps this command's own first attempt whose answer was lost: seckillctl audit --etcd … --campaign %s shows what is published)",
			d.CampaignID, d.SKUID, err, d.CampaignID)}
	case errors.Is(err, cells.ErrBadMap), errors.Is(err, sku.ErrInvalidDefinition):
		return &checkFailed{msg: fmt.Sprintf("cells publish %s/%s refused: %v; nothing was published", d.CampaignID, d.SKUID, err)}
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]any{"published": d.CampaignID + "/" + d.SKUID,
		"cells": ids, "cell_map_version": m.Version, "initial_allocations": allocs, "chunk": *chunk, "purchase_limit": limit.String()})
}

func runCellsReturn(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("cells return", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	lf := addLedgerFlags(fs, true)
	cell := fs.String("cell", "", "cell id")
	units := fs.Uint("units", 0, "units to give back, at most what is available")
	id := fs.Uint64("id", 0, "return seq, unique per cell (a repeat of an id is answered once)")
	if err := fs.Parse(args); err != nil {
		return usageError("cells return: %v", err)
	}
	if err := required("cells return", flagGiven{"--campaign", *lf.campaign != ""}, flagGiven{"--sku", *lf.sku != ""},
		flagGiven{"--cell", *cell != ""}, flagGiven{"--units", *units != 0}, flagGiven{"--id", *id != 0}); err != nil {
		return err
	}
	if err := validIDs("cells return", lf.named(*cell)...); err != nil {
		return err
	}
	// A return never exceeds what a cell was granted, at most a sale_limit.
	if *units > sku.MaxSaleLimit {
		return usageError("cells return: --units must be 1..%d", sku.MaxSaleLimit)
	}
	l, ctx, done, err := lf.open(10 * time.Second)
	if err != nil {
		return err
	}
	defer done()
	// Only a cell of the SKU's map reads its return request: one written
	// for another cell, or for a SKU never published, is never answered.
	if err := inCellMap(ctx, l, lf.skuOf(), *cell); err != nil {
		return err
	}
	if err := l.RequestReturn(ctx, lf.skuOf(), *cell, ledger.ReturnRequest{ID: *id, Units: uint32(*units)}); err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]any{"asked": *cell, "return_id": *id, "units": *units})
}

// runCellsWriteOff writes off a lost cell's outstanding quota of one SKU
// in the ledger (ledger.WriteOffCell): never granted, credited or resold
// again; the audit then counts it as written off.
func runCellsWriteOff(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("cells write-off", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	lf := addLedgerFlags(fs, true)
	cell := fs.String("cell", "", "the cell whose data dir is lost")
	if err := fs.Parse(args); err != nil {
		return usageError("cells write-off: %v", err)
	}
	if err := required("cells write-off", flagGiven{"--campaign", *lf.campaign != ""}, flagGiven{"--sku", *lf.sku != ""},
		flagGiven{"--cell", *cell != ""}); err != nil {
		return err
	}
	if err := validIDs("cells write-off", lf.named(*cell)...); err != nil {
		return err
	}
	l, ctx, done, err := lf.open(10 * time.Second)
	if err != nil {
		return err
	}
	defer done()
	if err := inCellMap(ctx, l, lf.skuOf(), *cell); err != nil {
		return err
	}
	w, err := l.WriteOffCell(ctx, lf.skuOf(), *cell, time.Now().UnixMilli())
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]any{"written_off": w, "campaign": *lf.campaign, "sku": *lf.sku})
}

// inCellMap is nil when cell is in the published cell map of SKU s; a
// usage error naming the map otherwise, or the error of a SKU etcd does
// not hold.
func inCellMap(ctx context.Context, l *ledger.Ledger, s ledger.SKU, cell string) error {
	m, err := cells.ReadMap(ctx, l, s)
	if err != nil {
		return fmt.Errorf("%s/%s: %w", s.Campaign, s.SKU, err)
	}
	if !m.Has(cell) {
		return usageError("cell %s is not in the cell map of %s/%s (%v)", cell, s.Campaign, s.SKU, m.Cells)
	}
	return nil
}

// runClusterAudit prints the ledger, each cell's counts and the
// conservation across cells of every celled SKU of a campaign.
func runClusterAudit(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	lf := addLedgerFlags(fs, false)
	cellURLs := fs.String("cells", "", "cell=URL,... (default: the addresses the cells announced in etcd)")
	token := fs.String("admin-token", os.Getenv("SECKILL_ADMIN_TOKEN"), "admin token of the cells")
	if err := fs.Parse(args); err != nil {
		return usageError("audit: %v", err)
	}
	if err := required("audit", flagGiven{"--campaign", *lf.campaign != ""}); err != nil {
		return err
	}
	urls := map[string]string{}
	if *cellURLs != "" {
		var err error
		if _, urls, err = cells.ParseAddrs(*cellURLs); err != nil {
			return usageError("audit: %v", err)
		}
	}
	l, ctx, done, err := lf.open(30 * time.Second)
	if err != nil {
		return err
	}
	defer done()
	pubs, err := cells.ReadPublished(ctx, l, "")
	if err != nil {
		return err
	}
	out := struct {
		Campaign string           `json:"campaign"`
		SKUs     []cells.SKUAudit `json:"skus"`
		OK       bool             `json:"ok"`
	}{Campaign: *lf.campaign, OK: true}
	for _, p := range pubs {
		if p.Definition.CampaignID != *lf.campaign {
			continue
		}
		a, err := cells.AuditSKU(ctx, l, p, urls, *token)
		if err != nil {
			return err
		}
		out.SKUs = append(out.SKUs, a)
		out.OK = out.OK && a.OK
	}
	if len(out.SKUs) == 0 {
		return fmt.Errorf("no celled SKU of campaign %q in etcd: seckillctl audit checks a campaign split over cells; "+
			"a campaign of one seckilld or of a replica set is audited by its primary: GET /admin/campaigns/%s/audit",
			*lf.campaign, *lf.campaign)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	if !out.OK {
		return &checkFailed{msg: "audit: the cells and the ledger disagree (see problems)"}
	}
	return nil
}
