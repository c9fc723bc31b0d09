package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	for _, payload := range [][]byte{nil, {}, []byte("x"), bytes.Repeat([]byte{0xAB}, 1000), make([]byte, MaxPayloadSize)} {
		frame, err := AppendFrame([]byte("prefix"), 7, 1<<40+3, payload)
		if err != nil {
			t.Fatal(err)
		}
		frame = frame[len("prefix"):]
		if len(frame) != FrameOverhead+len(payload) {
			t.Fatalf("frame size %d, want %d", len(frame), FrameOverhead+len(payload))
		}
		if frame[0] != 0x57 || frame[1] != 0x53 {
			t.Fatalf("magic bytes % x, want 57 53", frame[:2])
		}
		typ, index, got, err := DecodeFrame(frame)
		if err != nil || typ != 7 || index != 1<<40+3 || !bytes.Equal(got, payload) {
			t.Fatalf("DecodeFrame = %d %d %d bytes %v", typ, index, len(got), err)
		}
		if cap(got) != len(got) {
			t.Fatalf("payload capacity %d reaches into the checksum", cap(got))
		}
	}
}

func TestAppendFrameRejects(t *testing.T) {
	if _, err := AppendFrame(nil, 0, 1, nil); !errors.Is(err, ErrInvalidType) {
		t.Fatalf("type 0: %v", err)
	}
	if _, err := AppendFrame(nil, 1, 1, make([]byte, MaxPayloadSize+1)); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("too large: %v", err)
	}
}

func TestDecodeFrameFaults(t *testing.T) {
	valid, _ := AppendFrame(nil, 3, 42, []byte("payload"))
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), valid...)) }
	cases := map[string][]byte{
		"empty":     nil,
		"short":     valid[:FrameOverhead-1],
		"zeroes":    make([]byte, 64),
		"magic":     mutate(func(b []byte) []byte { b[0] ^= 1; return b }),
		"version":   mutate(func(b []byte) []byte { b[2] = 2; return b }),
		"type 0":    mutate(func(b []byte) []byte { b[3] = 0; return b }),
		"index":     mutate(func(b []byte) []byte { b[4] ^= 1; return b }),
		"payload":   mutate(func(b []byte) []byte { b[13] ^= 0x80; return b }),
		"crc":       mutate(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }),
		"truncated": valid[:len(valid)-1],
		"extended":  append(append([]byte(nil), valid...), 0),
	}
	for name, input := range cases {
		if _, _, _, err := DecodeFrame(input); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
	}
	big := make([]byte, MaxFrameSize+1)
	if _, _, _, err := DecodeFrame(big); !errors.Is(err, ErrFrameTooLarge) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("oversized: %v", err)
	}
}

func TestDecodeFrameDoesNotAllocate(t *testing.T) {
	valid, _ := AppendFrame(nil, 3, 42, []byte("payload"))
	bad := append([]byte(nil), valid...)
	bad[5] ^= 1
	allocs := testing.AllocsPerRun(100, func() {
		DecodeFrame(valid)
		DecodeFrame(bad)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per decode", allocs)
	}
}

// FuzzDecodeFrame checks that DecodeFrame never panics, and that whatever it
// accepts re-encodes to the same bytes (the frame is canonical).
func FuzzDecodeFrame(f *testing.F) {
	seeds := [][]byte{nil, {0x57}, make([]byte, FrameOverhead), make([]byte, 100)}
	for i, payload := range [][]byte{nil, []byte("a"), testPayload(9), bytes.Repeat([]byte{0}, 300)} {
		frame, _ := AppendFrame(nil, byte(i+1), uint64(i)*1000+1, payload)
		seeds = append(seeds, frame)
		flipped := append([]byte(nil), frame...)
		flipped[len(flipped)/2] ^= 0x10
		seeds = append(seeds, flipped, frame[:len(frame)-1])
	}
	for _, seed := range seeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, index, payload, err := DecodeFrame(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := AppendFrame(nil, typ, index, payload)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("accepted frame does not re-encode: %v", err)
		}
	})
}

// FuzzScanSegment checks that ScanSegment never panics on any segment bytes
// and that its valid prefix rescans clean.
func FuzzScanSegment(f *testing.F) {
	var segment []byte
	for i := uint64(1); i <= 5; i++ {
		frame, _ := AppendFrame(nil, testType(i), i, testPayload(i))
		segment = binary.AppendUvarint(segment, uint64(len(frame)))
		segment = append(segment, frame...)
	}
	f.Add(segment, uint64(1))
	f.Add(segment[:len(segment)-3], uint64(1))
	f.Add(append(append([]byte(nil), segment...), make([]byte, 40)...), uint64(1))
	f.Add(segment, uint64(2))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, ^uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, firstIndex uint64) {
		size, last, err := ScanSegment(data, firstIndex)
		if size < 0 || size > len(data) {
			t.Fatalf("valid size %d of %d", size, len(data))
		}
		if err == nil && size != len(data) {
			t.Fatalf("no error but valid size %d of %d", size, len(data))
		}
		if err != nil && !errors.Is(err, ErrTornTail) && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("unexpected error %v", err)
		}
		size2, last2, err2 := ScanSegment(data[:size], firstIndex)
		if err2 != nil || size2 != size || last2 != last {
			t.Fatalf("valid prefix rescans as %d %d %v, want %d %d", size2, last2, err2, size, last)
		}
	})
}
