package main

import (
	"context"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/orders/orderstest"
)

// TestWaitsForPostgreSQL: seckill-orders started before its PostgreSQL
// takes connections waits for it (it logs so), then migrates the schema
// and learns every sale; PostgreSQL's own refusal (a database that does
// not exist) ends it at once, for an operator to fix.
func TestWaitsForPostgreSQL(t *testing.T) {
	c := orderstest.Seckill(t)
	db := orderstest.Database(t)
	orderstest.Define(t, c, "pglate", 30)
	orderstest.Sale(t, c, "pglate", 0, 10)
	target, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	// The database's address, as the order service is told it before
	// PostgreSQL is up.
	port := holdPort(t)
	late := *target
	late.Host = port.addr()
	b := runInBackground(t, "--database", late.String(), "--feed", c.BaseURL(), "--admin-token", orderstest.Token,
		"--campaign", "pglate", "--metrics-addr", "127.0.0.1:0", "--wait", "1s")
	b.waitFor(&b.errOut, "PostgreSQL unreachable", "without PostgreSQL")
	// PostgreSQL comes up at that address (a forwarder to the test's
	// server).
	port.forwardTo(target.Host)
	b.waitFor(&b.out, serving, "once PostgreSQL was up")
	orderstest.Sale(t, c, "pglate", 10, 20)
	orderstest.WaitClean(t, c, db, "pglate")

	// PostgreSQL's own answer is not waited out.
	wrong := *target
	wrong.Path = "/no_such_database"
	rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = run(rctx, []string{"--database", wrong.String(), "--feed", c.BaseURL(), "--admin-token", orderstest.Token,
		"--campaign", "pglate", "--metrics-addr", "127.0.0.1:0"}, io.Discard, io.Discard)
	if err == nil || rctx.Err() != nil || !strings.Contains(err.Error(), "no_such_database") {
		t.Fatalf("a database that does not exist: %v (context: %v), want its error at once", err, rctx.Err())
	}
}

// A metrics port another process holds is said at once, before
// PostgreSQL is waited for: here PostgreSQL never comes up, and the
// service must still stop with the port's error, not wait for it.
func TestATakenMetricsPortIsSaidBeforePostgreSQL(t *testing.T) {
	taken := holdPort(t) // the metrics port, held by "another process"
	down := holdPort(t)  // a PostgreSQL that is not up
	rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := run(rctx, []string{"--database", "postgres://orders@" + down.addr() + "/orders", "--feed", "http://127.0.0.1:1",
		"--campaign", "c", "--admin-token", "t", "--metrics-addr", taken.addr()}, io.Discard, io.Discard)
	if err == nil || rctx.Err() != nil || !strings.Contains(err.Error(), "--metrics-addr") {
		t.Fatalf("a taken metrics port: %v (context: %v), want its error at once", err, rctx.Err())
	}
}
