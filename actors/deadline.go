package actors

import (
	"context"
	"sync"
	"time"
)

// Deadline is a context that ends at a fixed time, meant to be shared by
// the many calls that begin within a short while of each other (the HTTP
// ingress gives every reserve of a 10 ms grain one). A call made with it
// waits for its answer with a plain channel receive instead of a select
// on its answer and Done: the call enlists with the Deadline, whose one
// timer abandons, when it ends, each enlisted call not answered by then
// (that call's caller then gets the context's error, as with any
// context). Any other context works as before.
type Deadline struct {
	at    time.Time
	timer *time.Timer // ends it; kept so that it is not collected early

	mu    sync.Mutex
	calls []enlisted // the calls to abandon when it ends
	first [4]enlisted
	done  chan struct{} // made by the first Done
	ended bool          // calls enlist no more; Err is DeadlineExceeded
}

// enlisted is a call waiting under a Deadline, at the generation it had
// then: a call answered, freed and reused since is not abandoned.
type enlisted struct {
	c   *call
	gen uint64
}

// NewDeadline returns a Deadline that ends at at.
func NewDeadline(at time.Time) *Deadline {
	d := &Deadline{at: at}
	d.calls = d.first[:0]
	d.timer = time.AfterFunc(time.Until(at), d.end)
	return d
}

// Deadline implements context.Context.
func (d *Deadline) Deadline() (time.Time, bool) { return d.at, true }

// Done implements context.Context.
func (d *Deadline) Done() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done == nil {
		d.done = make(chan struct{})
		if d.ended {
			close(d.done)
		}
	}
	return d.done
}

// Err implements context.Context.
func (d *Deadline) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ended {
		return context.DeadlineExceeded
	}
	return nil
}

// Value implements context.Context: a Deadline carries no values.
func (d *Deadline) Value(any) any { return nil }

// enlist has c abandoned if it is still unanswered when d ends; false if
// d has ended already.
func (d *Deadline) enlist(c *call, gen uint64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ended {
		return false
	}
	d.calls = append(d.calls, enlisted{c, gen})
	return true
}

// end abandons every enlisted call still unanswered: its caller wakes
// and returns the context's error.
func (d *Deadline) end() {
	d.mu.Lock()
	calls := d.calls
	d.calls, d.ended = nil, true
	if d.done != nil {
		close(d.done)
	}
	d.mu.Unlock()
	for _, e := range calls {
		e.c.abandon(e.gen)
	}
}
