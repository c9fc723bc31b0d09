package main

import (
	"context"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/lockedbuf"
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
	// A port nothing listens on yet: the database's address, as the order
	// service is told it before PostgreSQL is up.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	late := *target
	late.Host = addr

	ctx, stop := context.WithCancel(context.Background())
	var out, errOut lockedbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--database", late.String(), "--feed", c.BaseURL(), "--admin-token", orderstest.Token,
			"--campaign", "pglate", "--metrics-addr", "127.0.0.1:0", "--wait", "1s"}, &out, &errOut)
	}()
	defer func() {
		stop()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("seckill-orders: %v", err)
		}
	}()
	for !strings.Contains(errOut.String(), "PostgreSQL unreachable") {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("seckill-orders stopped without PostgreSQL: %v\n%s", err, errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	// PostgreSQL comes up at that address (a forwarder to the test's
	// server).
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go forward(ln, target.Host)
	for !strings.Contains(out.String(), "seckill-orders metrics on ") { // migrated, consuming
		select {
		case err := <-done:
			done <- err
			t.Fatalf("seckill-orders stopped once PostgreSQL was up: %v\n%s", err, errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
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

// forward copies each connection ln accepts to and from to.
func forward(ln net.Listener, to string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			d, err := net.Dial("tcp", to)
			if err != nil {
				return
			}
			defer d.Close()
			go io.Copy(d, c)
			io.Copy(c, d)
		}()
	}
}
