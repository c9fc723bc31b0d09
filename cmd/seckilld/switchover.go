package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/replica"
)

// A switchover (seckillctl ha switchover --to B; Patroni's switchover)
// hands the lead to standby B with nothing acknowledged lost and a short
// pause: the primary stops admitting (the API answers 503 UNAVAILABLE,
// Retry-After 1), finishes the requests in flight and closes its engine
// (every record flushed, and committed only once B and the other waited
// standbys hold it), waits until B acknowledged every record it shipped,
// and releases the leader key naming B alone as the next leader
// (Coordinator.Release). B, reading the free key on its next tick, takes
// it and serves; this replica follows it. If B is not caught up in
// switchoverCatchUp, the primary serves on (the engine opens again in the
// same tenure) and says why in /admin/replica's "switchover".

// switchoverCatchUp bounds the wait for the target to hold every record.
const switchoverCatchUp = 5 * time.Second

// errSwitchoverBusy: a switchover is already asked for.
var errSwitchoverBusy = errors.New("a switchover is in progress")

// askSwitchover queues a switchover to standby to for the runner.
func (n *haNode) askSwitchover(to string) error {
	select {
	case n.switchTo <- to:
		return nil
	default:
		return errSwitchoverBusy
	}
}

func (n *haNode) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	n.switchNote.Store(&s)
	n.log.Info("switchover: " + s)
}

// switchover hands the lead to standby to; an error is one the replica
// cannot go on from (its engine would not open again).
func (n *haNode) switchover(to string) error {
	t := n.primary
	if t == nil {
		n.note("refused: %s is not the primary", n.opts.replica.name)
		return nil
	}
	ready := func() (replica.Follower, bool) {
		for _, f := range t.stream.Followers() {
			if f.Name == to {
				return f.Follower, f.Connected && f.CaughtUp
			}
		}
		return replica.Follower{}, false
	}
	if _, ok := ready(); !ok {
		n.note("refused: standby %s is not connected and caught up", to)
		return nil
	}
	start := time.Now()
	n.paused.Store(true)
	defer n.paused.Store(false)
	if err := n.closeService(t); err != nil {
		return fmt.Errorf("switchover: closing the engine: %w", err)
	}
	for deadline := time.Now().Add(switchoverCatchUp); ; time.Sleep(5 * time.Millisecond) {
		if f, ok := ready(); ok && f.LagRecords == 0 {
			break
		}
		if time.Now().After(deadline) {
			n.note("aborted: standby %s did not acknowledge every record within %s; serving on", to, switchoverCatchUp)
			return n.reopen(t)
		}
	}
	ctx, cancel := n.call()
	err := n.coord.Release(ctx, t.holding, []string{to})
	cancel()
	if err != nil && !errors.Is(err, replica.ErrNotLeader) {
		n.note("aborted: releasing the leader key: %v; serving on", err)
		return n.reopen(t)
	}
	// From here this replica leads no more (released, or lost meanwhile).
	n.primary, n.lost = nil, nil
	if cerr := t.stream.Close(); cerr != nil {
		n.log.Warn("closing the replication stream", "err", cerr)
	}
	if err := n.startStandbyHTTP(); err != nil {
		return err
	}
	n.note("handed the lead of epoch %d to %s after a pause of %s here", t.holding.Epoch, to, time.Since(start).Round(time.Millisecond))
	return n.perform(n.node.Lost(t.holding))
}

// reopen serves again in t's tenure after an aborted switchover.
func (n *haNode) reopen(t *primaryTenure) error {
	if err := n.openTenure(t); err != nil {
		return fmt.Errorf("switchover aborted, and the engine does not open again: %w", err)
	}
	go func() { t.served <- t.svc.srv.Serve(n.http.Take()) }()
	return nil
}
