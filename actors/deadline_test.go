package actors

import (
	"context"
	"testing"
	"time"
)

// A Deadline is a context: Done closes and Err turns DeadlineExceeded when
// its time comes, not before.
func TestDeadlineIsAContext(t *testing.T) {
	at := time.Now().Add(20 * time.Millisecond)
	var d context.Context = NewDeadline(at)
	if got, ok := d.Deadline(); !ok || !got.Equal(at) {
		t.Fatalf("Deadline() = %v, %v", got, ok)
	}
	if err := d.Err(); err != nil && time.Now().Before(at) {
		t.Fatalf("Err() before the deadline: %v", err)
	}
	<-d.Done()
	if time.Now().Before(at) {
		t.Fatal("Done closed before the deadline")
	}
	if err := d.Err(); err != context.DeadlineExceeded {
		t.Fatalf("Err() after Done: %v", err)
	}
	if d.Value("any") != nil {
		t.Fatal("a Deadline carries a value")
	}
	// A Done asked for after the end is closed already.
	ended := NewDeadline(time.Now().Add(-time.Second))
	<-ended.Done()
}

// Exactly one of the actor's answer and the Deadline's end wakes a call's
// caller; an end that comes after the call was answered, freed and taken
// again for another request leaves that request alone.
func TestDeadlineAbandonsOnlyItsCall(t *testing.T) {
	c := &call{done: make(chan struct{}, 1)}
	gen := c.gen()
	c.abandon(gen)
	c.release() // the actor answers late: no second send (it would block)
	<-c.done
	if !c.abandoned() || len(c.done) != 0 {
		t.Fatalf("abandoned %v, %d sends waiting", c.abandoned(), len(c.done))
	}

	c = &call{done: make(chan struct{}, 1)}
	gen = c.gen()
	c.release()
	c.abandon(gen) // too late
	<-c.done
	if c.abandoned() || len(c.done) != 0 {
		t.Fatalf("answered first: abandoned %v, %d sends waiting", c.abandoned(), len(c.done))
	}
	c.reset() // taken again for another request (free without the pool)
	c.abandon(gen)
	if c.abandoned() || len(c.done) != 0 {
		t.Fatal("an old Deadline abandoned the call's next request")
	}
	c.release()
	<-c.done
}
