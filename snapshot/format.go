package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/seckill/seckill/actors/sku"
)

// Format constants. They are part of the on-disk format: never change or
// reuse them; a new layout gets a new Version. See the package doc.
const (
	// Magic is the first 8 bytes of every snapshot file.
	Magic = "SECKSNAP"
	// Version is the only header layout this package writes and reads.
	Version uint16 = 1
	// FixedHeaderSize is the size in bytes of the header before the ids.
	FixedHeaderSize = 52
	// ChecksumSize is the size in bytes of the trailing CRC-32C.
	ChecksumSize = 4
	// MinFileSize is the smallest possible snapshot file: a header with
	// one-byte ids, a one-byte state and the checksum.
	MinFileSize = FixedHeaderSize + 2 + 2 + 1 + ChecksumSize
)

// Header offsets.
const (
	offVersion      = 8
	offHeaderSize   = 10
	offFlags        = 12
	offIndex        = 16
	offCreatedAt    = 24
	offLastAt       = 32
	offReservations = 40
	offRejections   = 44
	offRefunds      = 48
)

// Errors. Returned errors name the file where it is known.
var (
	// ErrCorrupt: the bytes are not a whole snapshot: bad magic, a size or
	// id length out of range, a checksum mismatch (a torn or damaged file),
	// a state that does not decode, or a header that disagrees with it.
	ErrCorrupt = errors.New("snapshot: corrupt")
	// ErrVersion: a header version or flag this build does not know (a
	// snapshot written by a newer build).
	ErrVersion = errors.New("snapshot: unknown format version")
)

// castagnoli is the CRC-32C table.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is what a snapshot file says about itself.
type Header struct {
	Version      uint16
	CampaignID   string
	SKUID        string
	Index        uint64 // log index of the last record the state includes
	CreatedAt    int64  // Unix ms, when the file was written
	LastAt       int64  // Unix ms, decision time of the last record applied
	Reservations uint32
	Rejections   uint32
	Refunds      uint32
	// Size is the size of the header in bytes (H in the package doc).
	Size int
}

// newHeader describes f at index.
func newHeader(f *sku.Frozen, index uint64, createdAt int64) Header {
	d, c := f.Definition(), f.Counts()
	return Header{
		Version: Version, CampaignID: d.CampaignID, SKUID: d.SKUID,
		Index: index, CreatedAt: createdAt, LastAt: f.LastAt(),
		Reservations: c.Reservations, Rejections: c.Rejected, Refunds: c.RefundsRequired,
		Size: FixedHeaderSize + 2 + len(d.CampaignID) + len(d.SKUID),
	}
}

// appendHeader appends the encoded header h to b.
func appendHeader(b []byte, h *Header) []byte {
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint16(b, h.Version)
	b = binary.LittleEndian.AppendUint16(b, uint16(h.Size))
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint64(b, h.Index)
	b = binary.LittleEndian.AppendUint64(b, uint64(h.CreatedAt))
	b = binary.LittleEndian.AppendUint64(b, uint64(h.LastAt))
	b = binary.LittleEndian.AppendUint32(b, h.Reservations)
	b = binary.LittleEndian.AppendUint32(b, h.Rejections)
	b = binary.LittleEndian.AppendUint32(b, h.Refunds)
	b = append(b, byte(len(h.CampaignID)))
	b = append(b, h.CampaignID...)
	b = append(b, byte(len(h.SKUID)))
	return append(b, h.SKUID...)
}

// DecodeHeader parses the header at the start of b, which may be the whole
// file or just its first bytes. It checks the fields' ranges but not the
// checksum (Decode does): use it to pick a file, not to trust one.
func DecodeHeader(b []byte) (Header, error) {
	if len(b) < FixedHeaderSize+2 || string(b[:len(Magic)]) != Magic {
		return Header{}, fmt.Errorf("%w: no snapshot header (magic %q)", ErrCorrupt, Magic)
	}
	le := binary.LittleEndian
	h := Header{
		Version:      le.Uint16(b[offVersion:]),
		Size:         int(le.Uint16(b[offHeaderSize:])),
		Index:        le.Uint64(b[offIndex:]),
		CreatedAt:    int64(le.Uint64(b[offCreatedAt:])),
		LastAt:       int64(le.Uint64(b[offLastAt:])),
		Reservations: le.Uint32(b[offReservations:]),
		Rejections:   le.Uint32(b[offRejections:]),
		Refunds:      le.Uint32(b[offRefunds:]),
	}
	if h.Version != Version || le.Uint32(b[offFlags:]) != 0 {
		return Header{}, fmt.Errorf("%w: version %d, flags %#x (this build reads version %d, no flags)",
			ErrVersion, h.Version, le.Uint32(b[offFlags:]), Version)
	}
	c := int(b[FixedHeaderSize])
	if c == 0 || c > sku.MaxIDLength || len(b) < FixedHeaderSize+2+c {
		return Header{}, fmt.Errorf("%w: campaign id length %d", ErrCorrupt, c)
	}
	h.CampaignID = string(b[FixedHeaderSize+1 : FixedHeaderSize+1+c])
	s := int(b[FixedHeaderSize+1+c])
	if s == 0 || s > sku.MaxIDLength || len(b) < FixedHeaderSize+2+c+s {
		return Header{}, fmt.Errorf("%w: SKU id length %d", ErrCorrupt, s)
	}
	h.SKUID = string(b[FixedHeaderSize+2+c : FixedHeaderSize+2+c+s])
	if h.Size != FixedHeaderSize+2+c+s {
		return Header{}, fmt.Errorf("%w: header size %d, ids say %d", ErrCorrupt, h.Size, FixedHeaderSize+2+c+s)
	}
	if !sku.ValidID(h.CampaignID) || !sku.ValidID(h.SKUID) {
		return Header{}, fmt.Errorf("%w: invalid campaign or SKU id", ErrCorrupt)
	}
	return h, nil
}

// Encode writes a whole snapshot of f at log index to w: header, state,
// checksum. createdAt is Unix ms. It returns the header and the bytes
// written. f must be of a defined SKU.
func Encode(w io.Writer, f *sku.Frozen, index uint64, createdAt int64) (Header, int64, error) {
	d := f.Definition()
	if err := d.Validate(); err != nil {
		return Header{}, 0, fmt.Errorf("snapshot: %w", err)
	}
	h := newHeader(f, index, createdAt)
	cw := &checksumWriter{w: w}
	if _, err := cw.Write(appendHeader(make([]byte, 0, h.Size), &h)); err != nil {
		return h, cw.n, err
	}
	if _, err := f.Encode(cw); err != nil {
		return h, cw.n, err
	}
	n := cw.n
	_, err := w.Write(binary.LittleEndian.AppendUint32(nil, cw.sum))
	return h, n + ChecksumSize, err
}

// Marshal returns the bytes of a whole snapshot of f at log index, as Encode
// writes them, for a store that keeps snapshots in memory (a simulator);
// Decode reads them back.
func Marshal(f *sku.Frozen, index uint64, createdAt int64) ([]byte, Header, error) {
	var b bytes.Buffer
	h, _, err := Encode(&b, f, index, createdAt)
	if err != nil {
		return nil, h, err
	}
	return b.Bytes(), h, nil
}

// checksumWriter passes bytes on and keeps their CRC-32C and count.
type checksumWriter struct {
	w   io.Writer
	sum uint32
	n   int64
}

func (c *checksumWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.sum = crc32.Update(c.sum, castagnoli, p[:n])
	c.n += int64(n)
	return n, err
}

// Check verifies the size, header and checksum of a whole file's bytes
// without decoding the state.
func Check(b []byte) (Header, error) {
	h, err := DecodeHeader(b)
	if err != nil {
		return h, err
	}
	if len(b) < h.Size+1+ChecksumSize {
		return h, fmt.Errorf("%w: %d bytes, too short for a state after a %d-byte header", ErrCorrupt, len(b), h.Size)
	}
	end := len(b) - ChecksumSize
	if got, want := crc32.Checksum(b[:end], castagnoli), binary.LittleEndian.Uint32(b[end:]); got != want {
		return h, fmt.Errorf("%w: CRC-32C %08x, file says %08x (torn or damaged)", ErrCorrupt, got, want)
	}
	return h, nil
}

// Decode verifies a whole file's bytes and decodes the state. The state's
// definition and counts must agree with the header.
func Decode(b []byte) (Header, *sku.Machine, error) {
	h, err := Check(b)
	if err != nil {
		return h, nil, err
	}
	m, err := sku.DecodeState(b[h.Size : len(b)-ChecksumSize])
	if err != nil {
		return h, nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	d, c := m.Definition(), m.Counts()
	if !m.Defined() || d.CampaignID != h.CampaignID || d.SKUID != h.SKUID || m.LastAt() != h.LastAt ||
		c.Reservations != h.Reservations || c.Rejected != h.Rejections || c.RefundsRequired != h.Refunds {
		return h, nil, fmt.Errorf("%w: header (%s/%s, %d reservations) disagrees with the state (%s/%s, %d reservations)",
			ErrCorrupt, h.CampaignID, h.SKUID, h.Reservations, d.CampaignID, d.SKUID, c.Reservations)
	}
	return h, m, nil
}
