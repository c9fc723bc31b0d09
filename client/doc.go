// Package client is a Go client of seckilld's HTTP API (and of
// seckill-router's, which serves the same routes): reserve with or without
// an entry pass, batch reserve, the reservation's status, the lookup of a
// request_id, pay, cancel, the event feed (pages and Server-Sent Events),
// the reservations export and the admin reads a reconciliation needs.
//
// The rules a buyer's client or a gateway must follow are built in, so a
// caller cannot get them wrong:
//
//   - A retry reuses the request_id. Reserve makes one up (random, 128
//     bits) when the caller gives none and no entry pass; every attempt of
//     one call sends the same body, so at most one reservation is made
//     whatever is retried. Pay is idempotent by payment_id, cancel by
//     itself.
//   - Retry-After is honoured: 429 (QUEUE_FULL, THROTTLED) and 503 (UNAVAILABLE,
//     PAUSED, READ_TIMEOUT, CELL_UNAVAILABLE, ...) wait what the server
//     asks, then try again; without the header (also after no answer at
//     all, or a proxy's 502) a doubling backoff with jitter, from 50 ms to
//     2 s, at most MaxAttempts (6) attempts. A wait that would pass the context's deadline is not taken:
//     the call returns the server's answer as an *Error at once.
//   - 504 RESULT_UNKNOWN is resolved, never guessed: a reserve asks the
//     request lookup (GET .../requests/{request_id}) and returns the
//     reservation made or the recorded refusal, or sends the same request
//     again when the SKU decided nothing; a payment or a cancel reads the
//     reservation and sends again when it did not take effect.
//   - 421 is followed: WRONG_CELL to the cell the answer names (Options.Cells
//     maps cell ids to base URLs), and any 421 with a Location to that
//     address (a replica set's NOT_PRIMARY); a NOT_PRIMARY that names no
//     primary (a failover in progress) carries Retry-After and is sent to
//     the same address again after it, as a 503 is. A reservation id that
//     names a cell (campaign~sku~cell~seq~tag) is sent to that cell directly.
//   - Every call takes a context: its deadline bounds the whole call,
//     retries included; Options.AttemptTimeout bounds each attempt. A
//     context cancelled during a wait ends the call with an error that is
//     errors.Is the context's error and errors.As the last answer's *Error.
//   - Connections are kept alive and reused (one pool per Client; share a
//     Client between goroutines).
//   - Options.FastHTTP sends the calls over fasthttp instead of net/http
//     (the SSE stream excepted): a reserve then costs a few allocations
//     (its body, its path, the answer's copy and fields; the answers are
//     read with fastjson), as a load generator needs (BenchmarkReserve).
//
// Refusals are *Error values with the HTTP status and the server's
// machine-readable reason; errors.Is(err, client.ErrSoldOut) and the other
// Err* values match by reason. A transport failure that outlasts the
// retries is returned as it is (wrapped).
package client
