// Package pacedread is a test's slow but steady client: a reader that
// pauses after each chunk it reads, so an answer takes long to read while
// no single write to it waits long for room.
package pacedread

import (
	"io"
	"time"
)

// Reader reads from R at most Chunk bytes at a time, pausing Pause after
// each Chunk bytes read.
type Reader struct {
	R     io.Reader
	Chunk int
	Pause time.Duration
	read  int
}

func (p *Reader) Read(b []byte) (int, error) {
	n, err := p.R.Read(b[:min(len(b), p.Chunk-p.read)])
	if p.read += n; p.read == p.Chunk {
		p.read = 0
		time.Sleep(p.Pause)
	}
	return n, err
}

// Steady reads r as a client that reads steadily at some 0.8 MB/s: 32 KiB,
// then 40 ms of pause.
func Steady(r io.Reader) io.Reader {
	return &Reader{R: r, Chunk: 32 << 10, Pause: 40 * time.Millisecond}
}
