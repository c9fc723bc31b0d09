package wal

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// DecideTail is the rule Open's repair applies: what it keeps, it keeps
// for every kind of tail, and damage followed by a valid frame is refused.
func TestDecideTail(t *testing.T) {
	_, _, data := damagedLog(t, Options{})
	offsets := entryOffsets(t, data)
	lastStart := offsets[len(offsets)-1]
	for _, c := range []struct {
		name       string
		data       []byte
		keep       int
		last       uint64
		reasonPart string
	}{
		{"clean", data, len(data), damageRecords, ""},
		{"empty", nil, 0, 0, ""},
		{"cut entry", data[:lastStart+7], lastStart, damageRecords - 1, "a cut entry"},
		{"zeroes", append(bytes.Clone(data), make([]byte, 300)...), len(data), damageRecords, "all zero"},
		{"garbage", append(bytes.Clone(data), 0x05, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee), len(data), damageRecords, "garbage"},
	} {
		d, err := DecideTail(c.data, 1)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.name == "empty" {
			c.last = 0
		}
		if d.Keep != c.keep || d.Dropped != len(c.data)-c.keep || d.LastIndex != c.last || !strings.Contains(d.Reason, c.reasonPart) ||
			(c.reasonPart == "") != (d.Reason == "") {
			t.Fatalf("%s: %+v, want keep %d last %d reason with %q", c.name, d, c.keep, c.last, c.reasonPart)
		}
	}
	bad := bytes.Clone(data)
	bad[offsets[2]+FrameHeaderSize] ^= 0x55
	d, err := DecideTail(bad, 1)
	if !errors.Is(err, ErrCorrupt) || d.Dropped != 0 || d.Keep != offsets[2] {
		t.Fatalf("mid-log damage: %+v, %v", d, err)
	}
}
