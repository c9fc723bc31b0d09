package bench

import (
	"sync"
	"testing"
	"time"
)

// Workers record into their own stripes; the readers add them up.
func TestTallyAddsUpTheStripes(t *testing.T) {
	const workers, each, skus = 100, 500, 3
	tally := NewTally(64, NewLedger(nil), skus)
	at := time.Unix(1_000_000, 0)
	var wait sync.WaitGroup
	for worker := range workers {
		wait.Add(1)
		go func() {
			defer wait.Done()
			for i := range each {
				attempt := Attempt{Request: int64(worker*each + i), SKU: i % skus}
				reply := Reply{Outcome: OutcomeSoldOut}
				if i%5 == 0 {
					reply = Reply{Outcome: OutcomeAccepted, ReservationID: "r" + time.Duration(attempt.Request).String()}
				}
				tally.Record(worker, attempt, reply, at, time.Millisecond)
				tally.FinishAttempt(worker, reply.Outcome)
			}
			tally.Record(worker, Attempt{SKU: skus}, Reply{Outcome: OutcomeSoldOut}, at, time.Millisecond) // SKU out of range
		}()
	}
	wait.Wait()
	counts := tally.Counts()
	if counts[OutcomeAccepted] != workers*each/5 || counts[OutcomeSoldOut] != workers*each*4/5+workers {
		t.Errorf("counts %v", counts)
	}
	if tally.Sent() != workers*each+workers || tally.Attempts() != workers*each {
		t.Errorf("sent %d, attempts %d", tally.Sent(), tally.Attempts())
	}
	var soldOut int64
	for sku := range skus {
		if tally.SoldOut(sku) == 0 {
			t.Errorf("SKU %d: no SOLD_OUT counted", sku)
		}
		soldOut += tally.SoldOut(sku)
	}
	if soldOut != workers*each*4/5 || tally.SoldOut(skus) != 0 || tally.SoldOut(-1) != 0 {
		t.Errorf("sold out by SKU adds to %d, want %d", soldOut, workers*each*4/5)
	}
	if got := tally.Latency().Overall.TotalCount(); got != workers*each+workers {
		t.Errorf("latency count %d", got)
	}
	if got := tally.Ledger().Check(skus, func(int) int64 { return 1 << 40 }, 0).Accepted; got != workers*each/5 {
		t.Errorf("ledger accepted %d", got)
	}
}
