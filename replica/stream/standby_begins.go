package stream

import (
	"sync"

	"github.com/seckill/seckill/internal/skudir"
)

// A session's begins of its copies, side by side. A begin makes a SKU's
// copy ready for its records: the folder and log of a SKU new to the
// standby, the epoch history, a cut or the drop before a base copy, a
// few fsyncs each. One after another on the session goroutine, each
// costs the disk's round trips while every later message waits, and the
// primary's strict commits of a list of new SKUs, which it defines
// skudir.AtOnce at once (actors.Engine.DefineAll), wait for each other
// there; side by side, the disk takes their fsyncs together. A SKU's
// later messages queue behind its begin, so each copy still takes its
// messages in the primary's order; the other SKUs' do not wait.

const (
	// beginsAtOnce bounds the begins that run at once, as the primary
	// bounds the definitions it makes at once.
	beginsAtOnce = skudir.AtOnce
	// A SKU's messages that wait behind its begin, at most: beyond, the
	// session waits for the begin to end before it reads on.
	queuedMessages = 64
	queuedBytes    = 1 << 20
)

// begins runs a session's begins beside it. Only the session goroutine
// calls its methods; run is each begin's own goroutine.
type begins struct {
	slots chan struct{}
	// abort ends the session's connection, so that a session blocked on
	// reading from it learns of a begin's failure.
	abort func()
	wg    sync.WaitGroup

	mu      sync.Mutex
	running map[skuKey]*beginning
	err     error // the first failure: the session's
}

// beginning is one SKU's begin running and the messages of that SKU that
// came after it, in order.
type beginning struct {
	queue []queued
	bytes int
	done  chan struct{}
}

// queued is a message waiting behind a begin, of size bytes.
type queued struct {
	f    func() error
	size int
}

func newBegins(abort func()) *begins {
	return &begins{slots: make(chan struct{}, beginsAtOnce), abort: abort, running: make(map[skuKey]*beginning)}
}

// start runs begin, a message of k's of size bytes, beside the session:
// behind k's messages still waiting, if a begin of k runs; otherwise on
// a goroutine of its own once fewer than beginsAtOnce run.
func (b *begins) start(k skuKey, size int, begin func() error) error {
	if behind, err := b.then(k, size, begin); behind || err != nil {
		return err
	}
	b.slots <- struct{}{}
	x := &beginning{done: make(chan struct{})}
	b.mu.Lock()
	b.running[k] = x
	b.mu.Unlock()
	b.wg.Add(1)
	go b.run(k, x, begin)
	return nil
}

// runs reports whether a begin of k runs (or its messages behind it):
// when not, none starts before the session's next start, and the
// session acts on k's message itself. err is a begin's failure, seen
// with the same lock its SKU stopped running under: the session ends
// rather than act on a message of a copy whose begin failed.
func (b *begins) runs(k skuKey) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.running[k] != nil, b.err
}

// then queues f, a message of k's of size bytes, behind k's begin if one
// runs (queued); the caller runs f itself otherwise. A full queue waits
// for the begin to end. err is a begin's failure: the session ends.
func (b *begins) then(k skuKey, size int, f func() error) (behind bool, err error) {
	for {
		b.mu.Lock()
		x, err := b.running[k], b.err
		if err != nil || x == nil {
			b.mu.Unlock()
			return false, err
		}
		if len(x.queue) < queuedMessages && x.bytes+size <= queuedBytes {
			x.queue = append(x.queue, queued{f, size})
			x.bytes += size
			b.mu.Unlock()
			return true, nil
		}
		b.mu.Unlock()
		<-x.done
	}
}

// run does k's begin, then the messages queued behind it, until none
// waits or one fails.
func (b *begins) run(k skuKey, x *beginning, f func() error) {
	defer b.wg.Done()
	for {
		err := f()
		b.mu.Lock()
		if err != nil && b.err == nil {
			b.err = err
			b.abort()
		}
		if err != nil || len(x.queue) == 0 {
			delete(b.running, k)
			b.mu.Unlock()
			break
		}
		f = x.queue[0].f
		x.bytes -= x.queue[0].size
		x.queue[0] = queued{}
		x.queue = x.queue[1:]
		b.mu.Unlock()
	}
	close(x.done)
	<-b.slots
}

// failure is why the session ends after reading failed with err: a
// begin's failure, which closed the connection, or err.
func (b *begins) failure(err error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return b.err
	}
	return err
}

// wait returns once no begin runs: the session's copies are then the
// next session's to open.
func (b *begins) wait() { b.wg.Wait() }
