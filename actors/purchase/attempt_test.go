package purchase

import (
	"slices"
	"strings"
	"testing"
)

// The protocol's order as an executor meets it: each step, and what the
// registry holds after the executor's report.
func TestAttemptSteps(t *testing.T) {
	r := New[int]()
	first := NewAttempt(Direct[int]{Registry: r, Waiter: 1}, "u", "a", "r1")
	if step, _ := first.Next(); step != Run {
		t.Fatalf("first attempt: %v, want RUN", step)
	}
	// While r1 is being decided on a, a reserve of u on b must block.
	other := NewAttempt(Direct[int]{Registry: r, Waiter: 2}, "u", "b", "r2")
	if step, d := other.Next(); step != Block || d.SKU != "a" {
		t.Fatalf("other SKU while a decides: %v %v, want BLOCK on a", step, d)
	}
	other.Abandon()
	// r1's answer is lost: the claim keeps it until a look-up settles it.
	first.Ran(true)
	again := NewAttempt(Direct[int]{Registry: r, Waiter: 3}, "u", "b", "r3")
	step, d := again.Next()
	if step != Lookup || d.SKU != "a" || !slices.Equal(d.RequestIDs, []string{"r1"}) {
		t.Fatalf("after a lost answer: %v %v, want LOOKUP of r1 on a", step, d)
	}
	// The look-up did not answer: nothing may be decided.
	if step, _ := again.Probed([]string{"r1"}); step != Unknown {
		t.Fatalf("unanswered look-up: %v, want UNKNOWN", step)
	}
	// A later attempt probes again; this time the look-up answers (no
	// reservation), the claim is free and b may decide.
	last := NewAttempt(Direct[int]{Registry: r, Waiter: 4}, "u", "b", "r4")
	if step, _ := last.Next(); step != Lookup {
		t.Fatalf("the lost answer was dropped: %v, want LOOKUP", step)
	}
	if step, _ := last.Probed(nil); step != Run {
		t.Fatalf("answered look-up: %v, want RUN on b", step)
	}
	r.Reserved("u", "b", "b~1")
	last.Ran(false)
	held := NewAttempt(Direct[int]{Registry: r, Waiter: 5}, "u", "a", "r5")
	if step, d := held.Next(); step != AnswerHeld || d.ReservationID != "b~1" {
		t.Fatalf("with a live purchase on b: %v %v, want ANSWER_HELD b~1", step, d)
	}
}

// An executor that reports out of order is a programming error: the
// Attempt stops it at once, naming its state.
func TestAttemptMisuse(t *testing.T) {
	for name, misuse := range map[string]func(a *Attempt){
		"Ran before Next":     func(a *Attempt) { a.Ran(false) },
		"Probed before Next":  func(a *Attempt) { a.Probed(nil) },
		"Abandon before Next": func(a *Attempt) { a.Abandon() },
		"Next after Run":      func(a *Attempt) { a.Next(); a.Next() },
		"Ran twice":           func(a *Attempt) { a.Next(); a.Ran(false); a.Ran(false) },
	} {
		t.Run(name, func(t *testing.T) {
			a := NewAttempt(Direct[int]{Registry: New[int]()}, "u", "a", "r")
			defer func() {
				p, _ := recover().(string)
				if !strings.HasPrefix(p, "purchase: Attempt.") {
					t.Fatalf("no panic naming the misuse: %q", p)
				}
			}()
			misuse(&a)
		})
	}
}
