package feed

import (
	"fmt"
	"sync"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// MemLog is a Log in memory, for tests (hashicorp/raft's InmemStore):
// records are appended, made durable, truncated and the log failed or
// closed by hand, so a test sets up any state a reader can meet. Its zero
// value is not usable: NewMemLog.
type MemLog struct {
	mu      sync.Mutex
	first   uint64   // index of records[0]
	records []record // first.., appended; durable through durable
	durable uint64
	err     error
	// advanced is closed when durable moves, the log fails or closes.
	advanced chan struct{}
}

// record is one record of a MemLog.
type record struct {
	typ     byte
	payload []byte
}

// NewMemLog returns an empty log whose first record will be index 1.
func NewMemLog() *MemLog { return &MemLog{first: 1} }

// Append adds records (not durable yet) and returns the index of the last.
func (m *MemLog) Append(records ...sku.Record) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range records {
		m.records = append(m.records, record{typ: byte(r.Type), payload: r.AppendPayload(nil)})
	}
	return m.first + uint64(len(m.records)) - 1
}

// Sync makes every record appended durable and wakes the readers waiting.
func (m *MemLog) Sync() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.durable = m.first + uint64(len(m.records)) - 1
	m.wakeLocked()
}

// TruncateFront removes the records before index, as a snapshot's
// truncation does.
func (m *MemLog) TruncateFront(index uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if index <= m.first {
		return
	}
	drop := min(index-m.first, uint64(len(m.records)))
	m.records = append([]record(nil), m.records[drop:]...)
	m.first = index
}

// Fail makes the log fail with err (wrapped in wal.ErrFailed), or close
// when err is wal.ErrClosed.
func (m *MemLog) Fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != wal.ErrClosed {
		err = fmt.Errorf("%w: %w", wal.ErrFailed, err)
	}
	m.err = err
	m.wakeLocked()
}

func (m *MemLog) wakeLocked() {
	if m.advanced != nil {
		close(m.advanced)
		m.advanced = nil
	}
}

// FirstIndex is Log.FirstIndex.
func (m *MemLog) FirstIndex() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.records) == 0 {
		return 0
	}
	return m.first
}

// DurableIndex is Log.DurableIndex.
func (m *MemLog) DurableIndex() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.durable
}

// Err is Log.Err.
func (m *MemLog) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// ReadDurable is Log.ReadDurable, with wal.Log's errors.
func (m *MemLog) ReadDurable(from uint64, maxRecords int, fn func(index uint64, typ byte, payload []byte) error) (uint64, error) {
	from = max(from, 1)
	m.mu.Lock()
	if m.err != nil {
		m.mu.Unlock()
		return from, m.err
	}
	if from < m.first {
		m.mu.Unlock()
		return from, &wal.CompactedError{Index: from, First: m.first}
	}
	var read []record
	if from <= m.durable && maxRecords > 0 {
		last := min(m.durable, from+uint64(maxRecords)-1)
		read = append(read, m.records[from-m.first:last-m.first+1]...)
	}
	m.mu.Unlock()
	for i, r := range read {
		if err := fn(from+uint64(i), r.typ, r.payload); err != nil {
			return from + uint64(i), err
		}
	}
	return from + uint64(len(read)), nil
}

// DurableAfter is Log.DurableAfter.
func (m *MemLog) DurableAfter(index uint64) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.durable > index || m.err != nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	if m.advanced == nil {
		m.advanced = make(chan struct{})
	}
	return m.advanced
}
