package sku

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestFrozenAuditAgrees: the audit of a frozen copy, taken while the
// Machine goes on changing, finds the state healthy and reports the counts
// and time of the freeze, as the Machine's own audit did at that moment.
func TestFrozenAuditAgrees(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		def := Definition{CampaignID: "c1", SKUID: "s1", StartAt: 1_000, EndAt: 1_000_000,
			PaymentWindowMs: rapid.Int64Range(1, 40).Draw(t, "window"),
			SaleLimit:       uint32(rapid.IntRange(1, 8).Draw(t, "limit")),
			ReleaseOnClose:  rapid.Bool().Draw(t, "release_on_close")}
		d := &driver{m: New(), now: 1_000}
		_, d.log, _ = d.m.Define(d.now, def, nil)
		users := rapid.SampledFrom([]string{"u1", "u2", "u3", "u4", "u5", "u6"})
		reqs := rapid.StringMatching(`r[0-9]{1,2}`)
		payments := rapid.SampledFrom([]string{"p1", "p2"})
		for i, n := 0, rapid.IntRange(0, 200).Draw(t, "steps"); i < n; i++ {
			d.step(t, users, reqs, payments)
		}
		want, frozen := d.m.Audit(), d.m.Freeze()
		for i, n := 0, rapid.IntRange(0, 100).Draw(t, "more"); i < n; i++ {
			d.step(t, users, reqs, payments)
		}
		got := frozen.Audit()
		if !want.OK() || !got.OK() {
			t.Fatalf("audit at the freeze %v, of the frozen copy %v", want.Violations, got.Violations)
		}
		if got.Counts != want.Counts || got.LastAt != want.LastAt {
			t.Fatalf("frozen audit %+v at %d, machine %+v at %d", got.Counts, got.LastAt, want.Counts, want.LastAt)
		}
	})
}

// TestFrozenAuditFindsDamage: each kind of damage a frozen copy can hold
// is reported with a violation that names it.
func TestFrozenAuditFindsDamage(t *testing.T) {
	sale := func() *Machine {
		m := New()
		def := Definition{CampaignID: "c1", SKUID: "s1", StartAt: 0, EndAt: 1_000_000, PaymentWindowMs: 60_000, SaleLimit: 3, ReleaseOnClose: true}
		if _, _, err := m.Define(0, def, nil); err != nil {
			t.Fatal(err)
		}
		m.Reserve(1, "r1", "u1", nil)
		m.Reserve(1, "r2", "u2", nil)
		m.Pay(2, 2, "p1", 100, nil)
		m.Reserve(3, "r3", "u3", nil)
		m.Close(4, 3, ReasonCancelled, nil) // token 3 back in the FIFO
		return m
	}
	if a := sale().Freeze().Audit(); !a.OK() {
		t.Fatalf("healthy sale: %v", a.Violations)
	}
	cases := []struct {
		name   string
		damage func(f *Frozen)
		want   string
	}{
		{"counter", func(f *Frozen) { f.counts.Reserved++ }, "sale_limit 3 != available"},
		{"state counter", func(f *Frozen) { f.counts.Paid, f.counts.PendingPayment = 0, 2 }, "state counters"},
		{"token twice", func(f *Frozen) { f.table.chunks[0][1].token = 1 }, "token 1 held twice"},
		{"live user twice", func(f *Frozen) {
			f.table.chunks[0][1] = f.table.chunks[0][0]
			f.table.chunks[0][1].token = 2
		}, "two live purchases"},
		{"token never handed out", func(f *Frozen) { f.table.chunks[0][0].token = 9 }, "never handed out"},
		{"released token held", func(f *Frozen) { f.released = []uint32{1} }, "released token 1 is not free"},
		{"live without token", func(f *Frozen) { f.table.chunks[0][0].flags &^= flagHoldsToken }, "holds no token"},
	}
	for _, c := range cases {
		f := sale().Freeze()
		c.damage(f)
		a := f.Audit()
		if !strings.Contains(strings.Join(a.Violations, "\n"), c.want) {
			t.Errorf("%s: violations %q, want one with %q", c.name, a.Violations, c.want)
		}
	}
}

// Counts.Check names the counts that do not balance.
func TestCountsCheck(t *testing.T) {
	for _, tc := range []struct {
		c      Counts
		celled bool
		want   string // in the error; "" for none
	}{
		{Counts{SaleLimit: 10, Available: 5, Reserved: 3, Confirmed: 2, Reservations: 6, PendingPayment: 3, Paid: 2, Closed: 1}, false, ""},
		{Counts{SaleLimit: 10, Available: 6, Reserved: 3, Confirmed: 2}, false, "sale_limit 10 != available 6 + reserved 3 + confirmed 2"},
		{Counts{SaleLimit: 10, Reservations: 2, PendingPayment: 1, Available: 10}, false, "reservations 2 != pending_payment 1 + paid 0 + closed 0"},
		{Counts{SaleLimit: 100, Granted: 10, Returned: 4, Available: 3, Reserved: 2, Confirmed: 1}, true, ""},
		{Counts{SaleLimit: 100, Granted: 10, Returned: 4, Available: 4, Reserved: 2, Confirmed: 1}, true, "granted 10 - returned 4 != available 4"},
		{Counts{Granted: 1, Returned: 2}, true, "granted 1 - returned 2"},
	} {
		err := tc.c.Check(tc.celled)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v (celled %v): %v, want %q", tc.c, tc.celled, err, tc.want)
		}
	}
}
