package httpapi

import (
	"testing"
	"time"
)

// Every context handed out ends no sooner than timeout after get, and no
// later than timeout plus one grain; requests close in time share one.
func TestDeadlinesBoundEachRequest(t *testing.T) {
	d := &deadlines{timeout: 50 * time.Millisecond}
	shared := 0
	prev := d.get()
	for i := 0; i < 200; i++ {
		start := time.Now()
		ctx := d.get()
		end := time.Now()
		if ctx == prev {
			shared++
		}
		prev = ctx
		deadline, ok := ctx.Deadline()
		if !ok {
			t.Fatal("no deadline")
		}
		if early := start.Add(d.timeout); deadline.Before(early) {
			t.Fatalf("deadline %v is before start+timeout %v", deadline, early)
		}
		if late := end.Add(d.timeout + deadlineGrain); deadline.After(late) {
			t.Fatalf("deadline %v is after start+timeout+grain %v", deadline, late)
		}
		time.Sleep(100 * time.Microsecond)
	}
	if shared == 0 {
		t.Fatal("no two requests shared a context")
	}
	<-prev.Done() // and it does end
}
