package httpapi

// The JSON documents of /admin/stats and /admin/stats/stream. Counts are
// durable (as of the last fsynced record, like the Prometheus gauges);
// rates are per second (expiries: per minute) over the last sampling
// interval (Config.StatsInterval, 1 s), computed by the server from
// per-SKU counters; latencies are milliseconds, bucketed (at most 19%
// high: actors.Histogram). A null figure had no sample in the interval.

// statsDoc is the answer of GET /admin/stats and each "stats" event of the
// stream.
type statsDoc struct {
	// At is when the sample was taken (RFC 3339, ms).
	At string `json:"at"`
	// IntervalSeconds is the time the rates are computed over (0 for the
	// first sample after the start: no rate yet).
	IntervalSeconds float64 `json:"interval_seconds"`
	// SKUCount is the number of SKUs the engine knows; Rows lists the
	// selected ones (?skus=, ?match=, ?top=), busiest first.
	SKUCount int `json:"sku_count"`
	// Totals sums every SKU, selected or not.
	Totals statsRow   `json:"totals"`
	Rows   []statsRow `json:"skus"`
	// ReplicaSet is the replica's state (Config.ReplicaSet), omitted for
	// a process that is no replica.
	ReplicaSet any `json:"replica_set,omitempty"`
}

// statsRow is one SKU, or the totals (without ids and status).
type statsRow struct {
	CampaignID string `json:"campaign_id,omitempty"`
	SKUID      string `json:"sku_id,omitempty"`
	// Status is the coarse status (OPEN, THROTTLED, QUEUE_FULL,
	// NOT_STARTED, TEMP_SOLD_OUT, FINAL_SOLD_OUT, ENDED, PAUSED) or
	// UNAVAILABLE.
	Status string `json:"status,omitempty"`
	// Cell is this process's cell of a celled SKU (omitted otherwise).
	Cell string `json:"cell,omitempty"`

	// Tokens: invariant_ok is the audit's conservation of tokens on these
	// counts (sku.Counts.Conservation): sale_limit = available + reserved
	// + confirmed, or on a cell of a celled SKU, which holds only what the
	// ledger granted it, granted = available + reserved + confirmed +
	// returned (granted and returned: the units of the cell's GRANT and
	// RETURN records; 0 for a SKU that is not celled; the totals sum them).
	SaleLimit   uint64 `json:"sale_limit"`
	Available   uint64 `json:"available"`
	Reserved    uint64 `json:"reserved"`
	Confirmed   uint64 `json:"confirmed"`
	Granted     uint64 `json:"granted"`
	Returned    uint64 `json:"returned"`
	InvariantOK bool   `json:"invariant_ok"`
	// Reservations by state.
	Reservations statsReservations `json:"reservations"`

	// Pressure: the inbox and its oldest call's age; the log's oldest call
	// waiting for durability (commit_wait_ms) and how long the calls of
	// its last group commit waited (commit_latency_ms); the wait a reserve
	// admitted now would see as admission judges it (expected_wait_ms =
	// oldest_wait_ms + max(commit_wait_ms, commit_latency_ms)) against
	// max_queue_wait; the permits in flight against what admission allows
	// now (permits_bound: the bound when OPEN, less or 0 while THROTTLED);
	// the consumer rate.
	InboxDepth            int64   `json:"inbox_depth"`
	OldestWaitMs          float64 `json:"oldest_wait_ms"`
	CommitWaitMs          float64 `json:"commit_wait_ms"`
	CommitLatencyMs       float64 `json:"commit_latency_ms"`
	ExpectedWaitMs        float64 `json:"expected_wait_ms"`
	MaxQueueWaitMs        float64 `json:"max_queue_wait_ms"`
	PermitsInFlight       int64   `json:"permits_in_flight"`
	PermitsBound          int64   `json:"permits_bound"`
	ConsumerRatePerSecond float64 `json:"consumer_rate_per_second"`

	// Outcomes of reserves per second, and their latency.
	OutcomesPerSecond statsOutcomes `json:"outcomes_per_second"`
	ReserveP50Ms      *float64      `json:"reserve_p50_ms"`
	ReserveP99Ms      *float64      `json:"reserve_p99_ms"`

	// Abuse: reservations left unpaid and how old the oldest is, expiries,
	// refunds owed.
	Unpaid                 uint64   `json:"unpaid"`
	UnpaidOldestAgeSeconds *float64 `json:"unpaid_oldest_age_seconds"`
	ExpiriesPerMinute      float64  `json:"expiries_per_minute"`
	RefundsRequired        uint64   `json:"refunds_required"`

	// Durability: the log's group commits over the interval, its indexes,
	// the newest snapshot.
	FsyncP99Ms      *float64 `json:"fsync_p99_ms"`
	RecordsPerFsync *float64 `json:"records_per_fsync"`
	// DurableIndex and LastIndex: the log's fsynced and last record (sums
	// in the totals).
	DurableIndex uint64 `json:"durable_index"`
	LastIndex    uint64 `json:"last_index"`
	// SnapshotAgeSeconds: since the SKU's newest snapshot was written
	// (actors.Activity.SnapshotAt; null: none; in the totals, the oldest
	// of the SKUs that have one, null when none has).
	SnapshotAgeSeconds *float64 `json:"snapshot_age_seconds"`
	// WithoutSnapshot is 1 for a SKU with no snapshot yet, 0 otherwise
	// (the totals: how many SKUs have none).
	WithoutSnapshot uint64 `json:"skus_without_snapshot"`
	// FeedLagRecords is how far the slowest feed consumer is behind: no
	// consumer reports its position to the server, so it is always null.
	FeedLagRecords *uint64 `json:"feed_lag_records"`
}

// statsReservations counts reservations by state.
type statsReservations struct {
	PendingPayment uint64 `json:"pending_payment"`
	Paid           uint64 `json:"paid"`
	Closed         uint64 `json:"closed"`
	// HeldClosed are CLOSED and still hold their token (release_on_close
	// false): among reserved.
	HeldClosed uint64 `json:"held_closed"`
	Total      uint64 `json:"total"`
}

// statsOutcomes are reserve answers per second by kind.
type statsOutcomes struct {
	Accepted float64 `json:"accepted"`
	// SoldOutFast: answered SOLD_OUT by the ingress (published durable
	// stock, answer cache); SoldOutActor: decided by the SKU actor.
	SoldOutFast  float64 `json:"sold_out_fast"`
	SoldOutActor float64 `json:"sold_out_actor"`
	QueueFull    float64 `json:"queue_full"`
	// Throttled: 429 THROTTLED (commits too slow for max_queue_wait).
	Throttled        float64 `json:"throttled"`
	AlreadyPurchased float64 `json:"already_purchased"`
	// EntryPassRefused and SubjectLimitRefused count answers whose reason
	// starts with ENTRY_PASS or SUBJECT_LIMIT (zero until entry passes
	// exist).
	EntryPassRefused    float64 `json:"entry_pass_refused"`
	SubjectLimitRefused float64 `json:"subject_limit_refused"`
	// ServerErrors: 5xx answers other than PAUSED.
	ServerErrors float64 `json:"server_errors"`
	// All: every reserve answer (the ones above and the rest: NOT_STARTED,
	// ENDED, PAUSED, 4xx); the rows are sorted by it.
	All float64 `json:"all"`
}

// statsHistory is the first event of the stream: the last minute of the
// sparkline series, oldest first. At[i] is the time of the i-th point
// (Unix ms); each series has one value per point (null: none).
type statsHistory struct {
	At     []int64                `json:"at"`
	Totals statsSeries            `json:"totals"`
	SKUs   map[string]statsSeries `json:"skus"` // by "campaign_id/sku_id"
}

// statsSeries are the sparklines of one SKU or of the totals.
type statsSeries struct {
	Accepted []float64  `json:"accepted"`
	SoldOut  []float64  `json:"sold_out"` // fast and actor
	Refused  []float64  `json:"refused"`  // queue full, throttled, entry pass, subject limit, 5xx
	P99Ms    []*float64 `json:"reserve_p99_ms"`
}
