package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/replica"
)

// fakeKeys is the set's pending keys in memory; err fails every write.
type fakeKeys struct {
	kept    map[string][]byte
	err     error
	deletes int
}

func (f *fakeKeys) PutPending(_ context.Context, _ replica.Holding, key string, value []byte) error {
	if f.err != nil {
		return f.err
	}
	f.kept[key] = value
	return nil
}

func (f *fakeKeys) DeletePending(_ context.Context, _ replica.Holding, key string) error {
	f.deletes++
	if f.err != nil {
		return f.err
	}
	delete(f.kept, key)
	return nil
}

func (f *fakeKeys) Pending(context.Context) ([]replica.PendingEntry, error) {
	var out []replica.PendingEntry
	for k, v := range f.kept {
		out = append(out, replica.PendingEntry{Key: k, Value: v})
	}
	return out, nil
}

func pendingDefs(n, idLen int) []sku.Definition {
	defs := make([]sku.Definition, n)
	for i := range defs {
		id := fmt.Sprintf("s%05d", i)
		if idLen > 0 {
			id = (rand.Text() + rand.Text())[:idLen]
		}
		defs[i] = sku.Definition{CampaignID: "big", SKUID: id, StartAt: 1, EndAt: 2, PaymentWindowMs: 60_000, SaleLimit: uint32(i + 1)}
	}
	return defs
}

// A primary's list goes to the set's keys compressed and comes back as
// it was put, named by the epoch; a list larger than etcd takes is
// refused as bad input before anything is written; a write etcd did not
// answer is removed again and reported as nothing applied
// (actors.ErrUnavailable, not an unknown result); a damaged value is
// listed with its error.
func TestSetPendingKeepsTheListInTheSetsKeys(t *testing.T) {
	keys := &fakeKeys{kept: map[string][]byte{}}
	s := setPending{keys: keys, h: replica.Holding{Name: "a", Epoch: 7}, timeout: time.Second}
	if s.Finisher() != actors.FinishedByNextPrimary {
		t.Fatal("a replica set's list would be said to be finished by this replica's next start")
	}
	defs := pendingDefs(25_000, 0) // the most SKUs a campaign PUT's body holds
	key, err := s.Put(defs)
	if err != nil {
		t.Fatal(err)
	}
	if v := keys.kept[key]; len(v) > maxPendingValue/8 {
		t.Fatalf("25,000 definitions take %d bytes in etcd", len(v))
	} else {
		t.Logf("25,000 definitions take %d bytes in etcd (%d encoded)", len(v), len(actors.EncodePending(defs)))
	}
	keys.kept["damaged"] = []byte("not deflate")
	lists, err := s.List(context.Background())
	if err != nil || len(lists) != 2 {
		t.Fatalf("List: %v, %v", lists, err)
	}
	for _, l := range lists {
		switch l.Key {
		case key:
			if l.Err != nil || len(l.Defs) != len(defs) || l.Defs[24_999] != defs[24_999] {
				t.Fatalf("the list read back: %d definitions, %v", len(l.Defs), l.Err)
			}
		case "damaged":
			if l.Err == nil {
				t.Fatal("a damaged value read back without an error")
			}
		}
	}
	if err := s.Remove(key); err != nil || keys.kept[key] != nil {
		t.Fatalf("Remove: %v", err)
	}

	before := len(keys.kept)
	if _, err := s.Put(pendingDefs(60_000, 32)); !errors.Is(err, actors.ErrInvalidArgument) || len(keys.kept) != before {
		t.Fatalf("a list too large for etcd: %v, %d kept", err, len(keys.kept))
	}
	keys.err = context.DeadlineExceeded
	if _, err := s.Put(defs[:2]); !errors.Is(err, actors.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || keys.deletes != 2 {
		t.Fatalf("a put etcd did not answer: %v, %d deletes", err, keys.deletes)
	}
}
