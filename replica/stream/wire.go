package stream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/seckill/seckill/replica"
	"github.com/seckill/seckill/wal"
)

// The wire format. Every message, either way, is
//
//	offset  size  field
//	     0     4  length  uint32, little-endian: the bytes after this field
//	     4     1  type    msgHello ... msgAck
//	     5     8  epoch   uint64: the sender's epoch
//	    13     n  body    the type's fields in order: uint64s as 8 bytes
//	                      little-endian, strings and byte strings as
//	                      uvarint(len) + bytes, lists as uvarint(count) + items
//
// length is bounded by maxMessageSize before it is trusted. A body that
// does not decode exactly (a field cut short, bytes left over, a count
// beyond its bound) is a protocol error: the connection is closed, and the
// standby says hello again on a new one. These values are frozen.
const (
	msgHello    byte = 1 // standby: set, name, [SKU: campaign, sku, first, last, snapshot, history]
	msgBegin    byte = 2 // primary: campaign, sku, mode, index, history, feed history, snapshot size
	msgSnapshot byte = 3 // primary: campaign, sku, offset, bytes (a chunk of the base copy's snapshot)
	msgRecords  byte = 4 // primary: campaign, sku, first index, [frame]
	msgAck      byte = 5 // standby: [campaign, sku, durable index]
	msgInstall  byte = 6 // primary: campaign, sku, index, size, keep from (a new snapshot; chunks follow)
	msgCommit   byte = 7 // primary: [campaign, sku, commit index]

	messageHeaderSize = 4 + 1 + 8
	// maxMessageSize bounds a message: a whole wal batch (at most
	// wal.DefaultMaxBatchBytes of frames, or one MaxFrameSize frame) with
	// room for its framing, or a snapshot chunk.
	maxMessageSize = 2*wal.DefaultMaxBatchBytes + 1<<20
	// snapshotChunkSize is the size of a base copy's snapshot chunks.
	snapshotChunkSize = 1 << 20
	// maxHistory bounds the entries of one epoch history on the wire.
	maxHistory = 1 << 16
	// maxIDSize bounds a campaign or SKU id, a set or replica name.
	maxIDSize = 256
)

// Begin modes: what the standby does with its copy of a SKU's log before
// records follow.
const (
	// beginResume: its log ends at index; records index+1... follow.
	beginResume byte = 1
	// beginCut: it cuts its log after index (wal.CutAfter), and removes
	// its snapshots beyond index; records index+1... follow.
	beginCut byte = 2
	// beginBase: a base copy. It drops its log and snapshots, installs the
	// snapshot at index that follows (none for index 0) and starts its log
	// at index+1; records index+1... follow.
	beginBase byte = 3
)

// errProtocol wraps a malformed message.
var errProtocol = errors.New("stream: protocol error")

// encoder builds one message.
type encoder struct{ b []byte }

func newMessage(typ byte, epoch uint64, sizeHint int) *encoder {
	e := &encoder{b: make([]byte, 4, messageHeaderSize+sizeHint)}
	e.b = append(e.b, typ)
	e.u64(epoch)
	return e
}

func (e *encoder) u64(v uint64)   { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *encoder) uvarint(v int)  { e.b = binary.AppendUvarint(e.b, uint64(v)) }
func (e *encoder) bytes(v []byte) { e.uvarint(len(v)); e.b = append(e.b, v...) }
func (e *encoder) str(v string)   { e.uvarint(len(v)); e.b = append(e.b, v...) }
func (e *encoder) u8(v byte)      { e.b = append(e.b, v) }
func (e *encoder) history(h replica.History) {
	e.uvarint(len(h))
	for _, s := range h {
		e.u64(s.Epoch)
		e.u64(s.First)
	}
}

// done writes the length and returns the message's bytes.
func (e *encoder) done() []byte {
	binary.LittleEndian.PutUint32(e.b, uint32(len(e.b)-4))
	return e.b
}

// decoder reads one message's body; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errProtocol, what)
	}
}

func (d *decoder) u64() uint64 {
	if len(d.b) < 8 {
		d.fail("short uint64")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) u8() byte {
	if len(d.b) < 1 {
		d.fail("short byte")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// count reads a uvarint bounded by limit.
func (d *decoder) count(limit int) int {
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > uint64(limit) {
		d.fail("bad length or count")
		return 0
	}
	d.b = d.b[n:]
	return int(v)
}

// bytes returns a byte string aliasing the message.
func (d *decoder) bytes(limit int) []byte {
	n := d.count(limit)
	if d.err != nil || len(d.b) < n {
		d.fail("short byte string")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string { return string(d.bytes(maxIDSize)) }

func (d *decoder) history() replica.History {
	n := d.count(maxHistory)
	var h replica.History
	for i := 0; i < n && d.err == nil; i++ {
		h = append(h, replica.EpochStart{Epoch: d.u64(), First: d.u64()})
	}
	if d.err == nil {
		if err := h.Check(); err != nil {
			d.fail(err.Error())
		}
	}
	return h
}

// end reports the first error, or bytes left over.
func (d *decoder) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.fail(fmt.Sprintf("%d bytes left over", len(d.b)))
	}
	return d.err
}

// message is one message read: its type, epoch and undecoded body.
type message struct {
	typ   byte
	epoch uint64
	body  decoder
}

// readMessage reads one message into buf (reused when large enough).
func readMessage(r io.Reader, buf []byte) (message, []byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return message{}, buf, err
	}
	n := binary.LittleEndian.Uint32(head[:])
	if n < messageHeaderSize-4 || n > maxMessageSize {
		return message{}, buf, fmt.Errorf("%w: message length %d", errProtocol, n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return message{}, buf, err
	}
	return message{typ: buf[0], epoch: binary.LittleEndian.Uint64(buf[1:9]), body: decoder{b: buf[9:]}}, buf, nil
}

// skuKey names a SKU of the replica set.
type skuKey struct{ campaignID, skuID string }

func (k skuKey) String() string { return k.campaignID + "/" + k.skuID }

// helloSKU is what a standby holds of one SKU's log.
type helloSKU struct {
	key         skuKey
	first, last uint64 // first is last+1 when it holds no record
	snapshot    uint64 // the index of its newest snapshot (0: none)
	history     replica.History
}

// hello is a standby's first message on a connection.
type hello struct {
	set, name string
	skus      []helloSKU
}

// maxSKUs bounds the SKUs a hello lists (actors.DefaultMaxSKUs and more).
const maxSKUs = 1 << 20

func encodeHello(epoch uint64, h hello) []byte {
	e := newMessage(msgHello, epoch, 64+len(h.skus)*64)
	e.str(h.set)
	e.str(h.name)
	e.uvarint(len(h.skus))
	for _, s := range h.skus {
		e.str(s.key.campaignID)
		e.str(s.key.skuID)
		e.u64(s.first)
		e.u64(s.last)
		e.u64(s.snapshot)
		e.history(s.history)
	}
	return e.done()
}

func decodeHello(d *decoder) (hello, error) {
	h := hello{set: d.str(), name: d.str()}
	n := d.count(maxSKUs)
	for i := 0; i < n && d.err == nil; i++ {
		s := helloSKU{key: skuKey{d.str(), d.str()}, first: d.u64(), last: d.u64(), snapshot: d.u64()}
		s.history = d.history()
		h.skus = append(h.skus, s)
	}
	return h, d.end()
}

// begin starts the copy of one SKU's log on a connection.
type begin struct {
	key          skuKey
	mode         byte
	index        uint64
	history      replica.History // the primary's
	feedHistory  []byte          // the primary's feed.HistoryFile, if any
	snapshotSize uint64          // beginBase: the snapshot's size in bytes (0: none)
}

func encodeBegin(epoch uint64, b begin) []byte {
	e := newMessage(msgBegin, epoch, 128+len(b.feedHistory))
	e.str(b.key.campaignID)
	e.str(b.key.skuID)
	e.u8(b.mode)
	e.u64(b.index)
	e.history(b.history)
	e.bytes(b.feedHistory)
	e.u64(b.snapshotSize)
	return e.done()
}

func decodeBegin(d *decoder) (begin, error) {
	b := begin{key: skuKey{d.str(), d.str()}, mode: d.u8(), index: d.u64()}
	b.history = d.history()
	b.feedHistory = d.bytes(maxMessageSize)
	b.snapshotSize = d.u64()
	if d.err == nil && (b.mode < beginResume || b.mode > beginBase) {
		d.fail(fmt.Sprintf("begin mode %d", b.mode))
	}
	return b, d.end()
}

// snapshotOffer announces a snapshot the primary wrote: size bytes in
// msgSnapshot chunks follow. keepFrom is the primary's first record: the
// standby truncates its copy no further.
type snapshotOffer struct {
	key                   skuKey
	index, size, keepFrom uint64
}

func encodeInstall(epoch uint64, o snapshotOffer) []byte {
	e := newMessage(msgInstall, epoch, 64)
	e.str(o.key.campaignID)
	e.str(o.key.skuID)
	e.u64(o.index)
	e.u64(o.size)
	e.u64(o.keepFrom)
	return e.done()
}

func decodeInstall(d *decoder) (snapshotOffer, error) {
	o := snapshotOffer{key: skuKey{d.str(), d.str()}, index: d.u64(), size: d.u64(), keepFrom: d.u64()}
	if d.err == nil && o.size == 0 {
		d.fail("an empty snapshot")
	}
	return o, d.end()
}

func encodeSnapshotChunk(epoch uint64, key skuKey, offset uint64, chunk []byte) []byte {
	e := newMessage(msgSnapshot, epoch, 64+len(chunk))
	e.str(key.campaignID)
	e.str(key.skuID)
	e.u64(offset)
	e.bytes(chunk)
	return e.done()
}

func decodeSnapshotChunk(d *decoder) (key skuKey, offset uint64, chunk []byte, err error) {
	key = skuKey{d.str(), d.str()}
	offset = d.u64()
	chunk = d.bytes(maxMessageSize)
	return key, offset, chunk, d.end()
}

// recordsEncoder builds a msgRecords message frame by frame.
type recordsEncoder struct {
	e     *encoder
	count int
	at    int // offset of the count placeholder
}

// maxRecordsCount is the most frames one msgRecords carries.
const maxRecordsCount = 1 << 20

func newRecords(epoch uint64, key skuKey, first uint64, sizeHint int) *recordsEncoder {
	e := newMessage(msgRecords, epoch, 64+sizeHint)
	e.str(key.campaignID)
	e.str(key.skuID)
	e.u64(first)
	r := &recordsEncoder{e: e, at: len(e.b)}
	e.b = append(e.b, 0, 0, 0, 0) // count, uint32, filled by done
	return r
}

func (r *recordsEncoder) add(frame []byte) { r.e.bytes(frame); r.count++ }
func (r *recordsEncoder) size() int        { return len(r.e.b) }

func (r *recordsEncoder) done() []byte {
	binary.LittleEndian.PutUint32(r.e.b[r.at:], uint32(r.count))
	return r.e.done()
}

// decodeRecords calls fn for each frame (aliasing the message).
func decodeRecords(d *decoder, fn func(key skuKey, first uint64, frames [][]byte) error) error {
	key := skuKey{d.str(), d.str()}
	first := d.u64()
	if len(d.b) < 4 {
		d.fail("short count")
		return d.err
	}
	n := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	if n > maxRecordsCount {
		d.fail("too many frames")
	}
	frames := make([][]byte, 0, n)
	for i := uint32(0); i < n && d.err == nil; i++ {
		frames = append(frames, d.bytes(wal.MaxFrameSize))
	}
	if err := d.end(); err != nil {
		return err
	}
	return fn(key, first, frames)
}

// ack is a standby's durable index of one SKU's copy (msgAck), or the
// primary's commit index of one SKU's log (msgCommit).
type ack struct {
	key   skuKey
	index uint64
}

func encodeAcks(epoch uint64, acks []ack) []byte { return encodeIndexes(msgAck, epoch, acks) }

func decodeAcks(d *decoder) ([]ack, error) { return decodeIndexes(d) }

// encodeCommits is a msgCommit: each SKU's commit index on the primary
// (in the ack's layout: one index per SKU).
func encodeCommits(epoch uint64, commits []ack) []byte {
	return encodeIndexes(msgCommit, epoch, commits)
}

func decodeCommits(d *decoder) ([]ack, error) { return decodeIndexes(d) }

// encodeIndexes is the body of msgAck and msgCommit: [campaign, sku, index].
func encodeIndexes(typ byte, epoch uint64, list []ack) []byte {
	e := newMessage(typ, epoch, len(list)*40)
	e.uvarint(len(list))
	for _, a := range list {
		e.str(a.key.campaignID)
		e.str(a.key.skuID)
		e.u64(a.index)
	}
	return e.done()
}

func decodeIndexes(d *decoder) ([]ack, error) {
	n := d.count(maxSKUs)
	list := make([]ack, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		list = append(list, ack{key: skuKey{d.str(), d.str()}, index: d.u64()})
	}
	return list, d.end()
}
