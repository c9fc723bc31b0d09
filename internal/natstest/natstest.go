// Package natstest runs a NATS server with JetStream in process for
// tests, on 127.0.0.1 and a temporary store of the test's own.
package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Start runs a NATS server with JetStream until the test ends and returns
// a connection to it (closed when the test ends).
func Start(t testing.TB) *nats.Conn {
	t.Helper()
	return StartOn(t, -1)
}

// StartOn is Start on 127.0.0.1:port (-1: a free port), for a test that
// starts a client before its server.
func StartOn(t testing.TB, port int) *nats.Conn {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(20 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(ns.Shutdown)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// StartJetStream is Start with a JetStream context of the connection.
func StartJetStream(t testing.TB) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc := Start(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}
