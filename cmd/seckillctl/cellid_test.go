package main

import (
	"testing"

	"github.com/seckill/seckill/actors/sku"
)

// TestRecordOfCelledID: a celled SKU's record shows the five-part id its
// cell hands out (the router routes by it); a plain SKU's the four-part
// one. Both parse back to the record's seq.
func TestRecordOfCelledID(t *testing.T) {
	key := [16]byte{1, 2, 3}
	r := sku.Record{Type: sku.RecordPaid, Seq: 7}
	for _, cell := range []string{"", "c2"} {
		id := recordOf(1, &r, sku.Definition{CampaignID: "camp", SKUID: "sku-1", Cell: cell, IDKey: key}).ReservationID
		if want := sku.FormatCellReservationID("camp", "sku-1", cell, 7, key); id != want {
			t.Errorf("cell %q: id %s, want %s", cell, id, want)
		}
		if got := sku.ReservationCell(id); got != cell {
			t.Errorf("id %s names cell %q, want %q", id, got, cell)
		}
		if _, _, seq, _, err := sku.ParseReservationID(id); err != nil || seq != 7 {
			t.Errorf("id %s parses to %d, %v", id, seq, err)
		}
	}
}
