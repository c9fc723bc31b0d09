package main

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seckill/seckill/orders/orderstest"
)

// A PostgreSQL that is starting, recovering after a crash (a backend
// killed: every connection is refused meanwhile) or shutting down answers
// each connection FATAL 57P03 cannot_connect_now ("the database system is
// in recovery mode"): it is not up yet, and the service waits for it as
// for one that does not answer at all. PostgreSQL's refusal for good (here
// 28000, no pg_hba.conf entry) is not waited out. A server speaking the
// protocol answers the first connections 57P03, then 28000.
func TestMigrationWaitsForAPostgreSQLInRecovery(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const recovering = 2 // connections answered 57P03
	var connections atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			n := connections.Add(1)
			go refuse(conn, n <= recovering)
		}
	}()
	pool, err := pgxpool.New(context.Background(), "postgres://seckill@"+ln.Addr().String()+"/orders?sslmode=disable&connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = migrateWhenUp(ctx, pool, orderstest.Quiet)
	var refused *pgconn.PgError
	if !errors.As(err, &refused) || refused.Code != "28000" || connections.Load() <= recovering {
		t.Fatalf("migrateWhenUp returned %v after %d connections, want the 28000 refusal after the %d answered 57P03", err, connections.Load(), recovering)
	}
}

// refuse reads a connection's startup message and answers it with a FATAL
// error: 57P03 while recovering, else 28000.
func refuse(conn net.Conn, recovering bool) {
	defer conn.Close()
	be := pgproto3.NewBackend(conn, conn)
	for {
		msg, err := be.ReceiveStartupMessage()
		if err != nil {
			return
		}
		switch msg.(type) {
		case *pgproto3.SSLRequest, *pgproto3.GSSEncRequest:
			if _, err := conn.Write([]byte("N")); err != nil {
				return
			}
			continue
		}
		break
	}
	answer := &pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "28000",
		Message: `no pg_hba.conf entry for host "127.0.0.1"`}
	if recovering {
		answer.Code, answer.Message = "57P03", "the database system is in recovery mode"
	}
	be.Send(answer)
	_ = be.Flush()
}
