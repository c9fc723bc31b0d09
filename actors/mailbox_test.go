package actors

import (
	"sync"
	"testing"
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
