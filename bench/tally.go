package bench

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxErrorKinds bounds the table of error causes; later causes count as "other".
const maxErrorKinds = 32

// Tally counts what a load run has sent and been answered. Counters are
// atomic so that the progress line and the timeline can read them live.
type Tally struct {
	counts   [OutcomeCount]atomic.Int64
	attempts atomic.Int64 // attempts whose last answer arrived
	latency  *LatencyRecorder
	ledger   *Ledger
	// soldOutBySKU counts SOLD_OUT answers per SKU index, to tell undersold SKUs.
	soldOutBySKU []atomic.Int64

	errorMu    sync.Mutex
	errorKinds map[string]int64
}

// NewTally returns a tally for skus SKUs with a latency recorder of the
// given stripes and an optional ledger (nil when the run does not check who
// won what).
func NewTally(stripes int, ledger *Ledger, skus int) *Tally {
	return &Tally{
		latency:      NewLatencyRecorder(stripes),
		ledger:       ledger,
		soldOutBySKU: make([]atomic.Int64, max(skus, 1)),
		errorKinds:   make(map[string]int64),
	}
}

// Record notes one answer: counters, latency and ledger.
func (t *Tally) Record(worker int, attempt Attempt, reply Reply, latency time.Duration) {
	outcome := reply.Outcome
	if outcome >= OutcomeCount {
		outcome = OutcomeError
	}
	t.counts[outcome].Add(1)
	t.latency.Record(worker, outcome, latency)
	switch outcome {
	case OutcomeError:
		t.noteError(reply.Detail)
	case OutcomeSoldOut:
		if attempt.SKU >= 0 && attempt.SKU < len(t.soldOutBySKU) {
			t.soldOutBySKU[attempt.SKU].Add(1)
		}
	}
	if t.ledger != nil {
		t.ledger.Note(attempt, reply)
	}
}

// FinishAttempt counts one attempt as done (after its last resend).
func (t *Tally) FinishAttempt() { t.attempts.Add(1) }

func (t *Tally) noteError(detail string) {
	detail = strings.TrimSpace(detail)
	if detail == "" {
		detail = "unknown"
	}
	if len(detail) > 80 {
		detail = detail[:80]
	}
	t.errorMu.Lock()
	if _, known := t.errorKinds[detail]; !known && len(t.errorKinds) >= maxErrorKinds {
		detail = "other"
	}
	t.errorKinds[detail]++
	t.errorMu.Unlock()
}

// Counts returns the number of answers per outcome so far.
func (t *Tally) Counts() [OutcomeCount]int64 {
	var counts [OutcomeCount]int64
	for i := range counts {
		counts[i] = t.counts[i].Load()
	}
	return counts
}

// Sent returns the number of answers (and transport errors) so far,
// resends included.
func (t *Tally) Sent() int64 {
	var sent int64
	for i := range t.counts {
		sent += t.counts[i].Load()
	}
	return sent
}

// SoldOut returns the SOLD_OUT answers of one SKU index.
func (t *Tally) SoldOut(sku int) int64 {
	if sku < 0 || sku >= len(t.soldOutBySKU) {
		return 0
	}
	return t.soldOutBySKU[sku].Load()
}

// Attempts returns the number of finished attempts.
func (t *Tally) Attempts() int64 { return t.attempts.Load() }

// Latency returns the merged histograms.
func (t *Tally) Latency() LatencySet { return t.latency.Merge() }

// Ledger returns the ledger given at creation (may be nil).
func (t *Tally) Ledger() *Ledger { return t.ledger }

// ErrorKinds returns the error causes, most frequent first.
func (t *Tally) ErrorKinds() []ErrorKind {
	t.errorMu.Lock()
	kinds := make([]ErrorKind, 0, len(t.errorKinds))
	for detail, count := range t.errorKinds {
		kinds = append(kinds, ErrorKind{Detail: detail, Count: count})
	}
	t.errorMu.Unlock()
	sort.Slice(kinds, func(i, j int) bool {
		if kinds[i].Count != kinds[j].Count {
			return kinds[i].Count > kinds[j].Count
		}
		return kinds[i].Detail < kinds[j].Detail
	})
	return kinds
}

// ErrorKind is one cause of OutcomeError and how often it happened.
type ErrorKind struct {
	// Detail is the cause in a few words.
	Detail string `json:"detail"`
	// Count is how many answers had that cause.
	Count int64 `json:"count"`
}
