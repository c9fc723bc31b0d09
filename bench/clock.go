package bench

import (
	"context"
	"time"
)

// Clock is the driver's source of time, replaced by a logical clock in tests.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// SleepUntil blocks until t (returning at once when t is past). It
	// returns false when ctx ends first.
	SleepUntil(ctx context.Context, t time.Time) bool
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// SleepUntil sleeps on a timer until t or until ctx ends.
func (RealClock) SleepUntil(ctx context.Context, t time.Time) bool {
	wait := time.Until(t)
	if wait <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
