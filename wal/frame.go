package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Frame layout. These values are part of the on-disk format: never change or
// reuse them; a new layout gets a new FrameVersion. See the package
// documentation for the diagram.
const (
	// FrameMagic is the first field of every frame, stored little-endian: the
	// bytes on disk are 0x57 0x53.
	FrameMagic uint16 = 0x5357
	// FrameVersion is the only frame layout this package reads and writes.
	FrameVersion uint8 = 1

	frameMagicOffset   = 0
	frameVersionOffset = 2
	frameTypeOffset    = 3
	frameIndexOffset   = 4

	// FrameHeaderSize is the size in bytes of magic, version, type and index.
	FrameHeaderSize = 12
	// FrameChecksumSize is the size in bytes of the trailing CRC-32C.
	FrameChecksumSize = 4
	// FrameOverhead is the size in bytes of a frame with an empty payload.
	FrameOverhead = FrameHeaderSize + FrameChecksumSize

	// MaxFrameSize bounds a frame, in bytes, header and checksum included. A
	// length read from disk above it is corruption, never an allocation.
	MaxFrameSize = 1 << 20
	// MaxPayloadSize is the largest payload, in bytes, that Append accepts.
	MaxPayloadSize = MaxFrameSize - FrameOverhead
)

// castagnoli is the CRC-32C table; crc32 uses the CPU instruction when present.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// frameFault names why bytes are not a valid frame. Computing it allocates
// nothing, so the recovery scan can try every byte offset of a segment.
type frameFault uint8

const (
	frameOK frameFault = iota
	frameShort
	frameTooLarge
	frameBadMagic
	frameBadVersion
	frameZeroType
	frameBadChecksum
)

// Errors for each fault, built once so that DecodeFrame does not allocate.
var frameFaultErrors = [...]error{
	frameOK:          nil,
	frameShort:       fmt.Errorf("%w: frame shorter than %d bytes", ErrCorrupt, FrameOverhead),
	frameTooLarge:    fmt.Errorf("%w: %w: frame longer than %d bytes", ErrCorrupt, ErrFrameTooLarge, MaxFrameSize),
	frameBadMagic:    fmt.Errorf("%w: bad frame magic", ErrCorrupt),
	frameBadVersion:  fmt.Errorf("%w: unknown frame version", ErrCorrupt),
	frameZeroType:    fmt.Errorf("%w: frame record type 0", ErrCorrupt),
	frameBadChecksum: fmt.Errorf("%w: frame CRC-32C mismatch", ErrCorrupt),
}

func (f frameFault) String() string {
	switch f {
	case frameOK:
		return "ok"
	case frameShort:
		return "short frame"
	case frameTooLarge:
		return "frame too large"
	case frameBadMagic:
		return "bad magic"
	case frameBadVersion:
		return "bad version"
	case frameZeroType:
		return "record type 0"
	case frameBadChecksum:
		return "checksum mismatch"
	}
	return fmt.Sprintf("frameFault(%d)", uint8(f))
}

func (f frameFault) err() error { return frameFaultErrors[f] }

// checkFrame validates b as one whole frame: bounds first, then the fixed
// fields, then the checksum.
func checkFrame(b []byte) frameFault {
	if len(b) < FrameOverhead {
		return frameShort
	}
	if len(b) > MaxFrameSize {
		return frameTooLarge
	}
	if binary.LittleEndian.Uint16(b[frameMagicOffset:]) != FrameMagic {
		return frameBadMagic
	}
	if b[frameVersionOffset] != FrameVersion {
		return frameBadVersion
	}
	if b[frameTypeOffset] == 0 {
		return frameZeroType
	}
	body := len(b) - FrameChecksumSize
	if crc32.Checksum(b[:body], castagnoli) != binary.LittleEndian.Uint32(b[body:]) {
		return frameBadChecksum
	}
	return frameOK
}

// DecodeFrame validates b as exactly one frame and returns its fields. The
// payload aliases b (its capacity is cut so that appending to it cannot
// overwrite the checksum). The error wraps ErrCorrupt, and also
// ErrFrameTooLarge when len(b) > MaxFrameSize. Safe on any input; it never
// allocates.
func DecodeFrame(b []byte) (typ byte, index uint64, payload []byte, err error) {
	if fault := checkFrame(b); fault != frameOK {
		return 0, 0, nil, fault.err()
	}
	end := len(b) - FrameChecksumSize
	return b[frameTypeOffset], binary.LittleEndian.Uint64(b[frameIndexOffset:]), b[FrameHeaderSize:end:end], nil
}

// AppendFrame appends the frame of one record to dst and returns the extended
// slice. typ must be non-zero (ErrInvalidType) and len(payload) at most
// MaxPayloadSize (ErrFrameTooLarge); on error dst is returned unchanged.
func AppendFrame(dst []byte, typ byte, index uint64, payload []byte) ([]byte, error) {
	if typ == 0 {
		return dst, ErrInvalidType
	}
	if len(payload) > MaxPayloadSize {
		return dst, ErrFrameTooLarge
	}
	return appendFrame(dst, typ, index, payload), nil
}

// appendFrame is AppendFrame without the checks, for callers that made them.
func appendFrame(dst []byte, typ byte, index uint64, payload []byte) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint16(dst, FrameMagic)
	dst = append(dst, FrameVersion, typ)
	dst = binary.LittleEndian.AppendUint64(dst, index)
	dst = append(dst, payload...)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}
