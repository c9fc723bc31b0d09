package orderstest

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/ledger"
)

// CellIDs are the cells of StartCells.
var CellIDs = []string{"c1", "c2"}

// Cells is a campaign sold by two cells: a real etcd, two seckilld
// processes run as cells c1 and c2 (each on a data dir of its own), and
// every SKU of SKUs published over both (80 units, 40 granted to each
// cell up front, top-ups of 5), each cell having taken them.
type Cells struct {
	Etcd   *etcdtest.Server
	Ledger *ledger.Ledger    // the test's own link to etcd
	URLs   map[string]string // base URL, by cell
	bin    string            // seckilld
	dirs   map[string]string // data dir, by cell
	procs  map[string]*seckilldtest.Daemon
}

// StartCells starts etcd and the cells (the seckilld binary at bin, admin
// token Token), publishes campaignID's SKUs over them and returns once
// both cells have defined every SKU.
func StartCells(t testing.TB, bin, campaignID string) *Cells {
	t.Helper()
	c := &Cells{Etcd: etcdtest.Start(t), URLs: map[string]string{}, bin: bin, dirs: map[string]string{}, procs: map[string]*seckilldtest.Daemon{}}
	for _, cell := range CellIDs {
		c.dirs[cell] = t.TempDir()
		c.start(t, cell)
	}
	ec, err := ledger.Dial([]string{c.Etcd.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ec.Close() })
	c.Ledger = ledger.New(ec, ledger.DefaultPrefix)
	m, err := cells.EvenMap(1, CellIDs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	now := time.Now()
	for _, s := range SKUs {
		d := sku.Definition{CampaignID: campaignID, SKUID: s, StartAt: now.Add(-time.Minute).UnixMilli(), EndAt: now.Add(time.Hour).UnixMilli(),
			PaymentWindowMs: sku.DefaultPaymentWindowMs, SaleLimit: 80, ReleaseOnClose: true}
		if _, err := cells.Publish(ctx, c.Ledger, d, m, 5, []ledger.InitialGrant{{Cell: "c1", Units: 40}, {Cell: "c2", Units: 40}}); err != nil {
			t.Fatal(err)
		}
	}
	for cell, url := range c.URLs { // each cell takes the published SKUs within a second
		cc, err := client.New(client.Options{BaseURL: url, AdminToken: Token})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range SKUs {
			for _, err := cc.Audit(ctx, campaignID, s); err != nil; _, err = cc.Audit(ctx, campaignID, s) {
				if ctx.Err() != nil {
					t.Fatalf("cell %s never defined %s: %v", cell, s, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	return c
}

// start runs cell's seckilld on its data dir, on a free port.
func (c *Cells) start(t testing.TB, cell string) {
	t.Helper()
	d := seckilldtest.Start(t, c.bin, c.dirs[cell], nil, "--cell", cell, "--etcd", c.Etcd.Endpoint, "--admin-token", Token)
	c.URLs[cell], c.procs[cell] = d.Base, d
}

// Restart stops cell with SIGTERM and starts it again on its data dir,
// on another port, which it announces in etcd; URLs holds the new one.
func (c *Cells) Restart(t testing.TB, cell string) {
	t.Helper()
	if err := c.procs[cell].Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-c.procs[cell].Exited
	c.start(t, cell)
}

// Client returns a client of c1 that sends each reservation's calls to
// the cell its id names.
func (c *Cells) Client(t testing.TB) *client.Client {
	t.Helper()
	cc, err := client.New(client.Options{BaseURL: c.URLs["c1"], AdminToken: Token, Cells: c.URLs})
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// Consumers returns the consumers that hold a cursor in the orders
// database at dbURL, sorted and comma-separated: one a cell's feed or
// stream when seckill-orders consumes cells.
func Consumers(t testing.TB, dbURL string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var consumers []string
	if err := conn.QueryRow(ctx, `SELECT array_agg(consumer ORDER BY consumer) FROM order_cursors`).Scan(&consumers); err != nil {
		t.Fatal(err)
	}
	return strings.Join(consumers, ",")
}
