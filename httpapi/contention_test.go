package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Stock 1, 50 users at once: exactly one 202, every other a SOLD_OUT (at
// once, or after a 429 QUEUE_FULL while the permits were all in flight).
func TestLastTokenRace(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("race", "15m", map[string]int{"s": 1}))
	out := ts.reserveAll("race", "s", 50, func(i int) (string, string) {
		return fmt.Sprintf("req-%d", i), fmt.Sprintf("user-%d", i)
	})
	accepted := 0
	for i, r := range out {
		// Until the permits in flight come back: a minute bounds a server
		// that never gives them back.
		for deadline := time.Now().Add(time.Minute); r.status == http.StatusTooManyRequests && r.str("error") == "QUEUE_FULL" && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			r = ts.reserve("race", "s", fmt.Sprintf("req-%d", i), fmt.Sprintf("user-%d", i))
		}
		switch {
		case r.status == http.StatusAccepted:
			accepted++
		case r.status == http.StatusConflict && r.str("error") == "SOLD_OUT":
		default:
			t.Errorf("unexpected answer %v", r)
		}
	}
	if accepted != 1 {
		t.Fatalf("%d accepted, want exactly 1", accepted)
	}
	a := ts.audit("race", "s")
	if num(a, "reserved") != 1 || num(a, "available") != 0 || num(a, "reservations") != 1 {
		t.Fatalf("audit: %v", a)
	}
}

// The same request_id sent 20 times at once, and again afterwards, makes
// one reservation and gets the very same 202 body every time; from another
// user it is REQUEST_ID_REUSED.
func TestDuplicateRequestID(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("dup", "15m", map[string]int{"s": 100}))
	out := ts.reserveAll("dup", "s", 20, func(int) (string, string) { return "same-req", "frank" })
	for _, r := range out {
		if r.status != http.StatusAccepted || string(r.raw) != string(out[0].raw) {
			t.Fatalf("answers differ: %v vs %v", r, out[0])
		}
	}
	again := ts.reserve("dup", "s", "same-req", "frank")
	if string(again.raw) != string(out[0].raw) {
		t.Fatalf("repeat: %v, first %v", again, out[0])
	}
	reused := ts.reserve("dup", "s", "same-req", "mallory")
	want(t, reused, http.StatusUnprocessableEntity, "REQUEST_ID_REUSED")
	if !strings.Contains(reused.str("detail"), "new request_id") {
		t.Fatalf("REQUEST_ID_REUSED says nothing of what to do: %v", reused)
	}
	if a := ts.audit("dup", "s"); num(a, "reservations") != 1 {
		t.Fatalf("audit: %v", a)
	}
}

// One user clicking 20 times with 20 request_ids at once: one reservation;
// every other click learns about it (ALREADY_PURCHASED with its id).
func TestRepeatClicks(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("clicks", "15m", map[string]int{"s": 100}))
	out := ts.reserveAll("clicks", "s", 20, func(i int) (string, string) { return fmt.Sprintf("click-%d", i), "grace" })
	var id string
	for _, r := range out {
		if r.status == http.StatusAccepted {
			if id != "" {
				t.Fatalf("two reservations: %s and %v", id, r)
			}
			id = r.str("reservation_id")
		}
	}
	if id == "" {
		t.Fatalf("no reservation: %v", out)
	}
	for _, r := range out {
		if r.status != http.StatusAccepted && (r.status != http.StatusConflict || r.str("error") != "ALREADY_PURCHASED" || r.str("reservation_id") != id) {
			t.Fatalf("click answered %v", r)
		}
	}
	// A later click, and the repeat of an earlier one, answer the same.
	want(t, ts.reserve("clicks", "s", "click-late", "grace"), http.StatusConflict, "ALREADY_PURCHASED")
	for i, r := range out {
		again := ts.reserve("clicks", "s", fmt.Sprintf("click-%d", i), "grace")
		if string(again.raw) != string(r.raw) {
			t.Fatalf("repeat of click-%d: %v, first %v", i, again, r)
		}
	}
	if a := ts.audit("clicks", "s"); num(a, "reservations") != 1 || num(a, "reserved") != 1 {
		t.Fatalf("audit: %v", a)
	}
}
