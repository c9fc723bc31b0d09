package sku

import "testing"

// ReservationIDs, reused for many ids, gives the ids FormatReservationID
// and FormatCellReservationID give one at a time.
func TestReservationIDsMatchFormat(t *testing.T) {
	key := [16]byte{7, 1, 2}
	plain := NewReservationIDs(Definition{CampaignID: "demo", SKUID: "sku-1", IDKey: key})
	celled := NewReservationIDs(Definition{CampaignID: "demo", SKUID: "sku-1", Cell: "c2", IDKey: key})
	for _, seq := range []uint32{0, 1, 42, 1 << 31, ^uint32(0)} {
		if got, want := plain.Format(seq), FormatReservationID("demo", "sku-1", seq, key); got != want {
			t.Fatalf("seq %d: %s, want %s", seq, got, want)
		}
		if got, want := celled.Format(seq), FormatCellReservationID("demo", "sku-1", "c2", seq, key); got != want {
			t.Fatalf("celled seq %d: %s, want %s", seq, got, want)
		}
	}
}
