package httpapi_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// oversizedBody is the size of the chunked bodies sent beyond the limit:
// far more than a socket's buffers hold, so the client is still sending
// when the server answers.
const oversizedBody = 2 << 20

// A chunked body beyond the limit is answered 413 BODY_TOO_LARGE every
// time, and the client reads that answer: the server goes on reading (and
// dropping) what the client still sends before it closes, so the close is
// not a reset that would destroy the answer. Sent by net/http's client
// (which reads while it sends) and by a raw client that sends the whole
// body first and reads only then (curl on a slow link, most scripts).
func TestChunkedBodyBeyondLimitAlwaysGets413(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	path := "/v1/campaigns/x/skus/s/reservations"
	const rounds = 25
	for i := range rounds {
		// net/http sends a body of unknown length chunked.
		req, err := http.NewRequest(http.MethodPost, ts.base+path, io.MultiReader(
			strings.NewReader(`{"request_id":"r","user_id":"`), &repeatReader{b: 'u', n: oversizedBody}, strings.NewReader(`"}`)))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatalf("round %d, net/http: %v", i, err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("round %d, net/http: reading the answer: %v", i, err)
		}
		if len(resp.TransferEncoding) != 0 || resp.StatusCode != http.StatusRequestEntityTooLarge || !bytes.Contains(raw, []byte(`"error":"BODY_TOO_LARGE"`)) {
			t.Fatalf("round %d, net/http: %d %s", i, resp.StatusCode, raw)
		}

		status, err := sendChunkedThenRead(ts.base, path, oversizedBody)
		if err != nil {
			t.Fatalf("round %d, raw client: %v", i, err)
		}
		if !strings.HasPrefix(status, "HTTP/1.1 413 ") {
			t.Fatalf("round %d, raw client: %q", i, status)
		}
	}
	// The server still serves on new connections.
	want(t, ts.get("/healthz"), http.StatusOK, "")
}

// sendChunkedThenRead posts n bytes in 16 KiB chunks on a fresh
// connection, then reads the answer's status line and the rest to EOF.
func sendChunkedThenRead(base, path string, n int) (status string, err error) {
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	w := bufio.NewWriterSize(c, 64<<10)
	fmt.Fprintf(w, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n", path)
	chunk := bytes.Repeat([]byte{'u'}, 16<<10)
	for sent := 0; sent < n; sent += len(chunk) {
		fmt.Fprintf(w, "%x\r\n%s\r\n", len(chunk), chunk)
	}
	w.WriteString("0\r\n\r\n")
	if err := w.Flush(); err != nil {
		return "", fmt.Errorf("sending the body: %w", err)
	}
	r := bufio.NewReader(c)
	status, err = r.ReadString('\n')
	if err != nil {
		return status, fmt.Errorf("reading the status line: %w", err)
	}
	if _, err := io.Copy(io.Discard, r); err != nil && !errors.Is(err, io.EOF) {
		return status, fmt.Errorf("reading the answer: %w", err)
	}
	return status, nil
}

// repeatReader reads n copies of b.
type repeatReader struct {
	b byte
	n int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = r.b
	}
	r.n -= k
	return k, nil
}
