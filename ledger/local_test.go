package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/etcdtest"
)

// TestClaimLocal: against a real etcd, a campaign is claimed locally by
// one cell or published, never both: a SKU published before the routing
// key existed (Publish alone writes none) is seen by its keys; a second
// cell's claim and a publish over a claim name the cell; a claim is
// idempotent for its cell; and claims and publishes of one campaign sent
// at the same instant end with either one claim and no ledger, or
// ledgers and no claim.
func TestClaimLocal(t *testing.T) {
	l := newLedger(t, etcdtest.Start(t).Endpoint)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := l.Publish(ctx, SKU{"x", "a"}, 10, 5, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.ClaimLocal(ctx, "x", "c1"); !errors.Is(err, ErrPublished) {
		t.Fatalf("claim of a published campaign without a routing key: %v", err)
	}
	if err := l.ClaimLocal(ctx, "xy", "c1"); err != nil { // a prefix of another campaign is not it
		t.Fatalf("claim of xy: %v", err)
	}
	if err := l.ClaimLocal(ctx, "y", "c1"); err != nil {
		t.Fatal(err)
	}
	if err := l.ClaimLocal(ctx, "y", "c1"); err != nil {
		t.Fatalf("a claim again by its cell: %v", err)
	}
	var local *LocalError
	if err := l.ClaimLocal(ctx, "y", "c2"); !errors.As(err, &local) || local.Cell != "c1" {
		t.Fatalf("a second cell's claim: %v", err)
	}
	if _, err := l.Publish(ctx, SKU{"y", "a"}, 10, 5, []InitialGrant{{Cell: "c2", Units: 3}}); !errors.As(err, &local) || local.Cell != "c1" {
		t.Fatalf("publish over a claim: %v", err)
	}
	if _, err := l.Read(ctx, SKU{"y", "a"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a ledger after a refused publish: %v", err)
	}

	for round := range 10 {
		campaign := fmt.Sprintf("z%d", round)
		var wg sync.WaitGroup
		gate := make(chan struct{})
		claims, publishes := make([]error, 4), make([]error, 4)
		for i := range 4 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-gate
				claims[i] = l.ClaimLocal(ctx, campaign, fmt.Sprintf("c%d", i+1))
			}()
			go func() {
				defer wg.Done()
				<-gate
				_, publishes[i] = l.Publish(ctx, SKU{campaign, fmt.Sprintf("s%d", i)}, 10, 5, nil)
			}()
		}
		close(gate)
		wg.Wait()
		claimed, published := 0, 0
		for i := range 4 {
			if claims[i] == nil {
				claimed++
			} else if !errors.As(claims[i], &local) && !errors.Is(claims[i], ErrPublished) {
				t.Fatalf("%s: claim: %v", campaign, claims[i])
			}
			if publishes[i] == nil {
				published++
			} else if !errors.As(publishes[i], &local) {
				t.Fatalf("%s: publish: %v", campaign, publishes[i])
			}
		}
		if claimed > 1 || (claimed == 1) == (published > 0) {
			t.Fatalf("%s: %d claims and %d publishes succeeded", campaign, claimed, published)
		}
	}
}
