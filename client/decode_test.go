package client_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/seckill/seckill/client"
)

// reservationSamples seed FuzzReservationDecoding: answers seckilld gives,
// and the edges of the decoder's rules.
var reservationSamples = []string{
	`{"reservation_id":"c~s~1~0d869c59db0aae90","request_id":"r-1","state":"PENDING_PAYMENT","token_id":1,"expire_at":"2030-01-01T00:15:00.000Z","status_url":"/v1/reservations/c~s~1~0d869c59db0aae90"}`,
	`{"reservation_id":"a","request_id":"r","user_id":"u","state":"CLOSED","token_id":4294967295,"created_at":"2030-01-01T00:00:00.000Z","expire_at":"2030-01-01T00:15:00.000Z","paid_at":"","closed_at":"2030-01-01T00:15:00.001Z","closed_reason":"EXPIRED","refund_required":true,"payment_id":"p"}`,
	`{"reservation_id":null,"token_id":null,"refund_required":null,"paid_at":null}`,
	`{"reservation_id":"a","reservation_id":"b","other":[1,{"x":"y"}],"token_id":7}`,
	`{"reservation_id":"a\u0062\n","expire_at":"2030-01-01T01:00:00+01:00"}`,
	`{"token_id":4294967296}`, `{"token_id":-1}`, `{"token_id":1.5}`, `{"token_id":"7"}`, `{"state":1}`,
	`{"expire_at":"2030-02-30T00:00:00.000Z"}`, `{"refund_required":"yes"}`, `[]`, `{`, `null`, ``,
}

// plainReservation is Reservation as encoding/json reads it by reflection,
// its times as text: the reference the decoder is held to.
type plainReservation struct {
	ReservationID  string `json:"reservation_id"`
	RequestID      string `json:"request_id"`
	UserID         string `json:"user_id"`
	State          string `json:"state"`
	TokenID        uint32 `json:"token_id"`
	CreatedAt      string `json:"created_at"`
	ExpireAt       string `json:"expire_at"`
	PaidAt         string `json:"paid_at"`
	PaymentID      string `json:"payment_id"`
	ClosedAt       string `json:"closed_at"`
	ClosedReason   string `json:"closed_reason"`
	RefundRequired bool   `json:"refund_required"`
	StatusURL      string `json:"status_url"`
}

// A reservation answer reads as encoding/json reads its fields (the times
// as time.Parse reads them): an answer it accepts is accepted with the
// same values. Left out: what seckill never writes and encoding/json
// reads loosely (invalid UTF-8, keys matched without regard to case).
func FuzzReservationDecoding(f *testing.F) {
	for _, s := range reservationSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !utf8.Valid(body) || strings.Contains(strings.ToLower(string(body)), `\ud`) {
			return
		}
		var want plainReservation
		if json.Unmarshal(body, &want) != nil {
			return
		}
		for _, k := range []string{"reservation_id", "request_id", "user_id", "state", "token_id", "created_at", "expire_at", "paid_at",
			"payment_id", "closed_at", "closed_reason", "refund_required", "status_url"} {
			if strings.Count(strings.ToLower(string(body)), k) != strings.Count(string(body), k) {
				return // a key in other case: encoding/json matches it, seckill never writes it
			}
		}
		var got client.Reservation
		if err := got.UnmarshalJSON(body); err != nil {
			if _, terr := times(want); terr != nil {
				return // a time neither reads
			}
			t.Fatalf("%q: encoding/json reads %+v, the decoder refuses it: %v", body, want, err)
		}
		wantTimes, err := times(want)
		if err != nil {
			t.Fatalf("%q: a time the decoder read, time.Parse refuses: %v", body, err)
		}
		gotTimes := [4]time.Time{got.CreatedAt, got.ExpireAt, got.PaidAt, got.ClosedAt}
		for i := range gotTimes {
			if !gotTimes[i].Equal(wantTimes[i]) {
				t.Fatalf("%q: time %d %v, want %v", body, i, gotTimes[i], wantTimes[i])
			}
		}
		plain := plainReservation{ReservationID: got.ReservationID, RequestID: got.RequestID, UserID: got.UserID, State: got.State,
			TokenID: got.TokenID, PaymentID: got.PaymentID, ClosedReason: got.ClosedReason, RefundRequired: got.RefundRequired, StatusURL: got.StatusURL,
			CreatedAt: want.CreatedAt, ExpireAt: want.ExpireAt, PaidAt: want.PaidAt, ClosedAt: want.ClosedAt}
		if plain != want {
			t.Fatalf("%q: decoder %+v, encoding/json %+v", body, plain, want)
		}
	})
}

// times parses the reference's times ("" is zero).
func times(p plainReservation) ([4]time.Time, error) {
	var out [4]time.Time
	for i, s := range []string{p.CreatedAt, p.ExpireAt, p.PaidAt, p.ClosedAt} {
		if s == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return out, err
		}
		out[i] = t
	}
	return out, nil
}

// An export's row reads its reservation as Reservation does, and the
// amount (0 is an amount; absent or null is none) and token release the
// export adds.
func TestExportRowDecoding(t *testing.T) {
	for _, c := range []struct {
		line     string
		amount   string // "none" or the amount
		released bool
	}{
		{`{"reservation_id":"a","state":"PAID","token_id":3,"payment_id":"p","amount":0}`, "0", false},
		{`{"reservation_id":"a","state":"PAID","token_id":3,"payment_id":"p","amount":-5,"token_released":null}`, "-5", false},
		{`{"reservation_id":"a","state":"CLOSED","token_id":3,"token_released":true,"amount":null}`, "none", true},
		{`{"reservation_id":"a","state":"PENDING_PAYMENT","token_id":3}`, "none", false},
	} {
		var r client.ExportRow
		r.TokenReleased = true // a row read into is reset
		if err := r.UnmarshalJSON([]byte(c.line)); err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		amount := "none"
		if r.Amount != nil {
			amount = strconv.FormatInt(*r.Amount, 10)
		}
		if r.ReservationID != "a" || r.TokenID != 3 || amount != c.amount || r.TokenReleased != c.released {
			t.Errorf("%s: %+v amount %s, want amount %s token_released %t", c.line, r.Reservation, amount, c.amount, c.released)
		}
	}
	for _, bad := range []string{`{"amount":"5"}`, `{"amount":1.5}`, `{"token_released":"yes"}`, `{"token_id":-1}`} {
		var r client.ExportRow
		if err := r.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("%s: read as %+v, want an error", bad, r)
		}
	}
}
