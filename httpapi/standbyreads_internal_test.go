package httpapi

import (
	"errors"
	"strings"
	"testing"

	"github.com/seckill/seckill/actors/sku"
	"github.com/valyala/fasthttp"
)

// standbyState is a StandbyReader holding one reservation, applied up to
// record 7.
type standbyState struct{ v sku.View }

var errNotHeld = errors.New("not held")

func (s standbyState) Get(id string) (sku.View, uint64, error) {
	if id != s.v.ReservationID {
		return sku.View{}, 0, errNotHeld
	}
	return s.v, 7, nil
}

func (s standbyState) Lookup(campaignID, skuID, requestID string) (sku.Result, uint64, error) {
	if campaignID != "c1" || skuID != "s1" || requestID != s.v.RequestID {
		return sku.Result{}, 0, errNotHeld
	}
	return sku.Result{Outcome: sku.OutcomeAccepted, Reservation: s.v}, 7, nil
}

// StandbyRead answers the reads of a record the standby holds as the
// primary does, marked as a standby's read with its commit index, and
// leaves everything else to the caller (NOT_PRIMARY): writes, other
// routes, and records it does not hold.
func TestStandbyRead(t *testing.T) {
	r := standbyState{sku.View{ReservationID: "c1~s1~3~abcd", RequestID: "req-3", UserID: "u3", TokenID: 3, State: sku.StatePendingPayment}}
	cases := []struct {
		method, path string
		served       bool
		body         string
	}{
		{"GET", "/v1/reservations/c1~s1~3~abcd", true, `"reservation_id":"c1~s1~3~abcd"`},
		{"HEAD", "/v1/reservations/c1~s1~3~abcd", true, ""},
		{"GET", "/v1/campaigns/c1/skus/s1/requests/req-3", true, `"outcome":"ACCEPTED"`},
		{"GET", "/v1/reservations/c1~s1~4~abcd", false, ""},
		{"GET", "/v1/campaigns/c1/skus/s1/requests/req-4", false, ""},
		{"POST", "/v1/reservations/c1~s1~3~abcd/cancel", false, ""},
		{"POST", "/v1/reservations/c1~s1~3~abcd", false, ""},
		{"GET", "/v1/reservations/c1~s1~3~abcd/payment", false, ""},
		{"GET", "/v1/campaigns/c1/skus/s1", false, ""},
		{"GET", "/v1/campaigns/c1/skus/s1/requests/req-3/x", false, ""},
	}
	for _, c := range cases {
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod(c.method)
		ctx.Request.SetRequestURI(c.path)
		if got := StandbyRead(&ctx, r); got != c.served {
			t.Errorf("%s %s: served %v, want %v", c.method, c.path, got, c.served)
			continue
		}
		if !c.served {
			if ctx.Response.StatusCode() != fasthttp.StatusOK || len(ctx.Response.Body()) != 0 {
				t.Errorf("%s %s: answered %d %s without serving", c.method, c.path, ctx.Response.StatusCode(), ctx.Response.Body())
			}
			continue
		}
		h := &ctx.Response.Header
		if ctx.Response.StatusCode() != fasthttp.StatusOK || string(h.Peek(HeaderReadFrom)) != "standby" || string(h.Peek(HeaderCommitIndex)) != "7" {
			t.Errorf("%s %s: %d, headers %s", c.method, c.path, ctx.Response.StatusCode(), h.String())
		}
		if c.body != "" && !strings.Contains(string(ctx.Response.Body()), c.body) {
			t.Errorf("%s %s: body %s lacks %s", c.method, c.path, ctx.Response.Body(), c.body)
		}
	}
}
