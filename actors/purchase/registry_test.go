package purchase

import (
	"slices"
	"testing"
)

// The verdicts in order, as one user's reserves meet them.
func TestClaimVerdicts(t *testing.T) {
	r := New[int]()
	if d := r.Claim("u", "a", "r1", 1); d.Verdict != Proceed {
		t.Fatalf("first claim: %v", d)
	}
	if d := r.Claim("u", "a", "r2", 2); d.Verdict != Proceed {
		t.Fatalf("same SKU: %v (its own rule answers)", d)
	}
	for w := 3; w < 3+MaxWaiters; w++ {
		if d := r.Claim("u", "b", "rb", w); d.Verdict != Wait || d.SKU != "a" {
			t.Fatalf("other SKU while a is deciding: %v", d)
		}
	}
	if d := r.Claim("u", "b", "rb", 99); d.Verdict != Busy {
		t.Fatalf("beyond MaxWaiters: %v", d)
	}
	r.Forget("u", 3)
	if w := r.Done("u", "a", "r2", false); w != nil {
		t.Fatalf("woke %v while r1 is in flight", w)
	}
	w, conflict := r.Reserved("u", "a", "a~1")
	if conflict || !slices.Equal(w, []int{4, 5, 6, 7, 8, 9, 10}) {
		t.Fatalf("reserved: woke %v, conflict %v", w, conflict)
	}
	if w := r.Done("u", "a", "r1", false); w != nil {
		t.Fatalf("woke %v after the waiters left", w)
	}
	if d := r.Claim("u", "b", "rb", 11); d.Verdict != Held || d.SKU != "a" || d.ReservationID != "a~1" {
		t.Fatalf("held: %v", d)
	}
	if w := r.Closed("u", "a", "a~9"); w != nil || r.Len() != 1 {
		t.Fatal("the close of another reservation released the claim")
	}
	r.Closed("u", "a", "a~1")
	if r.Len() != 0 {
		t.Fatal("a durable close kept the claim")
	}
}

// A lost answer keeps the claim until a probe clears it; an unanswered
// probe keeps it still.
func TestLostAnswerNeedsAProbe(t *testing.T) {
	r := New[int]()
	r.Claim("u", "a", "r1", 0)
	r.Done("u", "a", "r1", true)
	d := r.Claim("u", "b", "r2", 1)
	if d.Verdict != Probe || d.SKU != "a" || !slices.Equal(d.RequestIDs, []string{"r1"}) {
		t.Fatalf("after a lost answer: %v", d)
	}
	if d := r.Claim("u", "b", "r3", 2); d.Verdict != Wait {
		t.Fatalf("while probing: %v", d)
	}
	if w := r.ProbeDone("u", "a", []string{"r1"}); !slices.Equal(w, []int{2}) {
		t.Fatalf("probe unanswered woke %v", w)
	}
	if d := r.Claim("u", "b", "r2", 3); d.Verdict != Probe {
		t.Fatalf("still unknown: %v", d)
	}
	r.ProbeDone("u", "a", nil)
	if d := r.Claim("u", "b", "r2", 4); d.Verdict != Proceed {
		t.Fatalf("after the probe answered: %v", d)
	}
	// Same SKU: at MaxUnknown lost answers, probe first.
	for i := range MaxUnknown {
		r.Claim("v", "a", "x", 0)
		r.Done("v", "a", string(rune('a'+i)), true)
	}
	if d := r.Claim("v", "a", "y", 0); d.Verdict != Probe || len(d.RequestIDs) != MaxUnknown {
		t.Fatalf("at MaxUnknown: %v", d)
	}
}

// Resync replaces one SKU's reservations with the rebuilt state's and
// reports a user live on two SKUs.
func TestResync(t *testing.T) {
	r := New[int]()
	r.Reserved("u", "a", "a~1")
	r.Reserved("v", "a", "a~2")
	r.Claim("w", "a", "r", 0) // in flight: kept
	_, conflicts := r.Resync("a", map[string]string{"v": "a~2", "x": "a~3"}, nil)
	if len(conflicts) != 0 || r.Len() != 3 {
		t.Fatalf("resync: conflicts %v, %d claims", conflicts, r.Len())
	}
	if _, ok := r.HolderOf("u"); ok {
		t.Fatal("u's reservation, gone from the state, is still held")
	}
	if h, ok := r.HolderOf("x"); !ok || h.ReservationID != "a~3" {
		t.Fatalf("x: %+v", h)
	}
	if _, conflicts := r.Resync("b", map[string]string{"x": "b~1"}, nil); !slices.Equal(conflicts, []string{"x"}) {
		t.Fatalf("x live on a and b: %v", conflicts)
	}
}

// A lottery entry holds its user's claim: another SKU hears Held with the
// entry, the entry's win turns the hold into the reservation, its loss
// frees the user, and Resync rebuilds entry holds as it does purchases.
func TestEntryHolds(t *testing.T) {
	r := New[int]()
	if d := r.Claim("u", "lot", "e1", 0); d.Verdict != Proceed {
		t.Fatalf("first entry: %v", d)
	}
	r.Entered("u", "lot", "e1")
	r.Done("u", "lot", "e1", false)
	if d := r.Claim("u", "a", "r1", 0); d.Verdict != Held || d.SKU != "lot" || d.EntryRequestID != "e1" || d.ReservationID != "" {
		t.Fatalf("reserve while entered: %+v", d)
	}
	if d := r.Claim("u", "lot2", "e2", 0); d.Verdict != Held || d.EntryRequestID != "e1" {
		t.Fatalf("second lottery while entered: %+v", d)
	}
	if w := r.Closed("u", "lot", "e1"); w != nil || r.Len() != 1 {
		t.Fatal("a reservation close with the entry's id freed the entry")
	}
	// Won: the reservation replaces the entry.
	r.Apply("lot", []Event{{Kind: EventReserved, UserID: "u", ID: "lot~1"}})
	if d := r.Claim("u", "a", "r1", 0); d.Verdict != Held || d.ReservationID != "lot~1" || d.EntryRequestID != "" {
		t.Fatalf("reserve after the win: %+v", d)
	}
	if w := r.EntryEnded("u", "lot", "e1"); w != nil || r.Len() != 1 {
		t.Fatal("the won entry's end freed the reservation")
	}
	r.Apply("lot", []Event{{Kind: EventClosed, UserID: "u", ID: "lot~1"}})
	if d := r.Claim("u", "a", "r1", 0); d.Verdict != Proceed {
		t.Fatalf("reserve after the won reservation closed: %+v", d)
	}
	r.Done("u", "a", "r1", false)
	// Lost: the user is free.
	r.Apply("lot", []Event{{Kind: EventEntered, UserID: "v", ID: "e3"}, {Kind: EventEntryEnded, UserID: "v", ID: "e3"}})
	if r.Len() != 0 {
		t.Fatalf("%d claims after a lost entry", r.Len())
	}
	// Resync: entries held, a user entered on one SKU and live on another
	// is a conflict.
	_, conflicts := r.Resync("lot", map[string]string{"w": "lot~2"}, map[string]string{"x": "e4"})
	if h, ok := r.HolderOf("x"); len(conflicts) != 0 || !ok || h.EntryRequestID != "e4" || h.SKU != "lot" {
		t.Fatalf("resync: %v %+v", conflicts, h)
	}
	if _, conflicts := r.Resync("a", map[string]string{"x": "a~9"}, nil); !slices.Equal(conflicts, []string{"x"}) {
		t.Fatalf("x entered on lot and live on a: %v", conflicts)
	}
	// The conflicting purchase is kept: when x's entry is gone, x is still
	// held by it (a restore of one SKU alone must not free a second buy).
	r.Resync("lot", map[string]string{"w": "lot~2"}, nil)
	if h, ok := r.HolderOf("x"); r.Len() != 2 || !ok || h.SKU != "a" || h.ReservationID != "a~9" {
		t.Fatalf("x after its entry went: %d claims, %+v", r.Len(), h)
	}
	if d := r.Claim("x", "b", "r9", 0); d.Verdict != Held || d.ReservationID != "a~9" {
		t.Fatalf("x on b: %+v", d)
	}
	if w := r.Closed("x", "a", "a~9"); r.Len() != 1 || w != nil {
		t.Fatalf("x after its purchase closed: %d claims", r.Len())
	}
}

// A user seen holding on two SKUs (a conflict) stays held until both
// holds end, whichever ends first; a claim on the conflicting SKU is
// answered Held, never Proceed.
func TestConflictingHoldsAreKept(t *testing.T) {
	r := New[int]()
	r.Entered("u", "lot", "e1")
	if _, conflict := r.Reserved("u", "plain", "plain~1"); !conflict {
		t.Fatal("no conflict reported")
	}
	r.EntryEnded("u", "lot", "e1") // the entry lost: the purchase still holds
	if d := r.Claim("u", "plain2", "r1", 0); d.Verdict != Held || d.SKU != "plain" || d.ReservationID != "plain~1" {
		t.Fatalf("a third SKU: %+v", d)
	}
	r.Closed("u", "plain", "plain~1")
	if d := r.Claim("u", "plain2", "r1", 0); d.Verdict != Proceed {
		t.Fatalf("after both ended: %+v", d)
	}
	r.Done("u", "plain2", "r1", false)

	// The extra hold ends first: the claim's own stays.
	r.Reserved("v", "a", "a~1")
	r.Reserved("v", "b", "b~1")
	r.Closed("v", "b", "b~1")
	if d := r.Claim("v", "c", "r2", 0); d.Verdict != Held || d.ReservationID != "a~1" {
		t.Fatalf("v: %+v", d)
	}
	// While the claim's SKU holds nothing but an extra hold stands, the
	// claim's own SKU is answered Held too.
	r.Reserved("w", "a", "a~2")
	r.Reserved("w", "b", "b~2")
	r.Closed("w", "a", "a~2")
	if d := r.Claim("w", "a", "r3", 0); d.Verdict != Held || d.SKU != "b" {
		t.Fatalf("w on a: %+v", d)
	}
	if r.Len() != 2 {
		t.Fatalf("%d claims, want v and w", r.Len())
	}
}

// Holds names entries apart from reservations, and Overlaps finds a user
// held twice by an entry and a purchase.
func TestHoldsAndOverlaps(t *testing.T) {
	if s, r, ok := ParseEntryHold(EntryHold("lot", "e1")); !ok || s != "lot" || r != "e1" {
		t.Fatalf("entry hold: %s %s %v", s, r, ok)
	}
	if _, _, ok := ParseEntryHold("c5~a~1~abcd"); ok {
		t.Fatal("a reservation id read as an entry hold")
	}
	lot := Holds("lot", map[string]string{"w": "c5~lot~1~aa"}, map[string]string{"u": "e1"})
	plain := Holds("a", map[string]string{"u": "c5~a~1~bb", "v": "c5~a~2~cc"}, nil)
	got := Overlaps([]map[string]string{lot, plain})
	if len(got) != 1 || !slices.Equal(got["u"], []string{"entry lot/e1", "c5~a~1~bb"}) {
		t.Fatalf("overlaps %v", got)
	}
	if n := Users([]map[string]string{{"w": "x"}, {"u": "y", "w": "z"}}); n != 2 {
		t.Fatalf("users %d", n)
	}
}
