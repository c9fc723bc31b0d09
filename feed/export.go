package feed

import (
	"github.com/seckill/seckill/actors/sku"
)

// Export is a SKU's state as of one durable log index, and the cursor to
// read the feed after it: a consumer whose cursor was compacted (or
// diverged) replaces its table with the export's reservations and reads
// the feed after NextCursor; it then holds what a consumer that never fell
// behind holds (etcd's get-then-watch).
type Export struct {
	// State is the SKU's state as of AsOf, the caller's own (rebuilt off
	// the SKU, Source.DurableState).
	State *sku.Machine
	// AsOf is the log index the state is as of.
	AsOf uint64
	// NextCursor is the id of the record at AsOf, "" when AsOf is 0.
	NextCursor string
}

// Export rebuilds the SKU's state as of a durable index. Errors:
// ErrUnknownSKU, ErrNotOpen, *StateError, and the server's.
func (f *Feed) Export(campaignID, skuID string) (*Export, error) {
	_, _, chain, err := f.sku(campaignID, skuID)
	if err != nil {
		return nil, err
	}
	m, asOf, err := f.src.DurableState(campaignID, skuID)
	if err != nil {
		return nil, &StateError{Err: err}
	}
	e := &Export{State: m, AsOf: asOf}
	if asOf > 0 {
		e.NextCursor = eventID(chain.At(asOf), asOf)
	}
	return e, nil
}

// ExportRow is one reservation of an export: its view (Reservation, the
// shape of GET /v1/reservations/{id}), and what a consumer's row holds that
// only events carry, so that a row taken from the export is the row the
// events build: the amount of a paid reservation (its PAID event's, present
// even when 0), and whether a closed reservation's token went back on sale
// (its CLOSED event's token_released, or a later RELEASED).
type ExportRow struct {
	Reservation
	Amount        *int64 `json:"amount,omitempty"`
	TokenReleased bool   `json:"token_released,omitempty"`
}

// NewExportRow renders a reservation of an export from its durable view.
func NewExportRow(v sku.View) ExportRow {
	row := ExportRow{Reservation: NewReservation(v)}
	switch v.State {
	case sku.StatePaid:
		amount := v.Amount
		row.Amount = &amount
	case sku.StateClosed:
		row.TokenReleased = !v.HoldsToken
	}
	return row
}
