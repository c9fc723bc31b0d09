package sku

// MaxRecordedRejections is the most SOLD_OUT rejections one SKU records.
// A recorded rejection keeps its request_id's answer: a repeat is answered
// SOLD_OUT from the record even after a token came back. Beyond the cap a
// reserve that finds no token is answered SOLD_OUT without a record, as the
// ingress's fast path answers it, so a repeat may get another answer once a
// token comes back. The cap bounds what a sold-out SKU keeps growing by:
// its rejection table, its log and every snapshot, each by one row of at
// most ~200 bytes (two ids of up to MaxIDLength), so at most ~3 MiB per SKU.
// Requests reach the Machine after sell-out only when they were admitted
// before it (admission permits shrink to the retry margin as available
// nears 0), when the request-id filter may know their id (about 1% of new
// ids at its design fill), or as retries of unknown results: 16,384 covers
// the burst at the moment of sell-out many times over. It is decided on
// the state alone, so replay makes the same choice.
const MaxRecordedRejections = 1 << 14

// rejection is a durably recorded refusal of one request_id.
type rejection struct {
	requestID string
	userID    string
	outcome   Outcome
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

// soldOut answers SOLD_OUT to a reserve that found no token, recording it
// while fewer than MaxRecordedRejections are recorded. A celled SKU never
// records it: a grant or another cell's return may still bring tokens, so
// its SOLD_OUT is the ingress kind, to be retried (the shell adds
// Retry-After while a top-up is pending).
func (m *Machine) soldOut(at int64, requestID, userID string, out []Record) (Result, []Record) {
	if m.rejections.count < MaxRecordedRejections && !m.pool.celled {
		out = m.emit(&Record{Type: RecordRejected, At: at, Outcome: OutcomeSoldOut,
			RequestID: requestID, UserID: userID}, out)
	}
	return Result{Outcome: OutcomeSoldOut}, out
}
