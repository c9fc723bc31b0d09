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

// call is one request to a SKU actor and, once answered, its reply. It is
// the wal.Waiter of the reply: the actor decides, appends the records, and
// registers the call to be released when the log is durable up to the last
// record it depends on. Calls are pooled; a call abandoned by its caller
// (context done) is not returned to the pool, since the actor may still
// answer it.
type call struct {
	kind callKind
	// arguments
	requestID, userID, paymentID string
	seq                          uint32
	tag                          string // of the reservation id: checked by the SKU
	amount                       int64
	reason                       sku.CloseReason
	def                          sku.Definition
	enqueuedAt                   int64 // monotonic ns, the sojourn stamp

	// reply, written by the actor before Await and read by the caller after done
	result  sku.Result
	outcome sku.Outcome
	found   bool
	audit   sku.Audit
	refunds []sku.Refund
	hash    [32]byte
	err     error

	// published with the reply: the SKU's state as of the records it depends on
	owner *SKU
	view  durableView

	done chan struct{} // capacity 1
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

func newCall(kind callKind) *call {
	c := callPool.Get().(*call)
	c.kind = kind
	return c
}

// free returns an answered call to the pool.
func (c *call) free() {
	done := c.done
	*c = call{done: done}
	callPool.Put(c)
}

// Durable implements wal.Waiter: every record the reply depends on is now
// fsynced (err == nil), or the log failed. It publishes the SKU's durable
// state and wakes the caller. It runs on the log's flusher goroutine, in
// index order, and never blocks.
func (c *call) Durable(err error) {
	if err != nil {
		c.err = ErrUnavailable
	} else if c.owner != nil {
		c.owner.publish(c.view)
	}
	c.done <- struct{}{}
}

// answer releases the call at once, without waiting for the log (used when
// nothing was decided, e.g. the SKU is unavailable).
func (c *call) answer(err error) {
	c.err = err
	c.owner = nil
	c.done <- struct{}{}
}
