package wal

import (
	"errors"
	"fmt"
)

// Replay calls fn, from the calling goroutine and in index order, for every
// durable record with an index >= from: those from max(from, FirstIndex())
// through the DurableIndex() at the call. payload aliases the store's memory
// and is valid only during the call; fn must not modify it.
//
// Every frame is validated again (magic, version, type, CRC-32C, and that
// its index is the one it is stored at); a failure returns an error wrapping
// ErrCorrupt that names the index. An error from fn stops the replay and is
// returned as is. Replay is meant for recovery, before the first Append; it
// is serialised with TruncateFront.
func (l *Log) Replay(from uint64, fn func(index uint64, typ byte, payload []byte) error) error {
	l.storeMu.Lock()
	defer l.storeMu.Unlock()
	if err := l.Err(); err != nil {
		return err
	}
	from = max(from, l.firstIndex.Load(), 1)
	last := l.durableIndex.Load()
	for index := from; index <= last && index != 0; index++ {
		frame, err := l.store.Read(index)
		if err != nil {
			if errors.Is(err, ErrClosed) || errors.Is(err, ErrCorrupt) {
				return fmt.Errorf("wal: read record %d: %w", index, err)
			}
			return fmt.Errorf("%w: read record %d: %w", ErrCorrupt, index, err)
		}
		typ, frameIndex, payload, err := DecodeFrame(frame)
		if err != nil {
			return fmt.Errorf("wal: record %d: %w", index, err)
		}
		if frameIndex != index {
			return fmt.Errorf("%w: record %d holds the frame of index %d", ErrCorrupt, index, frameIndex)
		}
		if err := fn(index, typ, payload); err != nil {
			return err
		}
	}
	return nil
}
