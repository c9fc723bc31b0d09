package sku

import (
	"strconv"
	"testing"
)

// BenchmarkMachineReserve is the pure decision of one accepted reservation
// (what the SKU actor spends per call, without the log or the mailbox):
// the request_id and user lookups, the token, the record, the index
// inserts and the answer's View, on a SKU that never sells out, with
// b.N reservations live at the end.
func BenchmarkMachineReserve(b *testing.B) {
	m := New()
	d := Definition{CampaignID: "bench", SKUID: "hot", StartAt: 0, EndAt: 1 << 50,
		PaymentWindowMs: 3_600_000, SaleLimit: MaxSaleLimit, ReleaseOnClose: true}
	var out []Record
	if _, _, err := m.Define(1, d, out); err != nil {
		b.Fatal(err)
	}
	requests, users := make([]string, b.N), make([]string, b.N)
	for i := range requests {
		requests[i], users[i] = "r"+strconv.Itoa(i), "u"+strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		var res Result
		res, out = m.Reserve(2, requests[i], users[i], out[:0])
		if res.Outcome != OutcomeAccepted {
			b.Fatalf("reserve %d: %v", i, res.Outcome)
		}
	}
}
