package actors

import (
	"strconv"
	"sync"
	"testing"

	"github.com/seckill/seckill/actors/sku"
)

// A burst of operators' snapshots and audits reaches the actor as one
// message per burst (ops.posted), so its bounded mailbox holds at most
// mailboxMax messages: a sender not coalesced would make MessagePosted
// panic. Every caller is answered.
func TestOperatorsShareOneMessage(t *testing.T) {
	clock := &fakeClock{}
	d := testDef(100)
	e := openTest(t, t.TempDir(), clock, &d)
	const callers = 200
	var wg sync.WaitGroup
	errs := make(chan error, 2*callers)
	for range callers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := e.Snapshot(ctxT(t), "c1", "s1")
			errs <- err
		}()
		go func() {
			defer wg.Done()
			_, err := e.Audit(ctxT(t), "c1", "s1")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := e.SKU("c1", "s1").mailbox.Load(); n > mailboxMax || n < 0 {
		t.Fatalf("%d messages counted in the mailbox", n)
	}
}

// A caller that runs its SKU's idle actor hands it its drain without
// queueing it (pinnedMailbox.postAndRun): such a drain is not counted in
// the mailbox, and taking it must not count one out. One at a time, every
// reserve takes that path; a count left behind by each would pass the
// bound (MessagePosted panics) or go below zero within these.
func TestCallerRunsKeepTheMailboxCount(t *testing.T) {
	clock := &fakeClock{}
	d := testDef(100)
	e := openTest(t, t.TempDir(), clock, &d)
	for i := range 4 * mailboxMax {
		id := strconv.Itoa(i)
		if res, err := e.Reserve(ctxT(t), "c1", "s1", "r"+id, "u"+id); err != nil || res.Outcome != sku.OutcomeAccepted {
			t.Fatalf("reserve %d: %v, %v", i, res.Outcome, err)
		}
	}
	if n := e.SKU("c1", "s1").mailbox.Load(); n > mailboxMax || n < 0 {
		t.Fatalf("%d messages counted in the mailbox", n)
	}
}
