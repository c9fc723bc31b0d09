package compare

import (
	"os"
	"sync"
	"syscall"
)

// groupSync is the cheapest durable append this machine offers, for the
// null-fsync server: records go to one file with write(2), and a caller is
// released once an fdatasync(2) that began after its append has returned.
// Every append made while one write+fdatasync runs shares the next one
// (group commit), as a real log's would. It keeps no index, no framing and
// no state: the floor under any server that fsyncs before it answers.
type groupSync struct {
	file *os.File
	kick chan struct{} // capacity 1: "there are appends to sync"
	stop chan struct{}
	done chan struct{} // closed when run returns

	mu      sync.Mutex
	pending []byte     // appended since the last swap
	group   *syncGroup // what the appends in pending wait on
	closed  bool
}

// syncGroup is the appends that share one write+fdatasync; done closes
// when it returned, err is set before.
type syncGroup struct {
	done chan struct{}
	err  error
}

// maxPendingSync bounds the bytes waiting for one write (appends beyond it
// still join; the bound only sizes the reused buffers).
const maxPendingSync = 1 << 20

// openGroupSync creates (or truncates) path and starts the syncing goroutine.
func openGroupSync(path string) (*groupSync, error) {
	file, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	g := &groupSync{file: file, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		group: &syncGroup{done: make(chan struct{})}}
	go g.run()
	return g, nil
}

// append adds record to the file's next write and returns the group to
// wait on: record is durable once the group's done is closed with a nil err.
func (g *groupSync) append(record []byte) *syncGroup {
	g.mu.Lock()
	if !g.closed {
		g.pending = append(g.pending, record...)
	}
	group := g.group
	g.mu.Unlock()
	select {
	case g.kick <- struct{}{}:
	default:
	}
	return group
}

// run writes and fdatasyncs each group in turn until close, then fails
// the group still waiting.
func (g *groupSync) run() {
	defer close(g.done)
	buf := make([]byte, 0, maxPendingSync)
	for {
		select {
		case <-g.stop:
			g.mu.Lock()
			g.closed = true
			g.group.err = os.ErrClosed
			close(g.group.done)
			g.mu.Unlock()
			return
		case <-g.kick:
		}
		g.mu.Lock()
		if len(g.pending) == 0 {
			g.mu.Unlock()
			continue
		}
		buf, g.pending = g.pending, buf[:0]
		group := g.group
		g.group = &syncGroup{done: make(chan struct{})}
		g.mu.Unlock()
		_, err := g.file.Write(buf)
		if err == nil {
			err = syscall.Fdatasync(int(g.file.Fd()))
		}
		group.err = err
		close(group.done)
	}
}

// close fails the appends not yet being synced (os.ErrClosed), waits for
// the sync in progress, and closes the file.
func (g *groupSync) close() error {
	close(g.stop)
	<-g.done
	return g.file.Close()
}
