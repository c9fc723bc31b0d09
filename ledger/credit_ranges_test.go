package ledger

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/etcdtest"
)

// A credit whose ranges are not sorted and disjoint is refused, on both
// stores, and changes nothing. Accepted, overlapping ranges credited their
// shared tokens twice (the pool's returned total counted them twice while
// its free list held them once: Check failed), and unsorted ones were
// stored as a return every later read refuses (decodeAllocation), so the
// cell's allocations, returns and the SKU's audit all answered ErrCorrupt
// from then on.
func TestCreditRefusesRangesItCouldNotReadBack(t *testing.T) {
	srv := etcdtest.Start(t)
	etcd := newLedger(t, srv.Endpoint)
	mem := NewMemory()
	stores := []struct {
		name    string
		l       contractLedger
		publish func(context.Context, SKU, uint32, uint32, []InitialGrant) ([]Allocation, error)
	}{
		{"etcd", etcd, func(ctx context.Context, s SKU, limit, chunk uint32, g []InitialGrant) ([]Allocation, error) {
			return etcd.Publish(ctx, s, limit, chunk, g)
		}},
		{"memory", mem, mem.Publish},
	}
	bad := map[string][]sku.TokenRange{
		"overlapping": {{First: 1, Last: 5}, {First: 3, Last: 7}},
		"unsorted":    {{First: 9, Last: 9}, {First: 2, Last: 2}},
		"reversed":    {{First: 7, Last: 3}},
		"token 0":     {{First: 0, Last: 2}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			ctx := ctxFor(t, 30*time.Second)
			if _, err := st.publish(ctx, demo, 100, 10, []InitialGrant{{Cell: "c1", Units: 20}}); err != nil {
				t.Fatal(err)
			}
			e, err := st.l.BumpEpoch(ctx, "c1")
			if err != nil {
				t.Fatal(err)
			}
			seq := uint64(0)
			for what, rs := range bad {
				seq++
				err := st.l.Credit(ctx, demo, "c1", e, Allocation{Cell: "c1", Seq: seq, Epoch: e, Ranges: rs})
				if err == nil || errors.Is(err, ErrNotOwned) {
					t.Errorf("credit of %s ranges %v: %v, want a refusal of the argument", what, rs, err)
				}
			}
			state, err := st.l.Read(ctx, demo)
			if err != nil {
				t.Fatalf("the ledger after the refused credits: %v", err)
			}
			if v := state.Check(); len(v) != 0 {
				t.Fatalf("the ledger after the refused credits: %v", v)
			}
			if rets, err := st.l.Returns(ctx, demo, "c1"); err != nil || len(rets) != 0 {
				t.Fatalf("returns after the refused credits: %v %v", rets, err)
			}
			if got := fmt.Sprint(state.Pool.Returned, state.Pool.Free); got != "0 []" {
				t.Fatalf("pool after the refused credits: returned, free = %s", got)
			}
			// A well-formed credit of the same cell still goes through.
			if err := st.l.Credit(ctx, demo, "c1", e, Allocation{Cell: "c1", Seq: 99, Epoch: e, Ranges: []sku.TokenRange{{First: 2, Last: 4}}}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
