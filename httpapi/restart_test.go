package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"
)

// A graceful restart on the same data dir keeps every acknowledged
// reservation, its state, every request_id's answer and the campaign.
func TestRestartKeepsState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts := startServer(t, serverOptions{dir: dir})
	ts.define(campaign("rs", "15m", map[string]int{"a": 50, "b": 3}))
	accepted := ts.reserveAll("rs", "a", 20, func(i int) (string, string) {
		return fmt.Sprintf("req-%d", i), fmt.Sprintf("user-%d", i)
	})
	states := map[string]string{}
	for i, r := range accepted {
		want(t, r, http.StatusAccepted, "")
		id := r.str("reservation_id")
		states[id] = "PENDING_PAYMENT"
		switch i % 4 {
		case 1:
			want(t, ts.post("/v1/reservations/"+id+"/payment", map[string]any{"payment_id": fmt.Sprintf("p-%d", i)}), http.StatusOK, "")
			states[id] = "PAID"
		case 2:
			want(t, ts.post("/v1/reservations/"+id+"/cancel", nil), http.StatusOK, "")
			states[id] = "CLOSED"
		}
	}
	ts.admin(http.MethodPost, "/admin/campaigns/rs/skus/b/pause", nil)
	before := ts.audit("rs", "a")
	ts.stop()

	ts2 := startServer(t, serverOptions{dir: dir})
	for i, r := range accepted {
		id := r.str("reservation_id")
		g := ts2.get("/v1/reservations/" + id)
		if g.status != http.StatusOK || g.str("state") != states[id] || g.str("request_id") != fmt.Sprintf("req-%d", i) {
			t.Fatalf("after restart %s: %v, want %s", id, g, states[id])
		}
		again := ts2.reserve("rs", "a", fmt.Sprintf("req-%d", i), fmt.Sprintf("user-%d", i))
		if string(again.raw) != string(r.raw) {
			t.Fatalf("repeat after restart: %v, first %v", again, r)
		}
	}
	after := ts2.audit("rs", "a")
	if string(after.raw) != string(before.raw) {
		t.Fatalf("audit changed across the restart:\n%s\n%s", before.raw, after.raw)
	}
	if st := ts2.get("/v1/campaigns/rs/skus/b").str("status"); st != "PAUSED" {
		t.Fatalf("paused SKU after restart: %s", st)
	}
	want(t, ts2.reserve("rs", "a", "req-new", "user-new"), http.StatusAccepted, "")
}

// After a restart (an empty answer cache) a sold-out SKU still gives a
// repeated, accepted request_id its original 202, not a fast SOLD_OUT.
func TestRepeatAfterRestartWhileSoldOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts := startServer(t, serverOptions{dir: dir})
	ts.define(campaign("so", "15m", map[string]int{"a": 2}))
	first := ts.reserve("so", "a", "req-1", "user-1")
	want(t, first, http.StatusAccepted, "")
	want(t, ts.reserve("so", "a", "req-2", "user-2"), http.StatusAccepted, "")
	want(t, ts.reserve("so", "a", "req-3", "user-3"), http.StatusConflict, "SOLD_OUT")
	ts.stop()

	ts2 := startServer(t, serverOptions{dir: dir})
	again := ts2.reserve("so", "a", "req-1", "user-1")
	if string(again.raw) != string(first.raw) {
		t.Fatalf("repeat of an accepted request after restart, sold out: %v, first %v", again, first)
	}
	want(t, ts2.reserve("so", "a", "req-4", "user-4"), http.StatusConflict, "SOLD_OUT")
}
