package httpapi

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"
)

// fasthttp's messages other than a connection's error stay warnings, and
// every message is cut to maxLogMessage bytes of valid UTF-8.
func TestFasthttpLoggerLevelsAndBound(t *testing.T) {
	var buf bytes.Buffer
	l := fasthttpLogger{slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	l.Printf("The incoming connection cannot be served, because %d concurrent connections are served", 7)
	l.Printf("error when serving connection %q<->%q: %v", "a", "b", strings.Repeat("é", 500))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"level":"WARN"`) || !strings.Contains(lines[1], `"level":"DEBUG"`) {
		t.Fatalf("levels:\n%s", buf.String())
	}
	if len(lines[1]) > maxLogMessage+200 || !utf8.ValidString(lines[1]) || strings.Contains(lines[1], `\ufffd`) {
		t.Fatalf("bound: %s", lines[1])
	}
}
