package httpapi

import (
	"bufio"
	"net"
	"time"
)

// streamChunkSize is the most a streamed answer (an export, an SSE
// stream) buffers before it writes: each write of up to this many bytes
// gets the write timeout to reach the connection.
const streamChunkSize = 32 << 10

// StreamWriter returns the writer a streamed answer writes through, in
// place of the one fasthttp hands its body stream writer (seckilld's
// export and SSE streams, and seckill-router's copy of them). That one holds
// 4 KiB and writes when full under whatever write deadline the connection
// has: the one fasthttp set before the answer, or the one set at the
// stream's last flush, both long past in an export that takes longer than
// the write timeout or a stream that waited longer for its next events. A
// client still reading was then cut mid-answer. Through this writer every
// write to the connection, when full or flushed, gets a fresh deadline:
// only a client that stops reading is let go by the write timeout.
func StreamWriter(conn net.Conn, w *bufio.Writer, writeTimeout time.Duration) *bufio.Writer {
	return bufio.NewWriterSize(deadlineWriter{conn: conn, w: w, timeout: writeTimeout}, streamChunkSize)
}

// deadlineWriter sets conn's write deadline, then writes through w and
// flushes it, so nothing waits in w under an older deadline.
type deadlineWriter struct {
	conn    net.Conn
	w       *bufio.Writer
	timeout time.Duration
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	if err := d.conn.SetWriteDeadline(time.Now().Add(d.timeout)); err != nil {
		return 0, err
	}
	n, err := d.w.Write(p)
	if err != nil {
		return n, err
	}
	return n, d.w.Flush()
}
