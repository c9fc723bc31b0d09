package sku

// rejection is a durably recorded refusal of one request_id.
type rejection struct {
	requestID string
	userID    string
	outcome   Outcome
	seq       uint32 // the existing reservation, for ALREADY_PURCHASED
}

// rejectionLog holds the rejections in log order, in chunks that never move
// and rows that never change: a frozen state shares it by length, with no
// copy. The map Machine.rejected (request_id -> position) is derived from it.
type rejectionLog struct {
	chunks [][]rejection
	count  uint32
}

// add appends a rejection and returns its 1-based position.
func (l *rejectionLog) add(r rejection) uint32 {
	i := l.count
	if int(i>>chunkShift) == len(l.chunks) {
		l.chunks = append(l.chunks, make([]rejection, 0, chunkSize))
	}
	c := &l.chunks[i>>chunkShift]
	*c = append(*c, r)
	l.count++
	return l.count
}

// get returns the rejection at 1-based position i, or nil.
func (l *rejectionLog) get(i uint32) *rejection {
	if i == 0 || i > l.count {
		return nil
	}
	i--
	return &l.chunks[i>>chunkShift][i&(chunkSize-1)]
}

// freeze returns a read-only copy that sees the rejections made so far.
func (l *rejectionLog) freeze() rejectionLog {
	return rejectionLog{chunks: append([][]rejection(nil), l.chunks...), count: l.count}
}

// rejection returns the recorded rejection of requestID.
func (m *Machine) rejection(requestID string) (*rejection, bool) {
	i, ok := m.rejected[requestID]
	if !ok {
		return nil, false
	}
	return m.rejections.get(i), true
}

// addRejection records rj, whose request_id must not be decided yet.
func (m *Machine) addRejection(rj rejection) {
	m.rejected[rj.requestID] = m.rejections.add(rj)
}
