package actors

import (
	"sync"

	"github.com/seckill/seckill/actors/sku"
)

// callKind names what a call asks of the SKU actor.
type callKind uint8

const (
	callReserve callKind = iota + 1
	callPay
	callClose
	callRelease
	callPause
	callResume
	callDefine
	callGet
	callLookup
	callAudit
	callRefunds
	callHash
)

var callNames = [...]string{"", "reserve", "pay", "close", "release", "pause", "resume", "define", "get", "lookup", "audit", "refunds", "hash"}

func (k callKind) String() string { return callNames[k] }

// call is one request to a SKU actor and, once answered, its reply. The
// actor decides it, appends its records and releases it with its batch
// once the log is durable up to the last record the batch appended. Calls
// are pooled; a call abandoned by its caller (context done) is not returned
// to the pool, since the actor may still answer it.
type call struct {
	kind callKind
	// arguments
	requestID, userID, paymentID string
	seq                          uint32
	tag                          string // of the reservation id: checked by the SKU
	amount                       int64
	reason                       sku.CloseReason
	def                          *sku.Definition // callDefine only
	enqueuedAt                   int64           // monotonic ns, the sojourn stamp

	// reply, written by the actor before Await and read by the caller after done
	result  sku.Result
	outcome sku.Outcome
	found   bool
	wrote   bool        // the call appended records: a log failure leaves it unknown
	report  *callReport // callAudit, callRefunds and callHash only
	err     error

	done chan struct{} // capacity 1
}

// callReport is the reply of the rare calls that read a whole SKU. It
// lives outside call so that a reserve's call stays a few cache lines:
// the caller writes it, the actor's core reads it and writes the result,
// and the caller's core reads that back.
type callReport struct {
	audit   sku.Audit
	refunds []sku.Refund
	hash    [32]byte
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

func newCall(kind callKind) *call {
	c := callPool.Get().(*call)
	c.kind = kind
	return c
}

// newReportCall returns a call of a kind that replies with a callReport.
func newReportCall(kind callKind) *call {
	c := newCall(kind)
	c.report = new(callReport)
	return c
}

// free returns an answered call to the pool.
func (c *call) free() {
	done := c.done
	*c = call{done: done}
	callPool.Put(c)
}

// answer releases the call at once, without waiting for the log (used when
// nothing was decided, e.g. the SKU is unavailable).
func (c *call) answer(err error) {
	c.err = err
	c.done <- struct{}{}
}

// batch is the calls of one drain that wait on the log, released together:
// it is their one wal.Waiter. Batches are pooled with their slices.
type batch struct {
	calls []*call
	// published on release: the SKU's state as of the batch's last record
	owner *SKU
	view  durableView
}

var batchPool = sync.Pool{New: func() any { return new(batch) }}

// Durable implements wal.Waiter: every record of the batch is now fsynced
// (err == nil), or the log failed. It publishes the SKU's durable state,
// then wakes each caller. It runs on the log's releaser goroutine, in index
// order, and never blocks (each done channel has room for the one reply).
func (b *batch) Durable(err error) {
	if err == nil {
		b.owner.publish(b.view)
	}
	for i, c := range b.calls {
		switch {
		case err != nil && c.wrote:
			c.err = ErrResultUnknown // its records may have reached the disk
		case err != nil:
			c.err = ErrUnavailable // it wrote nothing: nothing was done
		}
		c.done <- struct{}{}
		b.calls[i] = nil
	}
	b.calls, b.owner = b.calls[:0], nil
	batchPool.Put(b)
}
