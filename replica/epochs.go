package replica

import (
	"fmt"
	"slices"
)

// EpochStart says that record First of a SKU log was the first written in
// Epoch: by the primary of that epoch, or copied from it by a standby.
// One primary writes per epoch, and a standby copies its frames as they
// are, so two logs that hold a record of the same epoch at the same index
// hold the same record (Kafka's leader epoch cache keeps the same fact).
type EpochStart struct {
	Epoch uint64 `json:"epoch"`
	First uint64 `json:"first"`
}

// History is a log's epochs in order: epochs and first indexes both
// strictly increasing. An epoch that wrote no record has no entry.
type History []EpochStart

// Check returns an error if h is not strictly increasing in both fields.
func (h History) Check() error {
	for i := 1; i < len(h); i++ {
		if h[i].Epoch <= h[i-1].Epoch || h[i].First <= h[i-1].First {
			return fmt.Errorf("replica: epoch history out of order at %d: %+v after %+v", i, h[i], h[i-1])
		}
	}
	return nil
}

// Begin records that record first is the first of epoch: an append of a
// new epoch's first record. A record of an older epoch than the last is
// a programming error (a replica refuses lower epochs before it appends).
func (h History) Begin(epoch, first uint64) History {
	if n := len(h); n > 0 {
		last := h[n-1]
		if epoch == last.Epoch {
			return h
		}
		if epoch < last.Epoch || first <= last.First {
			panic(fmt.Sprintf("replica: epoch %d from record %d after epoch %d from record %d", epoch, first, last.Epoch, last.First))
		}
	}
	return append(h, EpochStart{Epoch: epoch, First: first})
}

// CutAfter is the history of the log cut after record last.
func (h History) CutAfter(last uint64) History {
	i := len(h)
	for i > 0 && h[i-1].First > last {
		i--
	}
	return slices.Clone(h[:i])
}

// epochOf returns the epoch of record index in a log of history h (ok
// false when h has no entry at or below index).
func (h History) epochOf(index uint64) (epoch uint64, ok bool) {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].First <= index {
			return h[i].Epoch, true
		}
	}
	return 0, false
}

// Common returns the last record that a rejoining replica's log (history
// mine, last record myLast) shares with the primary's (history theirs,
// last record theirLast): the replica keeps records up to it and cuts the
// rest (wal.CutAfter) before it copies the primary's. A record is shared
// when both logs hold a record of the same epoch at its index; shared
// records form a prefix, as each epoch's records are one primary's.
func Common(mine History, myLast uint64, theirs History, theirLast uint64) uint64 {
	last := min(myLast, theirLast)
	for last > 0 {
		e, ok := mine.epochOf(last)
		if !ok {
			return 0
		}
		f, ok := theirs.epochOf(last)
		if ok && e == f {
			return last
		}
		// Each log holds one epoch from its run's start to here: no index
		// from the later of the two starts on can be shared.
		last = max(startOf(mine, last), startOf(theirs, last)) - 1
	}
	return 0
}

// startOf is the first record of the epoch holding index in h (1 when h
// has none at or below index).
func startOf(h History, index uint64) uint64 {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].First <= index {
			return h[i].First
		}
	}
	return 1
}
