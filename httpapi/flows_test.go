package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
)

// reserve → status → pay, with every read and repeat on the way.
func TestFlowReservePay(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("spring", "15m", map[string]int{"sku-1": 10}))

	r := ts.reserve("spring", "sku-1", "req-1", "alice")
	want(t, r, http.StatusAccepted, "")
	id := r.str("reservation_id")
	if r.str("state") != "PENDING_PAYMENT" || r.str("request_id") != "req-1" || num(r, "token_id") < 1 ||
		r.str("status_url") != "/v1/reservations/"+id || r.header.Get("Location") != r.str("status_url") {
		t.Fatalf("202 body: %v (Location %q)", r, r.header.Get("Location"))
	}
	if _, err := time.Parse(time.RFC3339, r.str("expire_at")); err != nil {
		t.Fatalf("expire_at %q: %v", r.str("expire_at"), err)
	}

	g := ts.get(r.str("status_url"))
	want(t, g, http.StatusOK, "")
	if g.str("state") != "PENDING_PAYMENT" || g.str("user_id") != "alice" || g.str("request_id") != "req-1" || g.body["paid_at"] != nil {
		t.Fatalf("reservation: %v", g)
	}
	l := ts.get("/v1/campaigns/spring/skus/sku-1/requests/req-1")
	if l.status != http.StatusOK || l.str("outcome") != "ACCEPTED" || l.str("reservation_id") != id {
		t.Fatalf("lookup: %v", l)
	}
	want(t, ts.get("/v1/campaigns/spring/skus/sku-1/requests/never-sent"), http.StatusNotFound, "NOT_FOUND")

	p := ts.post("/v1/reservations/"+id+"/payment", map[string]any{"payment_id": "pay-1", "amount": 1999})
	want(t, p, http.StatusOK, "")
	if p.str("state") != "PAID" {
		t.Fatalf("pay: %v", p)
	}
	again := ts.post("/v1/reservations/"+id+"/payment", map[string]any{"payment_id": "pay-1", "amount": 1999})
	if again.status != http.StatusOK || string(again.raw) != string(p.raw) {
		t.Fatalf("repeated payment: %v, first %v", again, p)
	}
	want(t, ts.post("/v1/reservations/"+id+"/payment", map[string]any{"payment_id": "pay-2"}), http.StatusConflict, "PAYMENT_CONFLICT")
	want(t, ts.post("/v1/reservations/"+id+"/cancel", nil), http.StatusConflict, "NOT_CLOSABLE")

	g = ts.get("/v1/reservations/" + id)
	if g.str("state") != "PAID" || g.str("paid_at") == "" || g.str("payment_id") != "pay-1" {
		t.Fatalf("paid reservation: %v", g)
	}
	a := ts.audit("spring", "sku-1")
	if num(a, "confirmed") != 1 || num(a, "available") != 9 || num(a, "reserved") != 0 || num(a, "sale_limit") != 10 {
		t.Fatalf("audit: %v", a)
	}
}

// reserve → cancel → the token is back; a payment after close is a refund.
func TestFlowReserveCancel(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("c", "15m", map[string]int{"s": 1}))

	r := ts.reserve("c", "s", "r1", "bob")
	want(t, r, http.StatusAccepted, "")
	id := r.str("reservation_id")
	want(t, ts.reserve("c", "s", "r2", "carol"), http.StatusConflict, "SOLD_OUT")

	c := ts.post("/v1/reservations/"+id+"/cancel", nil)
	if c.status != http.StatusOK || c.str("state") != "CLOSED" || c.str("closed_reason") != "CANCELLED" {
		t.Fatalf("cancel: %v", c)
	}
	c2 := ts.post("/v1/reservations/"+id+"/cancel", nil)
	if c2.status != http.StatusOK || c2.str("state") != "CLOSED" {
		t.Fatalf("second cancel: %v", c2)
	}
	want(t, ts.post("/v1/reservations/"+id+"/payment", map[string]any{"payment_id": "late", "amount": 5}), http.StatusConflict, "REFUND_REQUIRED")
	g := ts.get("/v1/reservations/" + id)
	if g.str("state") != "CLOSED" || g.body["refund_required"] != true || g.str("closed_reason") != "CANCELLED" {
		t.Fatalf("closed reservation: %v", g)
	}
	refunds := ts.admin(http.MethodGet, "/admin/campaigns/c/skus/s/refunds", nil)
	list, _ := refunds.body["refunds"].([]any)
	if refunds.status != http.StatusOK || len(list) != 1 || list[0].(map[string]any)["reservation_id"] != id {
		t.Fatalf("refunds: %v", refunds)
	}
	// The released token sells again. carol's first SOLD_OUT came from the
	// ingress fast path (durable available = 0), which records nothing, so
	// her retry of the same request_id may now succeed.
	r3 := ts.reserve("c", "s", "r2", "carol")
	want(t, r3, http.StatusAccepted, "")
	if num(r3, "token_id") != num(r, "token_id") {
		t.Fatalf("token %d, want the released %d", num(r3, "token_id"), num(r, "token_id"))
	}
	ts.audit("c", "s")
}

// reserve → no payment → expiry frees the token for someone else: a
// clock the test steps past expire_at, and the ticks it gives the engine.
func TestFlowReserveExpire(t *testing.T) {
	t.Parallel()
	clock := newStepClock()
	ts := startServer(t, serverOptions{
		engine: func(c *actors.Config) { c.Clock, c.ManualTick = clock.now, true },
		config: func(c *httpapi.Config) { c.Clock = clock.now },
	})
	ts.define(campaign("exp", "1s", map[string]int{"s": 1}))

	r := ts.reserve("exp", "s", "r1", "dave")
	want(t, r, http.StatusAccepted, "")
	id := r.str("reservation_id")
	want(t, ts.reserve("exp", "s", "r2", "erin"), http.StatusConflict, "SOLD_OUT")
	if st := ts.get("/v1/campaigns/exp/skus/s").str("status"); st != "TEMP_SOLD_OUT" {
		t.Fatalf("status while reserved: %s", st)
	}
	clock.step(999 * time.Millisecond)
	a := ts.tickUntil(clock.now(), "exp", "s", "an expiry step before expire_at", func(a actors.Activity) bool {
		return a.EarliestExpireAt != 0
	})
	if a.Expired != 0 || a.EarliestExpireAt != clock.now().UnixMilli()+1 {
		t.Fatalf("an expiry step before expire_at: %d expired, the earliest due at %d", a.Expired, a.EarliestExpireAt)
	}
	clock.step(time.Millisecond)
	if a := ts.tickUntil(clock.now(), "exp", "s", "the expiry at expire_at", func(a actors.Activity) bool { return a.Expired != 0 }); a.Expired != 1 {
		t.Fatalf("%d reservations expired at expire_at, want the one", a.Expired)
	}
	g := ts.get("/v1/reservations/" + id)
	if g.str("state") != "CLOSED" || g.str("closed_reason") != "EXPIRED" {
		t.Fatalf("expired reservation: %v", g)
	}
	if st := ts.get("/v1/campaigns/exp/skus/s").str("status"); st != "OPEN" {
		t.Fatalf("status after expiry: %s", st)
	}
	r3 := ts.reserve("exp", "s", "r3", "erin")
	want(t, r3, http.StatusAccepted, "")
	if num(r3, "token_id") != num(r, "token_id") {
		t.Fatalf("token %d, want the expired %d", num(r3, "token_id"), num(r, "token_id"))
	}
	want(t, ts.post("/v1/reservations/"+id+"/payment", map[string]any{"payment_id": "late"}), http.StatusConflict, "REFUND_REQUIRED")
	// dave may buy again now that his reservation expired.
	want(t, ts.reserve("exp", "s", "r4", "dave"), http.StatusConflict, "SOLD_OUT")
	ts.audit("exp", "s")
}

// The SKU status moves OPEN → TEMP_SOLD_OUT → FINAL_SOLD_OUT, with a longer
// cache lifetime once final; the window is judged on the server's clock.
func TestStatusAndWindow(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("st", "15m", map[string]int{"s": 1}))
	s := ts.get("/v1/campaigns/st/skus/s")
	if s.status != http.StatusOK || s.str("status") != "OPEN" || s.header.Get("Cache-Control") != "public, max-age=1" {
		t.Fatalf("status: %v %v", s, s.header)
	}
	if _, leaks := s.body["available"]; leaks {
		t.Fatalf("status shows stock: %v", s)
	}
	id := ts.reserve("st", "s", "r1", "u1").str("reservation_id")
	if st := ts.get("/v1/campaigns/st/skus/s").str("status"); st != "TEMP_SOLD_OUT" {
		t.Fatalf("status: %s", st)
	}
	want(t, ts.post("/v1/reservations/"+id+"/payment", map[string]any{"payment_id": "p"}), http.StatusOK, "")
	s = ts.get("/v1/campaigns/st/skus/s")
	if s.str("status") != "FINAL_SOLD_OUT" || s.header.Get("Cache-Control") != "public, max-age=30" {
		t.Fatalf("status after the last payment: %v %v", s, s.header)
	}
	want(t, ts.get("/v1/campaigns/st/skus/nope"), http.StatusNotFound, "NOT_FOUND")

	now := time.Now().UTC()
	future := map[string]any{"campaign_id": "later", "start_at": now.Add(time.Hour).Format(time.RFC3339),
		"end_at": now.Add(2 * time.Hour).Format(time.RFC3339), "skus": []any{map[string]any{"sku_id": "s", "sale_limit": 5}}}
	ts.define(future)
	want(t, ts.reserve("later", "s", "r1", "u1"), http.StatusForbidden, "NOT_STARTED")
	if st := ts.get("/v1/campaigns/later/skus/s").str("status"); st != "NOT_STARTED" {
		t.Fatalf("status: %s", st)
	}
	past := map[string]any{"campaign_id": "over", "start_at": now.Add(-2 * time.Hour).Format(time.RFC3339),
		"end_at": now.Add(-time.Hour).Format(time.RFC3339), "skus": []any{map[string]any{"sku_id": "s", "sale_limit": 5}}}
	ts.define(past)
	want(t, ts.reserve("over", "s", "r1", "u1"), http.StatusForbidden, "ENDED")
	if st := ts.get("/v1/campaigns/over/skus/s").str("status"); st != "ENDED" {
		t.Fatalf("status: %s", st)
	}
}

// With release_on_close=false a cancelled reservation keeps its token until
// an operator releases it through the admin route.
func TestOperatorRelease(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	body := campaign("rel", "15m", map[string]int{"s": 1})
	body["release_on_close"] = false
	ts.define(body)
	id := ts.reserve("rel", "s", "r1", "u1").str("reservation_id")
	releaseURL := "/admin/reservations/" + id + "/release"
	want(t, ts.admin(http.MethodPost, releaseURL, nil), http.StatusConflict, "NOT_CLOSED")
	want(t, ts.post("/v1/reservations/"+id+"/cancel", nil), http.StatusOK, "")
	want(t, ts.reserve("rel", "s", "r2", "u2"), http.StatusConflict, "SOLD_OUT") // the token is still held
	want(t, call(t, http.MethodPost, ts.base+releaseURL, nil, nil), http.StatusUnauthorized, "UNAUTHORIZED")
	if r := ts.admin(http.MethodPost, releaseURL, nil); r.status != http.StatusOK || r.str("outcome") != "RELEASED" {
		t.Fatalf("release: %v", r)
	}
	if r := ts.admin(http.MethodPost, releaseURL, nil); r.status != http.StatusOK || r.str("outcome") != "ALREADY_RELEASED" {
		t.Fatalf("repeat release: %v", r)
	}
	want(t, ts.reserve("rel", "s", "r3", "u3"), http.StatusAccepted, "")
	if a := ts.audit("rel", "s"); num(a, "available") != 0 || a.body["invariant_ok"] != true {
		t.Fatalf("audit after release and resale: %v", a)
	}
}
