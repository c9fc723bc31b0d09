package httpapi

import "github.com/seckill/seckill/actors"

// ActivityReader reads what the SKUs did since the engine started them
// (cumulative counters: reserve answers decided by the actors, expiries,
// group commits and fsyncs, snapshots), for /admin/stats. The server turns
// two readings a second apart into rates; nothing is kept per SKU in
// Prometheus (10,000 SKUs would be too many series).
type ActivityReader interface {
	// AllActivity returns the Activity of every defined SKU, sorted by
	// campaign and SKU id.
	AllActivity() []actors.Activity
}
