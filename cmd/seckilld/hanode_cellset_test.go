package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestReplicaOfACellNeedsCell: a replica started without --cell into a
// replica set named as a cell that holds an epoch in etcd is refused at
// start, naming --cell (it would join the cell's sync set and could never
// lead); with --cell, or into a set that is no cell, it starts.
func TestReplicaOfACellNeedsCell(t *testing.T) {
	_, l := startLedger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := l.BumpEpoch(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	check := func(args ...string) error {
		t.Helper()
		opts, err := parseOptions(append([]string{"--data-dir", t.TempDir(), "--admin-token", "tok", "--etcd", "unused:1",
			"--replica", "b", "--replication-addr", "127.0.0.1:0"}, args...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return checkSetIsNoCell(l, opts, quiet)
	}
	if err := check("--replica-set", "c1"); err == nil || !strings.Contains(err.Error(), "--cell c1") {
		t.Fatalf("a replica of cell c1's set without --cell: %v, want refused naming --cell c1", err)
	}
	if err := check("--cell", "c1"); err != nil {
		t.Fatalf("a replica of cell c1 with --cell: %v", err)
	}
	if err := check("--replica-set", "rs1"); err != nil {
		t.Fatalf("a replica of a set that is no cell: %v", err)
	}
}
