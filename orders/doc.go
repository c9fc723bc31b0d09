// Package orders is the reference order service: it consumes one
// campaign's event feed (directly from seckilld, from every cell of a
// cluster with a cursor per cell: cells.go, or from the JetStream stream
// seckill-relay fills) into PostgreSQL, one order per reservation,
// exactly once in effect. cmd/seckill-orders is its command; the repairs
// seckillctl reconcile prints re-deliver events by id (redeliver.go).
//
// The rule it shows: an event may arrive twice (a crash between applying
// a page and saving the cursor, a relay's re-send), so each batch of
// events (a feed page, or what the stream has; --batch 1 makes it one
// event) is one transaction that first records its events with INSERT
// INTO order_events … ON CONFLICT (source, id) DO NOTHING, applies only
// those that inserted a row, and ends by saving the cursor. A crash
// anywhere leaves either all of it or none of it; the events after the
// saved cursor are read again and those already applied are skipped.
//
// When the feed no longer holds events it needs (snapshots truncated a
// SKU's log past its cursor, or past a SKU's start for a new consumer), it
// takes that SKU from seckill's export as of one log index, then follows
// the feed after it (resync.go), as the feed's documentation asks.
//
// When seckilld was restored to an earlier point (the feed's 409
// CURSOR_DIVERGED), or serves an older copy of its log that recorded past
// the cursor (the last event applied is not the feed's: applied.go), Run
// stops, and an operator's Reanchor keeps what the abandoned records did
// apart and follows the restored feed (reanchor.go).
//
// The tables (migrations/, applied with goose at start): orders (the
// order's state follows its reservation: PENDING_PAYMENT → PAID, or →
// CLOSED → REFUND_REQUIRED when a payment came after the close),
// order_refunds (every payment seckill recorded for refund), order_events
// (every event applied, with when), order_cursors (where each consumer
// resumes), and what a re-anchoring set apart (order_reanchors,
// diverged_orders, diverged_refunds, diverged_events). seckillctl
// reconcile compares them with seckill's side.
package orders
