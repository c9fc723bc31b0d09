package wal

// Batch is a run of consecutive records, framed, that the flusher hands to
// Store.WriteBatch in one call. Frames lie back to back in one buffer; both
// buffers are reused from batch to batch, so filling a batch allocates only
// while it grows past its largest size so far. A Store must not keep a Batch
// or its frames after WriteBatch returns.
type Batch struct {
	firstIndex uint64 // index of frame 0; meaningless while empty
	data       []byte // frames back to back
	ends       []int  // ends[i] is the offset in data one past frame i
}

// Len returns the number of records in the batch.
func (b *Batch) Len() int { return len(b.ends) }

// Size returns the total size of the frames in bytes.
func (b *Batch) Size() int { return len(b.data) }

// FirstIndex returns the index of the first record, 0 if the batch is empty.
func (b *Batch) FirstIndex() uint64 {
	if len(b.ends) == 0 {
		return 0
	}
	return b.firstIndex
}

// LastIndex returns the index of the last record, 0 if the batch is empty.
func (b *Batch) LastIndex() uint64 {
	if len(b.ends) == 0 {
		return 0
	}
	return b.firstIndex + uint64(len(b.ends)) - 1
}

// Frame returns the frame of record i (0 <= i < Len()), whose index is
// FirstIndex()+i. The slice aliases the batch: read it, do not keep it.
func (b *Batch) Frame(i int) []byte {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.data[start:b.ends[i]:b.ends[i]]
}

// add frames one record at the end. index must be LastIndex()+1 unless the
// batch is empty; the caller checked typ and the payload size.
func (b *Batch) add(typ byte, index uint64, payload []byte) {
	if len(b.ends) == 0 {
		b.firstIndex = index
	}
	b.data = appendFrame(b.data, typ, index, payload)
	b.ends = append(b.ends, len(b.data))
}

// reset empties the batch and keeps its buffers.
func (b *Batch) reset() {
	b.data = b.data[:0]
	b.ends = b.ends[:0]
	b.firstIndex = 0
}
