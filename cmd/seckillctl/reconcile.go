package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/ledger"
	"github.com/seckill/seckill/reconcile"
)

// runReconcile compares a campaign's reservations in seckill (a running
// seckilld's admin API, each cell of a cluster through etcd and the cells'
// admin APIs, or a data dir offline) with the order database
// of seckill-orders, and lists every difference by reservation_id and
// request_id with its repair (package reconcile). Exit 0 clean, 1
// differences, 2 usage or I/O.
func runReconcile(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("reconcile", flag.ContinueOnError)
	ordersURL := fs.String("orders", "", "the order database, postgres://...")
	campaign := fs.String("campaign", "", "campaign id")
	skuID := fs.String("sku", "", "one SKU only (default: every SKU of the campaign)")
	lag := fs.Duration("lag", 30*time.Second, "a reservation changed more recently than this may not have reached the orders yet: counted, not judged")
	asJSON := fs.Bool("json", false, "one JSON document instead of lines")
	server := fs.String("server", "", "URL of a running seckilld (its admin API)")
	token := fs.String("admin-token", "", "admin bearer token (default $SECKILL_ADMIN_TOKEN)")
	dataDir := fs.String("data-dir", "", "seckilld's data dir, read offline (instead of --server)")
	etcd := fs.String("etcd", "", "etcd endpoints of a cell cluster: read every cell of the campaign at the address it announced (instead of --server)")
	prefix := fs.String("etcd-prefix", ledger.DefaultPrefix, "the cells' ledger key prefix in etcd (with --etcd)")
	timeout := fs.Duration("timeout", 10*time.Minute, "bound of the whole comparison")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *token == "" {
		*token = os.Getenv("SECKILL_ADMIN_TOKEN")
	}
	sources := 0 // of seckill's side: --server, --etcd, --data-dir
	for _, f := range []string{*server, *etcd, *dataDir} {
		if f != "" {
			sources++
		}
	}
	if err := required("reconcile", flagGiven{"--orders", *ordersURL != ""}, flagGiven{"--campaign", *campaign != ""}); err != nil {
		return err
	}
	switch {
	case sources != 1:
		return usageError("reconcile reads seckill's side from --server URL or --etcd ENDPOINTS (with --admin-token), or --data-dir DIR: give one")
	case *dataDir == "" && *token == "":
		return usageError("reconcile --server and --etcd need --admin-token (or SECKILL_ADMIN_TOKEN)")
	case *lag < 0:
		return usageError("reconcile: --lag must not be negative")
	}
	if *server != "" {
		if err := client.CheckBaseURL(*server); err != nil { // before the orders are read
			return usageError("reconcile: --server: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	// The orders first, then seckill: a change seckill made in between is
	// recent there (within --lag) and its order merely behind.
	byID, err := reconcile.LoadOrders(ctx, *ordersURL, *campaign, *skuID)
	if err != nil {
		return fmt.Errorf("reconcile: orders: %w", err)
	}
	now := time.Now()
	var reservations []reconcile.Reservation
	var skus []reconcile.SKU
	var feeds map[string]*client.Client // by cell ("": one seckilld): where the events are
	clientOf := func(base string) (*client.Client, error) {
		return client.New(client.Options{BaseURL: base, AdminToken: *token})
	}
	switch {
	case *server != "":
		var c *client.Client
		if c, err = clientOf(*server); err != nil {
			return usageError("reconcile: --server: %v", err)
		}
		feeds = map[string]*client.Client{"": c}
		reservations, skus, err = reconcile.FromServer(ctx, c, *campaign, *skuID)
	case *etcd != "":
		var ec *clientv3.Client
		if ec, err = ledger.Dial(strings.Split(*etcd, ",")); err != nil {
			return fmt.Errorf("reconcile: --etcd: %w", err)
		}
		defer ec.Close()
		reservations, skus, feeds, err = reconcile.FromCells(ctx, ledger.New(ec, *prefix), clientOf, *token, *campaign, *skuID)
	default:
		reservations, skus, err = seckillOffline(*dataDir, *campaign, *skuID)
	}
	if err != nil {
		return fmt.Errorf("reconcile: %w", err) // a client error names seckill itself; an offline one its data dir
	}
	r := reconcile.Compare(*campaign, *skuID, reservations, skus, byID, *lag, now)
	if r.SetApart, err = reconcile.LoadSetApart(ctx, *ordersURL, *campaign, *skuID); err != nil {
		return fmt.Errorf("reconcile: orders set apart: %w", err)
	}
	if feeds != nil { // online: each repair by the ids of the events it re-delivers
		err := reconcile.NameEvents(ctx, &r, func(cell string) (*client.Client, error) {
			if c := feeds[cell]; c != nil {
				return c, nil
			}
			if len(feeds) == 1 { // one seckilld, or a campaign local to one cell
				for _, c := range feeds {
					return c, nil
				}
			}
			return nil, fmt.Errorf("no cell %s among the campaign's in etcd", cell)
		})
		if err != nil {
			return fmt.Errorf("reconcile: seckill's feed: %w", err)
		}
	}
	if *asJSON {
		err = writeJSON(stdout, r)
	} else {
		err = writeReconcile(stdout, r)
	}
	if err != nil {
		return err
	}
	if !r.Clean {
		return &checkFailed{msg: fmt.Sprintf("reconcile: %d difference(s) between seckill and the orders of campaign %s", len(r.Differences), *campaign)}
	}
	return nil
}

// seckillOffline rebuilds each SKU of the campaign from its data dir (the
// recovery rule seckilld uses).
func seckillOffline(dataDir, campaignID, skuID string) ([]reconcile.Reservation, []reconcile.SKU, error) {
	dirs := []skudir.Dir{skudir.Of(dataDir, campaignID, skuID)}
	if skuID == "" {
		all, err := skudir.List(dataDir)
		if err != nil {
			return nil, nil, err
		}
		dirs = dirs[:0]
		for _, d := range all {
			if c, _ := d.IDs(); c == campaignID {
				dirs = append(dirs, d)
			}
		}
	}
	var reservations []reconcile.Reservation
	var skus []reconcile.SKU
	for _, dir := range dirs {
		st, err := loadState(dir.String(), loadOptions{})
		if err != nil {
			return nil, nil, err
		}
		def, counts := st.m.Definition(), st.m.Counts()
		if def.CampaignID != campaignID {
			continue // not a SKU (a folder left by hand)
		}
		skus = append(skus, reconcile.SKU{SKUID: def.SKUID, SaleLimit: int64(counts.SaleLimit), Available: int64(counts.Available),
			Reserved: int64(counts.Reserved), Confirmed: int64(counts.Confirmed), Cell: def.Cell, Granted: int64(counts.Granted), Returned: int64(counts.Returned)})
		for seq := uint32(1); seq <= counts.Reservations; seq++ {
			v, ok := st.m.Get(seq)
			if !ok {
				continue
			}
			row := feed.NewExportRow(v) // what the export would say of v's amount and token
			reservations = append(reservations, reconcile.Reservation{ReservationID: v.ReservationID, RequestID: v.RequestID, UserID: v.UserID,
				SKUID: def.SKUID, TokenID: v.TokenID, State: v.State.String(), PaymentID: v.PaymentID, Amount: row.Amount,
				TokenReleased: row.TokenReleased, CreatedAt: millis(v.CreatedAt),
				ChangedAt: reconcile.Latest(millis(v.CreatedAt), millis(v.PaidAt), millis(v.ClosedAt)), Refunds: slices.Clone(v.RefundPayments)})
		}
	}
	if len(skus) == 0 {
		return nil, nil, fmt.Errorf("no SKU of campaign %s in %s", campaignID, dataDir)
	}
	return reservations, skus, nil
}

func millis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// writeReconcile prints the differences one a line, then the totals and
// the verdict.
func writeReconcile(w io.Writer, r reconcile.Report) error {
	var b strings.Builder
	for _, d := range r.Differences {
		fmt.Fprintf(&b, "%s reservation %s request %s sku %s: seckill %s; orders %s\n    repair: %s\n",
			d.Kind, orDash(d.ReservationID), orDash(d.RequestID), orDash(d.SKUID), d.Seckill, d.Orders, d.Repair)
	}
	for _, t := range r.Totals {
		fmt.Fprintf(&b, "totals sku %s: sale_limit %d = available %d + reserved %d + confirmed %d (%s); seckill reservations %s; orders %s\n",
			t.SKUID, t.SaleLimit, t.Available, t.Reserved, t.Confirmed, map[bool]string{true: "holds", false: "DOES NOT HOLD"}[t.Balanced],
			counts(t.Seckill), counts(t.Orders))
	}
	var setApart, withMoney int64
	for _, s := range r.SetApart {
		fmt.Fprintf(&b, "set apart sku %s: %s %d (%d with money to settle)\n", s.SKUID, s.Reason, s.Rows, s.WithMoney)
		setApart, withMoney = setApart+s.Rows, withMoney+s.WithMoney
	}
	verdict := "clean"
	if !r.Clean {
		verdict = fmt.Sprintf("%d difference(s)", len(r.Differences))
	}
	if setApart > 0 {
		verdict += fmt.Sprintf("; %d rows set apart by re-anchorings after restores (diverged_orders, diverged_refunds), %d with money for the payment team to settle",
			setApart, withMoney)
	}
	fmt.Fprintf(&b, "campaign %s: %d reservations compared, %d in flight (changed within %s), %s\n", r.CampaignID, r.Compared, r.InFlight, r.Lag, verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

func counts(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
