package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// maxLogMessage bounds one fasthttp log message (bytes): some quote what a
// client sent, even with Server.SecureErrorLogMessage.
const maxLogMessage = 200

// connectionErrorPrefix starts fasthttp's message for a connection it
// stopped serving: a malformed request, a client that went away or was too
// slow. A request that could not be read was answered (400, 408, 413, 431)
// and counted (seckill_http_requests_total{route="unparsed"}) before the
// message.
const connectionErrorPrefix = "error when serving connection"

// fasthttpLogger sends fasthttp's own messages to slog, bounded to
// maxLogMessage bytes. A connection's error is the client's doing and is
// logged at debug level, so that a flood of bad requests cannot flood the
// log; anything else (accept errors, the connection limit) is a warning.
type fasthttpLogger struct{ log *slog.Logger }

// Printf implements fasthttp.Logger.
func (l fasthttpLogger) Printf(format string, args ...any) {
	level := slog.LevelWarn
	if strings.HasPrefix(format, connectionErrorPrefix) {
		level = slog.LevelDebug
	}
	if !l.log.Enabled(context.Background(), level) {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if len(msg) > maxLogMessage {
		msg = strings.ToValidUTF8(msg[:maxLogMessage], "") + fmt.Sprintf("... (%d bytes)", len(msg))
	}
	l.log.Log(context.Background(), level, msg, "component", "fasthttp")
}
