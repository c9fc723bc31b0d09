package core

import (
	"errors"
	"fmt"

	"github.com/seckill/seckill/actors/sku"
)

// Errors set on calls and returned by the Core.
var (
	// ErrUnavailable: the SKU is recovering, failed to recover, or its log
	// failed (fail-stop); the call was not decided, or its decision was
	// not appended: nothing was done.
	ErrUnavailable = errors.New("SKU unavailable")
	// ErrResultUnknown: the call was decided and some of its records were
	// appended, then the log failed: they may or may not be on disk.
	ErrResultUnknown = errors.New("result unknown: the log failed after the call was decided")
	// ErrUndefined: the SKU has no definition yet (RequestSnapshot).
	ErrUndefined = errors.New("SKU not defined")
)

// Kind names what a call asks of the SKU.
type Kind uint8

// Kinds of call.
const (
	KindReserve Kind = iota + 1
	KindPay
	KindClose
	KindRelease
	KindPause
	KindResume
	KindDefine
	KindGet
	KindLookup
	KindAudit
	KindRefunds
	KindHash
	KindEnter  // a lottery entry (Holder from the entry pass)
	KindDraw   // a lottery draw (Round, Randomness)
	KindEntry  // an entry's status by request_id
	KindFreeze // a frozen copy of the state (Report.Frozen)
	// KindReserveBatch decides the reserves in Call.Items in order, in
	// one round: one call, one waiter, one reply per item (batch.go).
	KindReserveBatch
	KindGrant  // a celled SKU: add an allocation (Cell.Alloc)
	KindReturn // a celled SKU: give back up to Cell.Units tokens as return Cell.Alloc.Seq
	KindEpoch  // a celled SKU: record epoch Cell.Alloc.Epoch
	KindCell   // a celled SKU: its grants, returns and epoch (Report.Cell)
	// KindCount is one more than the largest Kind: the size of a table
	// indexed by Kind.
	KindCount
)

var kindNames = [KindCount]string{"", "reserve", "pay", "close", "release", "pause", "resume", "define", "get", "lookup", "audit", "refunds", "hash", "enter", "draw", "entry", "freeze", "reserve_batch", "grant", "return", "epoch", "cell"}

// String returns the kind's name, e.g. "reserve" (a metrics label).
func (k Kind) String() string {
	if k >= KindCount {
		return "unknown"
	}
	return kindNames[k]
}

// Call is one request to a SKU and, once answered, its reply. The caller
// fills the arguments its Kind uses; the core writes the reply fields in
// Decide (and Err in Advance or Settle). A call is the caller's again
// once it is in an Answer list, or once Settle has run on it.
type Call struct {
	Kind Kind

	// Arguments.
	RequestID, UserID, PaymentID string
	// IDCell, Seq and Tag name a reservation (from its reservation id):
	// an id the SKU did not issue (sku.Machine.Issued) names none
	// (NOT_FOUND). Empty Tag: not checked.
	IDCell string
	Seq    uint32
	Tag    string
	Amount int64 // KindPay, minor units
	Reason sku.CloseReason
	Def    *sku.Definition // KindDefine only; its IDKey is filled by the core
	Cell   *CellCall       // KindGrant, KindReturn, KindEpoch only (cells.go)
	// Holder is KindReserve's and KindEnter's entry-pass holder (tier,
	// risk, subject keys); zero for a reserve or an entry without a pass.
	Holder sku.Holder
	// Lottery arguments.
	Round      uint64 // KindDraw: the beacon round
	Randomness []byte // KindDraw: its randomness, 32 bytes
	Signature  []byte // KindDraw: the beacon's signature of the round (optional)
	// Items are the reserves of a KindReserveBatch call (each KindReserve,
	// with its own Holder; at most MaxBatchItems): each gets its own
	// Result, Wrote and Err.
	Items []Call

	// Reply.
	Result  sku.Result
	Outcome sku.Outcome     // KindPause, KindResume, KindDefine
	Found   bool            // KindGet, KindLookup, KindEntry
	Entry   sku.EntryResult // KindEnter; KindEntry: Entry.Entry
	// Wrote is set when deciding the call produced records: a log failure
	// then leaves its result unknown.
	Wrote  bool
	Report *Report // KindAudit, KindRefunds and KindHash: the caller allocates it
	Err    error

	// Ref is the caller's own handle for the call (the actor host keeps
	// its pooled call there); the core never reads it.
	Ref any
}

// Report is the reply of the rare calls that read a whole SKU. It lives
// outside Call so that a reserve's call stays small.
type Report struct {
	Refunds []sku.Refund
	Hash    [32]byte
	Cell    CellReport  // KindCell
	Frozen  *sku.Frozen // KindFreeze, and KindAudit (recounted off the actor): read it off the actor
}

// Settle sets each call's Err once the records a Wait rests on are durable
// (err == nil: Err is left as Decide set it) or the log failed (err !=
// nil): a call that wrote records gets ErrResultUnknown (they may have
// reached the disk), one that wrote nothing ErrUnavailable (nothing was
// done). ErrResultUnknown carries the log's error as text (a full disk),
// for the operator who reads it (a campaign PUT's detail, seckilld's
// refusal to start), and not wrapped: that error may wrap ErrUnavailable,
// which would say that nothing was done.
func Settle(calls []*Call, err error) {
	if err == nil {
		return
	}
	unknown := fmt.Errorf("%w (%v)", ErrResultUnknown, err)
	for _, c := range calls {
		settleItems(c, unknown)
		if c.Wrote {
			c.Err = unknown
		} else {
			c.Err = ErrUnavailable
		}
	}
}
