package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/cells"
)

// TestCellRefusesACelledSKUItHasNoMapFor: with etcd down at start a cell
// enforces the maps of its cells.json; a celled SKU its data dir holds
// that the cache lacks (a replica of the cell's set copies every SKU's log,
// but writes cells.json only while it leads, so a standby promoted while
// etcd does not answer may hold an older one) would be sold with no guard,
// to the users of every cell. The start is refused instead, naming the
// SKU. Started, the cell took a reserve of another cell's user.
func TestCellRefusesACelledSKUItHasNoMapFor(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := actors.Open(actors.Config{DataDir: dir, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	m, err := cells.EvenMap(1, []string{"c1", "c2"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var pubs []cells.Published
	for _, id := range []string{"sku-1", "sku-2"} {
		d := sku.Definition{CampaignID: "demo", SKUID: id, StartAt: now.Add(-time.Second).UnixMilli(), EndAt: now.Add(time.Hour).UnixMilli(),
			PaymentWindowMs: 60_000, SaleLimit: 100, ReleaseOnClose: true}
		p := cells.Published{Definition: d, Map: m}
		if err := e.Define(context.Background(), p.ForCell("c1")); err != nil {
			t.Fatal(err)
		}
		pubs = append(pubs, p)
	}
	// The cache knows sku-1 only; etcd does not answer (nothing listens on port 1).
	if err := savePublished(filepath.Join(dir, cellsFile), pubs[:1]); err != nil {
		t.Fatal(err)
	}
	rt, err := startCell(e, cellOptions{id: "c1", etcd: "127.0.0.1:1", etcdPrefix: "/t"}, dir, nil, log)
	if err == nil {
		defer rt.stop()
		var other string
		for u := 0; other == ""; u++ {
			if user := fmt.Sprintf("u%d", u); pubs[1].CellOf(user) == "c2" {
				other = user
			}
		}
		t.Fatalf("started with sku-2 unguarded: c2's user %s at c1: %v", other, rt.guard.CheckCell("demo", "sku-2", other))
	}
	if !strings.Contains(err.Error(), "demo/sku-2") {
		t.Fatalf("the refusal does not name the SKU: %v", err)
	}
}
