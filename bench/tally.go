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

// Tally counts what a load run has sent and been answered. Each worker
// counts into its own stripe (worker modulo the stripes), so that workers
// do not share written cache lines; readers add the stripes up. Counters
// are atomic so that the progress line and the timeline can read them live.
type Tally struct {
	stripes []tallyStripe
	// soldOut counts SOLD_OUT answers per stripe and SKU index, to tell
	// undersold SKUs: stripe i's SKU j is soldOut[i*soldOutStride+j].
	soldOut       []atomic.Int64
	soldOutStride int
	skus          int
	latency       *LatencyRecorder
	ledger        *Ledger

	errorMu    sync.Mutex
	errorKinds map[string]int64
}

// tallyStripe is the counters of the workers of one stripe.
type tallyStripe struct {
	counts   [OutcomeCount]atomic.Int64
	attempts atomic.Int64 // attempts whose last answer arrived
	// unanswered counts the attempts whose last request got no answer of
	// the API (OutcomeError): what the server did with them is unknown.
	unanswered atomic.Int64
	_          [cacheLine]byte
}

// cacheLine pads per-worker state apart (two lines: the CPU fetches pairs).
const cacheLine = 128

// NewTally returns a tally for skus SKUs with the given number of stripes
// (for its counters and latency recorder) and an optional ledger (nil when
// the run does not check who won what).
func NewTally(stripes int, ledger *Ledger, skus int) *Tally {
	stripes, skus = max(stripes, 1), max(skus, 1)
	stride := (skus + cacheLine/8 - 1) / (cacheLine / 8) * (cacheLine / 8)
	return &Tally{
		stripes:       make([]tallyStripe, stripes),
		soldOut:       make([]atomic.Int64, stripes*stride),
		soldOutStride: stride,
		skus:          skus,
		latency:       NewLatencyRecorder(stripes),
		ledger:        ledger,
		errorKinds:    make(map[string]int64),
	}
}

// Record notes one answer, which arrived at at after latency: counters,
// latency and ledger. worker selects the stripe.
func (t *Tally) Record(worker int, attempt Attempt, reply Reply, at time.Time, latency time.Duration) {
	outcome := reply.Outcome
	if outcome >= OutcomeCount {
		outcome = OutcomeError
	}
	stripe := worker % len(t.stripes)
	t.stripes[stripe].counts[outcome].Add(1)
	t.latency.Record(worker, outcome, latency)
	switch outcome {
	case OutcomeError:
		t.noteError(reply.Detail)
	case OutcomeSoldOut:
		if attempt.SKU >= 0 && attempt.SKU < t.skus {
			t.soldOut[stripe*t.soldOutStride+attempt.SKU].Add(1)
		}
	}
	if t.ledger != nil {
		t.ledger.Note(worker, at, attempt, reply)
	}
}

// FinishAttempt counts one attempt of the worker as done (after its last
// resend); last is the outcome of its last request.
func (t *Tally) FinishAttempt(worker int, last Outcome) {
	stripe := &t.stripes[worker%len(t.stripes)]
	stripe.attempts.Add(1)
	if last == OutcomeError {
		stripe.unanswered.Add(1)
	}
}

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
	for i := range t.stripes {
		for outcome := range counts {
			counts[outcome] += t.stripes[i].counts[outcome].Load()
		}
	}
	return counts
}

// Sent returns the number of answers (and transport errors) so far,
// resends included.
func (t *Tally) Sent() int64 {
	var sent int64
	for _, count := range t.Counts() {
		sent += count
	}
	return sent
}

// SoldOut returns the SOLD_OUT answers of one SKU index.
func (t *Tally) SoldOut(sku int) int64 {
	if sku < 0 || sku >= t.skus {
		return 0
	}
	var total int64
	for stripe := range t.stripes {
		total += t.soldOut[stripe*t.soldOutStride+sku].Load()
	}
	return total
}

// Attempts returns the number of finished attempts.
func (t *Tally) Attempts() int64 {
	var attempts int64
	for i := range t.stripes {
		attempts += t.stripes[i].attempts.Load()
	}
	return attempts
}

// Unanswered returns the number of finished attempts whose last request
// got no answer of the API: a transport failure or an answer outside the
// contract, not settled by a resend.
func (t *Tally) Unanswered() int64 {
	var unanswered int64
	for i := range t.stripes {
		unanswered += t.stripes[i].unanswered.Load()
	}
	return unanswered
}

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
