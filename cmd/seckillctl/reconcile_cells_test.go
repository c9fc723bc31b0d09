package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
	"github.com/seckill/seckill/orders/orderstest"
	"github.com/seckill/seckill/reconcile"
)

// A campaign sold by two cells (a real etcd, two seckilld processes run
// as cells c1 and c2, both SKUs published over them): seckill-orders
// --etcd consumes each cell's feed (a cursor per cell), seckillctl
// reconcile --etcd reads every cell through its admin API and reconciles
// clean, with the cluster's totals balanced; a row of a c2 reservation
// deleted from orders is named, with its events' ids, and the printed
// repair, run with --etcd, makes it clean again. A campaign defined
// locally on one cell is read from that cell.
func TestReconcileCells(t *testing.T) {
	t.Parallel()
	cl := orderstest.StartCells(t, seckilldtest.Build(t, raceEnabled), "rcc")
	ordersBin := ordersBinary(t)
	ctx := context.Background()
	orderstest.Sale(t, cl.Client(t), "rcc", 0, 60)

	db := orderstest.Database(t)
	cmd := exec.Command(ordersBin, "--database", db, "--etcd", cl.Etcd.Endpoint, "--campaign", "rcc", "--admin-token", orderstest.Token,
		"--metrics-addr", "127.0.0.1:0", "--wait", "1s", "--log-level", "warn")
	logs, err := os.Create(filepath.Join(t.TempDir(), "seckill-orders.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
		if b, _ := os.ReadFile(logs.Name()); t.Failed() {
			t.Logf("seckill-orders' stderr:\n%s", b)
		}
	})

	args := []string{"--orders", db, "--campaign", "rcc", "--etcd", cl.Etcd.Endpoint, "--admin-token", orderstest.Token, "--lag", "0s"}
	waitClean := func(what string) reconcile.Report {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
			status, r, stderr := reconcileRun(t, args...)
			if status == exitOK {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: never clean: exit %d, %+v; %s", what, status, r.Differences, stderr)
			}
		}
	}
	r := waitClean("the sale")
	if r.Compared == 0 || len(r.Totals) != 2 {
		t.Fatalf("clean report %+v", r)
	}
	for _, tot := range r.Totals {
		if !tot.Balanced || tot.SaleLimit != 80 || tot.Available+tot.Reserved+tot.Confirmed != 80 {
			t.Fatalf("totals %+v: want the cluster's sale_limit 80 balanced", tot)
		}
	}

	// c2 restarted on another port (it announces it in etcd): the order
	// service consumes it at its new address, from its saved cursor.
	cl.Restart(t, "c2")
	orderstest.Sale(t, cl.Client(t), "rcc", 60, 100)
	if moved := waitClean("after c2 moved"); moved.Compared <= r.Compared {
		t.Fatalf("after c2 moved: %d reservations compared, %d before", moved.Compared, r.Compared)
	}
	if b, _ := os.ReadFile(logs.Name()); !strings.Contains(string(b), `msg="orders: a cell moved: consuming it at its new address" cell=c2`) {
		t.Fatalf("seckill-orders did not say that c2 moved:\n%s", b)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("seckill-orders after SIGTERM: %v", err)
	}

	if consumers := orderstest.Consumers(t, db); consumers != "feed:rcc@c1,feed:rcc@c2" {
		t.Fatalf("consumers %s, want one per cell", consumers)
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var paid string
	if err := conn.QueryRow(ctx, `SELECT reservation_id FROM orders WHERE state = 'PAID' AND reservation_id LIKE '%~c2~%'
    AND reservation_id NOT IN (SELECT reservation_id FROM order_refunds) ORDER BY reservation_id LIMIT 1`).Scan(&paid); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM orders WHERE reservation_id = $1`, paid); err != nil {
		t.Fatal(err)
	}
	status, r, stderr := reconcileRun(t, args...)
	if status != exitFailed {
		t.Fatalf("a deleted row: exit %d; %s", status, stderr)
	}
	only(t, r, paid, reconcile.MissingOrder, reconcile.TokenNotInOrders)
	d := r.Differences[0]
	var types []string
	if err := conn.QueryRow(ctx, `SELECT array_agg(type ORDER BY seckill_index) FROM order_events WHERE source = $1 AND id = ANY($2)`,
		d.Source, d.Events).Scan(&types); err != nil || strings.Join(types, ",") != client.TypeReservationCreated+","+client.TypeReservationPaid {
		t.Fatalf("the repair of %s names events %v of types %v (%v)", paid, d.Events, types, err)
	}
	runRepair(t, ordersBin, d, "SECKILL_ORDERS_DATABASE="+db, "SECKILL_ORDERS_ETCD="+cl.Etcd.Endpoint, "SECKILL_ORDERS_ADMIN_TOKEN="+orderstest.Token)
	if status, r, stderr := reconcileRun(t, args...); status != exitOK {
		t.Fatalf("after the repair: exit %d, %+v; %s", status, r.Differences, stderr)
	}
	if sku.ReservationCell(paid) != "c2" {
		t.Fatalf("reservation %s is not c2's", paid)
	}

	// A campaign defined locally on c1 (through its admin API: c1 claims
	// it in etcd) is read from c1 alone; with no orders yet, each of its
	// reservations is missing, and a printed repair, run with --etcd,
	// takes the events from c1.
	local, err := client.New(client.Options{BaseURL: cl.URLs["c1"], AdminToken: orderstest.Token})
	if err != nil {
		t.Fatal(err)
	}
	orderstest.Define(t, local, "rloc", 10)
	orderstest.Sale(t, local, "rloc", 0, 4)
	localArgs := []string{"--orders", db, "--campaign", "rloc", "--etcd", cl.Etcd.Endpoint, "--admin-token", orderstest.Token, "--lag", "0s"}
	status, r, stderr = reconcileRun(t, localArgs...)
	if status != exitFailed || r.Compared != 4 || len(r.Totals) != 2 || r.Differences[0].Kind != reconcile.MissingOrder || len(r.Differences[0].Events) == 0 {
		t.Fatalf("a local campaign with no orders: exit %d, %+v; %s", status, r, stderr)
	}
	runRepair(t, ordersBin, r.Differences[0], "SECKILL_ORDERS_DATABASE="+db, "SECKILL_ORDERS_ETCD="+cl.Etcd.Endpoint, "SECKILL_ORDERS_ADMIN_TOKEN="+orderstest.Token)
	if _, after, _ := reconcileRun(t, localArgs...); after.Compared != 4 || slices.ContainsFunc(after.Differences, func(d reconcile.Difference) bool {
		return d.ReservationID == r.Differences[0].ReservationID
	}) {
		t.Fatalf("after the repair of %s: %+v", r.Differences[0].ReservationID, after.Differences)
	}

	// --etcd is one of the three sources.
	if status, _, _ := reconcileRun(t, append(args, "--server", cl.URLs["c1"])...); status != exitUsage {
		t.Fatalf("--etcd with --server: exit %d, want 2", status)
	}
}
