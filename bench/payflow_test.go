package bench

import (
	"strings"
	"testing"
	"time"
)

// A token handed on after an expire_at is a reuse after all when the final
// states show the earlier holder paid, still pending, or closed only after
// the next one got the token.
func TestPayflowChecksHandoversAgainstFinalStates(t *testing.T) {
	given := time.Unix(1_000_000, 0)
	handover := func(earlier string) TokenHandover {
		return TokenHandover{Token: "1", Earlier: earlier, Later: earlier + "-next", LaterCreatedAt: given}
	}
	states := map[string]ReservationStatus{
		"closed-before": {State: "CLOSED", ClosedAt: FormatTime(given.Add(-time.Millisecond))},
		"closed-at":     {State: "CLOSED", ClosedAt: FormatTime(given)},
		"unreadable":    {Error: "status 500"},
		"closed-after":  {State: "CLOSED", ClosedAt: FormatTime(given.Add(time.Millisecond))},
		"paid":          {State: "PAID"},
		"pending":       {State: "PENDING_PAYMENT"},
	}
	var handovers []TokenHandover
	for _, earlier := range []string{"closed-before", "closed-at", "unreadable", "closed-after", "paid", "pending", "never-read"} {
		handovers = append(handovers, handover(earlier))
	}
	reused, examples := checkHandovers(handovers, states)
	if reused != 4 || len(examples) != 4 {
		t.Fatalf("reused %d, want 4 (closed-after, paid, pending, never-read): %v", reused, examples)
	}
	for i, want := range []string{"closed-after was CLOSED", "paid was PAID", "pending was PENDING_PAYMENT", "never-read was unread"} {
		if !strings.Contains(examples[i], want) {
			t.Errorf("example %q, want %q", examples[i], want)
		}
	}
}
