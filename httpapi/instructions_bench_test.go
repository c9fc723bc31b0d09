package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"

	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/seckill/seckill/bench/compare"
	"github.com/seckill/seckill/wal"
)

// BenchmarkInstructions is make bench-instructions' table
// (bench/instructions runs each sub-benchmark under valgrind
// --tool=callgrind between the loop markers and divides by items/op): one
// request at a time through a real server (seckilld's httpapi server, or
// the null server of bench/compare) on an in-memory listener, from a
// minimal client in the same process, so every row counts fasthttp's
// parsing and writing, the handler, the engine's goroutines and the
// client alike. The log fsyncs (wal.FsyncAlways) where a row writes one:
// null-fsync and hot-reserve; the kernel's part of an fsync is not an
// instruction callgrind counts.
func BenchmarkInstructions(b *testing.B) {
	reserve := func(n int) []byte {
		return fmt.Appendf(nil, `{"request_id":"r%d","user_id":"u%d"}`, n, n)
	}
	const reservePath = "/v1/campaigns/bench/skus/s/reservations"
	b.Run("null-http", func(b *testing.B) {
		c := serveNullInMemory(b, nil)
		c.loop(b, 1, func(n int) { c.post(b, reservePath, reserve(n), 202) })
	})
	b.Run("null-fsync", func(b *testing.B) {
		log, err := compare.OpenNullLog(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { log.Close() })
		c := serveNullInMemory(b, log)
		c.loop(b, 1, func(n int) { c.post(b, reservePath, reserve(n), 202) })
	})
	b.Run("hot-reserve", func(b *testing.B) {
		c := serveInMemory(b, pathServerFsync(b, 1_000_000_000, false, wal.FsyncAlways).Serve)
		c.loop(b, 1, func(n int) { c.post(b, reservePath, reserve(n), 202) })
	})
	b.Run("sold-out", func(b *testing.B) {
		c := serveInMemory(b, pathServerFsync(b, 1, false, wal.FsyncNeverBenchmarkOnly).Serve)
		c.post(b, reservePath, reserve(-1), 202)
		c.loop(b, 1, func(n int) { c.post(b, reservePath, reserve(n), 409) })
	})
	b.Run("batch-item", func(b *testing.B) {
		const items = 64
		c := serveInMemory(b, pathServerFsync(b, 1_000_000_000, false, wal.FsyncAlways).Serve)
		body := make([]byte, 0, 64*items)
		c.loop(b, items, func(n int) {
			body = append(body[:0], `{"items":[`...)
			for i := range items {
				if i > 0 {
					body = append(body, ',')
				}
				body = fmt.Appendf(body, `{"request_id":"r%d-%d","user_id":"u%d-%d"}`, n, i, n, i)
			}
			body = append(body, "]}"...)
			c.post(b, reservePath+":batch", body, 200)
		})
	})
	b.Run("feed-event", func(b *testing.B) {
		// b.N pages of 100 events each, made before the loop; each
		// iteration reads the next page from the log (a consumer catching
		// up, not the cache of the tail).
		const page = 100
		c := serveInMemory(b, pathServerFsync(b, 1_000_000_000, false, wal.FsyncNeverBenchmarkOnly).Serve)
		for n := range b.N * page {
			c.post(b, reservePath, reserve(n), 202)
		}
		cursor := ""
		c.loop(b, page, func(int) {
			body := c.get(b, feedPath("bench", "s", "?limit="+strconv.Itoa(page)+"&after="+cursor), 200)
			if got := bytes.Count(body, []byte(`"specversion"`)); got != page {
				b.Fatalf("a page of %d events, want %d", got, page)
			}
			tail := body[bytes.LastIndex(body, []byte(`"next_cursor":"`))+len(`"next_cursor":"`):]
			cursor = string(tail[:bytes.IndexByte(tail, '"')])
		})
	})
}

// inMemoryClient is one connection to a server on an in-memory listener,
// speaking just enough HTTP/1.1 to send a request and read its answer.
type inMemoryClient struct {
	conn net.Conn
	r    *bufio.Reader
	req  []byte
	body []byte
}

// serveInMemory runs serve on an in-memory listener until the benchmark
// ends and connects to it.
func serveInMemory(b *testing.B, serve func(net.Listener) error) *inMemoryClient {
	b.Helper()
	ln := fasthttputil.NewInmemoryListener()
	done := make(chan struct{})
	go func() { serve(ln); close(done) }()
	b.Cleanup(func() { ln.Close(); <-done })
	conn, err := ln.Dial()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return &inMemoryClient{conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}
}

// serveNullInMemory is serveInMemory for bench/compare's null server.
func serveNullInMemory(b *testing.B, durable *compare.NullLog) *inMemoryClient {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	return serveInMemory(b, func(ln net.Listener) error { return compare.ServeNull(ctx, ln, durable) })
}

// loop runs the timed loop between the callgrind markers and reports the
// items each iteration serves (items/op: a batch's items, a page's events).
func (c *inMemoryClient) loop(b *testing.B, items int, request func(n int)) {
	timedLoop(b, request)
	b.ReportMetric(float64(items), "items/op")
}

func (c *inMemoryClient) post(b *testing.B, path string, body []byte, status int) []byte {
	c.req = fmt.Appendf(c.req[:0], "POST %s HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, testToken, len(body))
	c.req = append(c.req, body...)
	return c.roundTrip(b, status)
}

func (c *inMemoryClient) get(b *testing.B, path string, status int) []byte {
	c.req = fmt.Appendf(c.req[:0], "GET %s HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\n\r\n", path, testToken)
	return c.roundTrip(b, status)
}

// roundTrip writes c.req and reads the answer (a status line, headers with
// a Content-Length, the body), failing unless its status is status.
func (c *inMemoryClient) roundTrip(b *testing.B, status int) []byte {
	if _, err := c.conn.Write(c.req); err != nil {
		b.Fatal(err)
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		b.Fatal(err)
	}
	if len(line) < 12 || string(line[9:12]) != strconv.Itoa(status) {
		b.Fatalf("status line %q, want %d", line, status)
	}
	length := -1
	for {
		h, err := c.r.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		if len(h) <= 2 {
			break
		}
		if name, value, ok := bytes.Cut(h, []byte(":")); ok && bytes.EqualFold(name, []byte("Content-Length")) {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(value))); err != nil {
				b.Fatal(err)
			}
		}
	}
	if length < 0 {
		b.Fatal("an answer without Content-Length")
	}
	c.body = append(c.body[:0], make([]byte, length)...)
	if _, err := io.ReadFull(c.r, c.body); err != nil {
		b.Fatal(err)
	}
	return c.body
}
