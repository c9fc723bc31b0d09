package sku

import (
	"bytes"
	"fmt"
	"testing"
)

// A row stores created_at relative to its chunk's first row in 32 bits;
// one further away (here 60 days, and a chunk boundary crossed) keeps it
// aside. Its created_at, expire_at and version read back exactly, after
// changes and through an encoded state, whose Hash is the same.
func TestRowTimesFarFromTheirChunk(t *testing.T) {
	const day = 86_400_000
	m := New()
	d := Definition{CampaignID: "c", SKUID: "s", StartAt: 0, EndAt: 1 << 50, PaymentWindowMs: day,
		SaleLimit: 10_000, ReleaseOnClose: false}
	if _, _, err := m.Define(0, d, nil); err != nil {
		t.Fatal(err)
	}
	var out []Record
	at := func(i int) int64 { return int64(i) * 60 * day / 4000 } // 60 days over 4,000 rows
	for i := 1; i <= 5000; i++ {
		if res, _ := m.Reserve(at(i), fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), out[:0]); res.Outcome != OutcomeAccepted {
			t.Fatalf("reserve %d: %v", i, res.Outcome)
		}
	}
	if len(m.table.far) == 0 {
		t.Fatal("no row was far from its chunk's first: the test misses its case")
	}
	m.Close(at(5000), 7, ReasonCancelled, out[:0])
	m.Release(at(5000), 7, out[:0])
	m.Close(at(5000), 4000, ReasonCancelled, out[:0])
	for _, seq := range []uint32{1, 7, 4000, 4096, 4097, 5000} {
		v, _ := m.Get(seq)
		if v.CreatedAt != at(int(seq)) || v.ExpireAt != at(int(seq))+day {
			t.Fatalf("reservation %d: created %d expire %d, want %d and %d", seq, v.CreatedAt, v.ExpireAt, at(int(seq)), at(int(seq))+day)
		}
	}
	if v, _ := m.Get(7); v.Version != 3 || v.HoldsToken {
		t.Fatalf("closed then released: version %d, holds token %v", v.Version, v.HoldsToken)
	}
	if v, _ := m.Get(4000); v.Version != 2 || !v.HoldsToken {
		t.Fatalf("closed: version %d, holds token %v", v.Version, v.HoldsToken)
	}
	var state bytes.Buffer
	if _, err := m.Freeze().Encode(&state); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeState(state.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash() != m.Hash() {
		t.Fatal("the decoded state's Hash differs")
	}
	for _, seq := range []uint32{1, 7, 4000, 4097, 5000} {
		a, _ := m.Get(seq)
		b, _ := got.Get(seq)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("reservation %d: %+v after decoding, want %+v", seq, b, a)
		}
	}
}
