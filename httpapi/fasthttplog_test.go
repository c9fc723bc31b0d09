package httpapi_test

import (
	"bufio"
	"bytes"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/httpapi"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A malformed request is answered 400, and fasthttp's log line about it
// goes to the service's logger at debug level, short: it quotes at most a
// few dozen bytes of what the client sent.
func TestFasthttpLogLinesAreBounded(t *testing.T) {
	t.Parallel()
	var logged syncBuffer
	logger := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) { c.Logger = logger }})
	const chunk = "card-4111-1111-1111-1111;"
	secret := strings.Repeat(chunk, 100)
	for _, raw := range []string{
		"GARBAGE" + secret + "\r\n\r\n",                                    // no method
		"GET /healthz HTTP/9." + secret + "\r\nHost: x\r\n\r\n",            // bad version
		"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad " + secret + "\r\n\r\n", // bad header
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(ts.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write([]byte(raw)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%.40q: %v", raw, err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%.40q: status %d", raw, resp.StatusCode)
		}
	}
	ts.stop()
	lines := 0
	for _, line := range strings.Split(logged.String(), "\n") {
		if !strings.Contains(line, "component=fasthttp") {
			continue
		}
		lines++
		if !strings.Contains(line, "level=DEBUG") || len(line) > 400 || strings.Contains(line, strings.Repeat(chunk, 4)) {
			t.Errorf("fasthttp log line of %d bytes: %s", len(line), line)
		}
	}
	if lines == 0 {
		t.Fatalf("no fasthttp log line:\n%s", logged.String())
	}
}
