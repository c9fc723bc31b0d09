package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"flag"
	"io"
	"strconv"
	"strings"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/internal/skudir"
)

// reservationJSON is one exported reservation: the service's view of it
// (feed.Reservation: the fields and names of GET /v1/reservations/{id} and
// of the admin export), then what a reconciliation needs beside it.
type reservationJSON struct {
	feed.Reservation
	Amount         int64    `json:"amount"`
	HoldsToken     bool     `json:"holds_token"`
	RefundPayments []string `json:"refund_payments"`
	Version        uint32   `json:"version"`
}

// exportColumns is the CSV header. The CSV keeps the header it was
// published with, close_reason where the view says closed_reason: its
// readers (spreadsheet imports, reconciliation scripts) find columns by
// header name, and a renamed column would come out empty there without an
// error. Its values are the view's.
var exportColumns = []string{"reservation_id", "request_id", "user_id", "token_id", "state", "close_reason",
	"created_at", "expire_at", "paid_at", "closed_at", "payment_id", "amount", "holds_token",
	"refund_required", "refund_payments", "version"}

func reservationOf(v sku.View) reservationJSON {
	refunds := v.RefundPayments
	if refunds == nil {
		refunds = []string{}
	}
	return reservationJSON{Reservation: feed.NewReservation(v), Amount: v.Amount, HoldsToken: v.HoldsToken,
		RefundPayments: refunds, Version: v.Version}
}

// row is the reservation as a CSV row (exportColumns).
func (r *reservationJSON) row() []string {
	return []string{r.ReservationID, r.RequestID, r.UserID, strconv.FormatUint(uint64(r.TokenID), 10), r.State,
		r.ClosedReason, r.CreatedAt, r.ExpireAt, r.PaidAt, r.ClosedAt, r.PaymentID, strconv.FormatInt(r.Amount, 10),
		strconv.FormatBool(r.HoldsToken), strconv.FormatBool(r.RefundRequired), strings.Join(r.RefundPayments, ";"),
		strconv.FormatUint(uint64(r.Version), 10)}
}

// runExport prints every reservation of a SKU, in seq order, as CSV (with
// a header row; refund payment ids joined by ';') or JSON lines.
func runExport(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	format := fs.String("format", "csv", "csv or jsonl")
	pos, err := parse(fs, args, 1)
	if err != nil {
		return err
	}
	if *format != "csv" && *format != "jsonl" {
		return usageError("export: --format must be csv or jsonl, not %q", *format)
	}
	st, err := loadState(skudir.FromPath(pos[0]).String(), loadOptions{})
	if err != nil {
		return err
	}
	out := bufio.NewWriter(stdout)
	n := st.m.Counts().Reservations
	if *format == "jsonl" {
		enc := json.NewEncoder(out)
		for seq := uint32(1); seq <= n; seq++ {
			v, _ := st.m.Get(seq)
			if err := enc.Encode(reservationOf(v)); err != nil {
				return err
			}
		}
		return out.Flush()
	}
	w := csv.NewWriter(out)
	if err := w.Write(exportColumns); err != nil {
		return err
	}
	for seq := uint32(1); seq <= n; seq++ {
		v, _ := st.m.Get(seq)
		r := reservationOf(v)
		if err := w.Write(r.row()); err != nil {
			return err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return out.Flush()
}
