package wal

import (
	"errors"
	"strings"
)

// TailDecision is what DecideTail rules about the bytes of a log's newest
// segment: keep the first Keep bytes, drop the rest.
type TailDecision struct {
	// Keep is the size in bytes of the valid prefix: whole frames at
	// consecutive indexes from the segment's first index.
	Keep int
	// Dropped is the size in bytes of the torn tail after Keep (0 when
	// every byte is valid).
	Dropped int
	// LastIndex is the index of the last frame kept (the segment's first
	// index minus 1 when none is).
	LastIndex uint64
	// Reason says what the dropped bytes are, with the offset and index
	// where they start ("" when nothing is dropped), e.g. "offset 80
	// (index 5): entry runs past end of file; the 12 bytes to end of file
	// are a cut entry".
	Reason string
}

// DecideTail is the one owner of the torn-tail rule: given the whole
// contents of a log's newest segment, data, whose first entry must have
// index firstIndex, it decides how much to keep. Open's repair (repairTail)
// cuts the file to Keep, the read-only Reader reports Dropped and Reason
// without cutting, and a simulated store can call it on its own bytes to
// make the same decision.
//
// The rule (see ScanSegment): bytes after the last valid frame are a torn
// tail (a cut write, zeroes, garbage) when no valid frame with a larger
// index follows them; they are dropped. When one does follow, or a valid
// frame holds an unexpected index, the damage is in the middle of the log:
// DecideTail returns an error wrapping ErrCorrupt (with byte offsets and
// indexes) and the decision of what is valid before it; nothing may be
// dropped. It is pure and safe on any input.
func DecideTail(data []byte, firstIndex uint64) (TailDecision, error) {
	keep, last, err := ScanSegment(data, firstIndex)
	d := TailDecision{Keep: keep, LastIndex: last}
	switch {
	case err == nil:
		return d, nil
	case !errors.Is(err, ErrTornTail):
		return d, err
	}
	d.Dropped = len(data) - keep
	d.Reason = strings.TrimPrefix(err.Error(), ErrTornTail.Error()+": ")
	return d, nil
}
