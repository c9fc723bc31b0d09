package recovery

import (
	"fmt"
	"strings"

	"github.com/seckill/seckill/snapshot"
)

// Verdict is what Plan found out about one snapshot.
type Verdict uint8

// Verdicts. Usable, Base and Matches are good; Corrupt, Differs and
// ProvesShortLog are problems, and OtherSKU in verify mode; the others say
// why a sound snapshot was not used.
const (
	// Usable: it could start the replay (another one did).
	Usable Verdict = iota + 1
	// Base: the replay started from it.
	Base
	// Matches: verify mode replayed the log to its index and got its state.
	Matches
	// Corrupt: it does not read back whole (checksum, header, state), or
	// holds another index than its name says.
	Corrupt
	// Differs: verify mode replayed the log to its index and got another
	// state (Hash).
	Differs
	// Removed: it disappeared while recovery read it (pruned by a running
	// engine).
	Removed
	// OtherSKU: it is a snapshot of another campaign or SKU.
	OtherSKU
	// BeyondLog: it includes records after the log's last one, and it does
	// not read back whole (so it proves nothing).
	BeyondLog
	// ProvesShortLog: it includes records after the log's last one and
	// reads back whole: durable records are missing from the log.
	ProvesShortLog
	// OlderThanLog: it ends before the log's first record minus one: the
	// records between are gone.
	OlderThanLog
	// AfterPoint: it is after the point in time asked for (UntilIndex,
	// UntilTime).
	AfterPoint
)

func (v Verdict) String() string {
	switch v {
	case Usable:
		return "usable"
	case Base:
		return "base"
	case Matches:
		return "matches"
	case Corrupt:
		return "corrupt"
	case Differs:
		return "differs"
	case Removed:
		return "removed"
	case OtherSKU:
		return "other SKU"
	case BeyondLog:
		return "beyond log"
	case ProvesShortLog:
		return "proves short log"
	case OlderThanLog:
		return "older than log"
	case AfterPoint:
		return "after point"
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// SnapshotStatus is Plan's verdict on one snapshot, with the sentence an
// operator reads (seckillctl prints it as "status").
type SnapshotStatus struct {
	snapshot.File
	Verdict Verdict
	// Status is the verdict as a sentence, e.g. "usable", "base of the
	// replay", "matches the log", "corrupt: CRC-32C ...", "beyond the log
	// (which ends at 42)".
	Status string
	// Err is the cause of Corrupt and Removed, nil otherwise.
	Err error
}

// statusText renders a verdict; logFirst and logLast are the log's range.
func statusText(v Verdict, err error, logFirst, logLast uint64) string {
	switch v {
	case Usable:
		return "usable"
	case Base:
		return "base of the replay"
	case Matches:
		return "matches the log"
	case Corrupt:
		return corruptText(err)
	case Differs:
		return "differs from the log's state at its index"
	case Removed:
		return "removed while reading (pruned by the engine)"
	case OtherSKU:
		return "of another SKU: " + err.Error()
	case BeyondLog:
		return fmt.Sprintf("beyond the log (which ends at %d)", logLast)
	case ProvesShortLog:
		return fmt.Sprintf("beyond the log (which ends at %d): durable records are missing from the log", logLast)
	case OlderThanLog:
		return fmt.Sprintf("older than the log (which starts at %d)", logFirst)
	case AfterPoint:
		return "after the point in time asked for"
	}
	return v.String()
}

// corruptText is the status of a snapshot that does not read back, without
// the package prefixes of its error.
func corruptText(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "snapshot: corrupt: "); i >= 0 {
		msg = msg[i+len("snapshot: corrupt: "):]
	}
	return "corrupt: " + msg
}
