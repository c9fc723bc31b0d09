// Package bench is the load tool of seckill: it drives a seckilld server (or
// any Reserver) with flash-sale traffic, checks on the client side that no unit
// was sold twice, and reads the server's own audit at the end.
//
// The pieces, one file each:
//
//   - plan.go: the deterministic list of attempts (fresh users, repeat clicks
//     with a new request_id, retries of an earlier request_id).
//   - driver.go: sends the plan through a Reserver, either closed loop (a
//     fixed number of workers, each waits for its answer) or open loop (a
//     fixed arrival rate; latency counted from the intended send time so that
//     a stalled server cannot hide its queue, the "coordinated omission" trap).
//   - tally.go, latency.go, ledger.go: what was answered, how fast (HDR
//     histograms), and which reservation went to whom.
//   - client.go: the tool's view of the seckilld HTTP API, package client
//     over fasthttp (one attempt per call: the tool resends by its own
//     policy); skureserver.go: the Reserver of one SKU on it.
//   - scenario.go: seed, hot and many-skus; payflow.go: payflow.
//   - result.go, verdict.go, summary.go, report.go: the JSON result, the
//     pass/fail verdict, the text summary and the offline HTML report.
//   - cli.go: flags and Main, called by cmd/seckill-bench.
//
// Traffic goes to loopback addresses only: the tool refuses any other target.
package bench
