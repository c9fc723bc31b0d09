package httpapi

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/internal/timefmt"
)

// The stats sampler: once a StatsInterval it reads every SKU's published
// stats (actors.Stats), its activity counters (actors.Activity) and its
// ingress counters, turns the differences since the previous reading into
// rates, and keeps the result for /admin/stats and its stream, with a
// minute of sparkline points per SKU. Rates come from these per-SKU
// counters and two readings, never from Prometheus series. It costs one
// pass over the SKUs a second and ~3 KB per SKU.

// statsHistoryPoints is the length of the sparkline history: a minute at
// the default interval.
const statsHistoryPoints = 60

// statsSampler holds the readings and the latest sample.
type statsSampler struct {
	mu     sync.Mutex
	at     time.Time // the previous sample's time (zero: none)
	n      uint64    // samples taken
	tracks map[gateKey]*skuTrack
	times  [statsHistoryPoints]int64 // Unix ms of each point, by n % statsHistoryPoints
	totals seriesRing
	latest *statsDoc
	// changed is closed and replaced by each sample: the streams wait on it.
	changed chan struct{}
	// stop is closed by Shutdown: the loop and the streams end.
	stop     chan struct{}
	stopOnce sync.Once
	runOnce  sync.Once
}

func newStatsSampler() *statsSampler {
	return &statsSampler{
		tracks:  make(map[gateKey]*skuTrack),
		changed: make(chan struct{}),
		stop:    make(chan struct{}),
	}
}

// skuTrack is what the sampler keeps of one SKU: its counters at the last
// reading, and its sparklines.
type skuTrack struct {
	act    actors.Activity
	in     ingressReading
	series seriesRing
	seen   uint64 // the sample that last saw it
	first  uint64 // the sample that first saw it
}

// ingressReading is a copy of ingressCounters.
type ingressReading struct {
	soldOut, queueFull, throttled, entryPass, subjectLimit, serverErrors, answers uint64
	latency                                                                       actors.HistogramCounts
}

func (c *ingressCounters) read() ingressReading {
	if c == nil {
		return ingressReading{}
	}
	return ingressReading{
		soldOut: c.soldOut.Load(), queueFull: c.queueFull.Load(), throttled: c.throttled.Load(), entryPass: c.entryPass.Load(),
		subjectLimit: c.subjectLimit.Load(), serverErrors: c.serverErrors.Load(), answers: c.answers.Load(),
		latency: c.latency.Snapshot(),
	}
}

// seriesRing is a minute of sparkline points (float32: half the memory).
type seriesRing struct {
	accepted, soldOut, refused, p99Ms [statsHistoryPoints]float32 // p99Ms NaN: none
}

func (r *seriesRing) put(n uint64, row *statsRow) {
	i := n % statsHistoryPoints
	o := row.OutcomesPerSecond
	r.accepted[i] = float32(o.Accepted)
	r.soldOut[i] = float32(o.SoldOutFast + o.SoldOutActor)
	r.refused[i] = float32(o.QueueFull + o.Throttled + o.EntryPassRefused + o.SubjectLimitRefused + o.ServerErrors)
	r.p99Ms[i] = float32(math.NaN())
	if row.ReserveP99Ms != nil {
		r.p99Ms[i] = float32(*row.ReserveP99Ms)
	}
}

// series returns the points of samples [from, to), oldest first; points
// before first are zero.
func (r *seriesRing) series(from, to, first uint64) statsSeries {
	var s statsSeries
	for n := from; n < to; n++ {
		i := n % statsHistoryPoints
		if n < first {
			s.Accepted, s.SoldOut, s.Refused = append(s.Accepted, 0), append(s.SoldOut, 0), append(s.Refused, 0)
			s.P99Ms = append(s.P99Ms, nil)
			continue
		}
		s.Accepted = append(s.Accepted, float64(r.accepted[i]))
		s.SoldOut = append(s.SoldOut, float64(r.soldOut[i]))
		s.Refused = append(s.Refused, float64(r.refused[i]))
		var p *float64
		if v := r.p99Ms[i]; !math.IsNaN(float64(v)) {
			f := float64(v)
			p = &f
		}
		s.P99Ms = append(s.P99Ms, p)
	}
	return s
}

// SampleStats takes a sample of every SKU's figures at now, the time the
// rates are computed with (the interval is now minus the previous
// sample's now; none, or a now not after it, gives no rates). The
// background loop calls it every Config.StatsInterval with time.Now; a test
// that set a negative StatsInterval calls it with scripted times. Counts,
// statuses and ages are read at Config.Clock, like every other answer.
func (s *Server) SampleStats(now time.Time) {
	stats := s.engine.AllStats()
	acts := s.engine.AllActivity()
	actOf := make(map[gateKey]*actors.Activity, len(acts))
	for i := range acts {
		actOf[gateKey{acts[i].CampaignID, acts[i].SKUID}] = &acts[i]
	}
	clock := s.cfg.Clock()

	sp := s.stats
	sp.mu.Lock()
	defer sp.mu.Unlock()
	var dt float64
	if !sp.at.IsZero() && now.After(sp.at) {
		dt = now.Sub(sp.at).Seconds()
	}
	doc := &statsDoc{At: timefmt.Millis(now.UnixMilli()), IntervalSeconds: dt, Rows: make([]statsRow, 0, len(stats))}
	if s.cfg.ReplicaSet != nil {
		doc.ReplicaSet = s.cfg.ReplicaSet()
	}
	var tot totalsBuilder
	tot.row.InvariantOK = true
	tot.row.MaxQueueWaitMs = millis(s.limits.MaxQueueWait)
	for i := range stats {
		st := &stats[i]
		if st.Definition.CampaignID == "" && !st.Unavailable {
			continue // being created: not a SKU yet
		}
		key := gateKey{st.CampaignID, st.SKUID}
		act := actOf[key]
		if act == nil {
			act = &actors.Activity{}
		}
		in := s.ingress.load(st.CampaignID, st.SKUID).read()
		tr := sp.tracks[key]
		fresh := tr == nil
		if fresh {
			tr = &skuTrack{first: sp.n}
			sp.tracks[key] = tr
		}
		row := s.statsRow(st, act, clock)
		var d intervalDelta
		if !fresh && dt > 0 {
			d = deltaOf(tr, act, &in)
			d.rates(&row, dt)
		}
		tr.act, tr.in, tr.seen = *act, in, sp.n
		tr.series.put(sp.n, &row)
		tot.add(&row, &d)
		doc.Rows = append(doc.Rows, row)
	}
	for k, tr := range sp.tracks {
		if tr.seen != sp.n {
			delete(sp.tracks, k) // gone from the engine
		}
	}
	doc.SKUCount = len(doc.Rows)
	doc.Totals = tot.finish(dt)
	sort.SliceStable(doc.Rows, func(i, j int) bool {
		return doc.Rows[i].OutcomesPerSecond.All > doc.Rows[j].OutcomesPerSecond.All
	})
	sp.times[sp.n%statsHistoryPoints] = now.UnixMilli()
	sp.totals.put(sp.n, &doc.Totals)
	sp.n++
	sp.at = now
	sp.latest = doc
	close(sp.changed)
	sp.changed = make(chan struct{})
}

// statsRow renders the published, durable figures of one SKU at clock.
func (s *Server) statsRow(st *actors.Stats, act *actors.Activity, clock time.Time) statsRow {
	n := st.Counts
	g := s.gates.get(st.CampaignID, st.SKUID)
	inFlight := g.inFlight.Load()
	d := s.limits.decide(st, g)
	row := statsRow{
		CampaignID: st.CampaignID, SKUID: st.SKUID, Cell: st.Definition.Cell,
		SaleLimit: uint64(n.SaleLimit), Available: uint64(n.Available),
		Reserved: uint64(n.Reserved), Confirmed: uint64(n.Confirmed),
		InvariantOK: n.Conservation(st.Definition.Cell != "") == "",
		Granted:     n.Granted, Returned: n.Returned,
		Reservations: statsReservations{
			PendingPayment: uint64(n.PendingPayment), Paid: uint64(n.Paid), Closed: uint64(n.Closed),
			HeldClosed: uint64(n.HeldClosed), Total: uint64(n.Reservations),
		},
		InboxDepth:            st.Queued,
		OldestWaitMs:          millis(st.OldestWait),
		CommitWaitMs:          millis(st.CommitWait),
		CommitLatencyMs:       millis(st.CommitLatency),
		ExpectedWaitMs:        millis(d.Wait),
		MaxQueueWaitMs:        millis(s.limits.MaxQueueWait),
		PermitsInFlight:       inFlight,
		PermitsBound:          d.Permits,
		ConsumerRatePerSecond: st.RatePerSecond,
		Unpaid:                uint64(n.PendingPayment),
		RefundsRequired:       uint64(n.RefundsRequired),
		DurableIndex:          act.DurableIndex,
		LastIndex:             act.LastIndex,
	}
	if st.Unavailable {
		row.Status = ReasonUnavailable
	} else {
		row.Status, _ = s.limits.skuStatus(*st, clock, g)
	}
	if n.PendingPayment > 0 && act.EarliestExpireAt > 0 {
		made := act.EarliestExpireAt - st.Definition.PaymentWindowMs
		row.UnpaidOldestAgeSeconds = ptr(max(0, float64(clock.UnixMilli()-made)/1000))
	}
	if !act.SnapshotAt.IsZero() {
		row.SnapshotAgeSeconds = ptr(max(0, clock.Sub(act.SnapshotAt).Seconds()))
	} else {
		row.WithoutSnapshot = 1
	}
	return row
}

// intervalDelta is what one SKU did over an interval: counter differences
// (a counter that went back, after a restart of the SKU, counts as 0).
type intervalDelta struct {
	accepted, soldOutActor, alreadyPurchased, expired, batches, records           uint64
	soldOut, queueFull, throttled, entryPass, subjectLimit, serverErrors, answers uint64
	latency, fsync                                                                actors.HistogramCounts
}

func deltaOf(tr *skuTrack, act *actors.Activity, in *ingressReading) intervalDelta {
	d := intervalDelta{
		accepted:         diff(act.Accepted, tr.act.Accepted),
		soldOutActor:     diff(act.SoldOut, tr.act.SoldOut),
		alreadyPurchased: diff(act.AlreadyPurchased, tr.act.AlreadyPurchased),
		expired:          diff(act.Expired, tr.act.Expired),
		batches:          diff(act.Batches, tr.act.Batches),
		records:          diff(act.Records, tr.act.Records),
		soldOut:          diff(in.soldOut, tr.in.soldOut),
		queueFull:        diff(in.queueFull, tr.in.queueFull),
		throttled:        diff(in.throttled, tr.in.throttled),
		entryPass:        diff(in.entryPass, tr.in.entryPass),
		subjectLimit:     diff(in.subjectLimit, tr.in.subjectLimit),
		serverErrors:     diff(in.serverErrors, tr.in.serverErrors),
		answers:          diff(in.answers, tr.in.answers),
	}
	// An idle SKU's histograms are not compared: no answer, no commit.
	if in.answers != tr.in.answers {
		d.latency = histogramDiff(in.latency, tr.in.latency)
	}
	if act.Batches != tr.act.Batches {
		d.fsync = histogramDiff(act.Fsync, tr.act.Fsync)
	}
	return d
}

// rates fills the row's per-interval figures from d over dt seconds.
func (d *intervalDelta) rates(row *statsRow, dt float64) {
	per := func(n uint64) float64 { return float64(n) / dt }
	row.OutcomesPerSecond = statsOutcomes{
		Accepted:            per(d.accepted),
		SoldOutFast:         per(d.soldOut - min(d.soldOut, d.soldOutActor)),
		SoldOutActor:        per(d.soldOutActor),
		QueueFull:           per(d.queueFull),
		Throttled:           per(d.throttled),
		AlreadyPurchased:    per(d.alreadyPurchased),
		EntryPassRefused:    per(d.entryPass),
		SubjectLimitRefused: per(d.subjectLimit),
		ServerErrors:        per(d.serverErrors),
		All:                 per(d.answers),
	}
	row.ExpiriesPerMinute = 60 * per(d.expired)
	row.ReserveP50Ms, row.ReserveP99Ms = quantileMs(d.latency, 0.5), quantileMs(d.latency, 0.99)
	row.FsyncP99Ms = quantileMs(d.fsync, 0.99)
	if d.batches > 0 {
		row.RecordsPerFsync = ptr(float64(d.records) / float64(d.batches))
	}
}

// totalsBuilder sums the rows into the totals.
type totalsBuilder struct {
	row statsRow
	d   intervalDelta
}

func (t *totalsBuilder) add(r *statsRow, d *intervalDelta) {
	o := &t.row
	o.SaleLimit += r.SaleLimit
	o.Available += r.Available
	o.Reserved += r.Reserved
	o.Confirmed += r.Confirmed
	o.Granted += r.Granted
	o.Returned += r.Returned
	o.InvariantOK = o.InvariantOK && r.InvariantOK
	o.Reservations.PendingPayment += r.Reservations.PendingPayment
	o.Reservations.Paid += r.Reservations.Paid
	o.Reservations.Closed += r.Reservations.Closed
	o.Reservations.HeldClosed += r.Reservations.HeldClosed
	o.Reservations.Total += r.Reservations.Total
	o.InboxDepth += r.InboxDepth
	o.OldestWaitMs = max(o.OldestWaitMs, r.OldestWaitMs)
	o.CommitWaitMs = max(o.CommitWaitMs, r.CommitWaitMs)
	o.CommitLatencyMs = max(o.CommitLatencyMs, r.CommitLatencyMs)
	o.ExpectedWaitMs = max(o.ExpectedWaitMs, r.ExpectedWaitMs)
	o.PermitsInFlight += r.PermitsInFlight
	o.PermitsBound += r.PermitsBound
	o.ConsumerRatePerSecond += r.ConsumerRatePerSecond
	o.Unpaid += r.Unpaid
	o.RefundsRequired += r.RefundsRequired
	o.DurableIndex += r.DurableIndex
	o.LastIndex += r.LastIndex
	o.UnpaidOldestAgeSeconds = maxOf(o.UnpaidOldestAgeSeconds, r.UnpaidOldestAgeSeconds)
	o.SnapshotAgeSeconds = maxOf(o.SnapshotAgeSeconds, r.SnapshotAgeSeconds)
	o.WithoutSnapshot += r.WithoutSnapshot
	a := &t.d
	a.accepted += d.accepted
	a.soldOutActor += d.soldOutActor
	a.alreadyPurchased += d.alreadyPurchased
	a.expired += d.expired
	a.batches += d.batches
	a.records += d.records
	// Each SKU's fast SOLD_OUT is its own difference: sum them as such.
	a.soldOut += d.soldOut - min(d.soldOut, d.soldOutActor) + d.soldOutActor
	a.queueFull += d.queueFull
	a.throttled += d.throttled
	a.entryPass += d.entryPass
	a.subjectLimit += d.subjectLimit
	a.serverErrors += d.serverErrors
	a.answers += d.answers
	for i := range a.latency {
		a.latency[i] += d.latency[i]
		a.fsync[i] += d.fsync[i]
	}
}

// finish returns the totals, with their rates over dt (none when 0).
func (t *totalsBuilder) finish(dt float64) statsRow {
	if dt > 0 {
		t.d.rates(&t.row, dt)
	}
	return t.row
}

// history returns the sparklines of the last minute for the rows of doc.
func (sp *statsSampler) historyLocked(rows []statsRow) statsHistory {
	from := sp.n - min(sp.n, statsHistoryPoints)
	h := statsHistory{SKUs: make(map[string]statsSeries, len(rows))}
	for n := from; n < sp.n; n++ {
		h.At = append(h.At, sp.times[n%statsHistoryPoints])
	}
	h.Totals = sp.totals.series(from, sp.n, 0)
	for _, r := range rows {
		if tr := sp.tracks[gateKey{r.CampaignID, r.SKUID}]; tr != nil {
			h.SKUs[r.CampaignID+"/"+r.SKUID] = tr.series.series(from, sp.n, tr.first)
		}
	}
	return h
}

func diff(cur, prev uint64) uint64 {
	if cur < prev {
		return 0
	}
	return cur - prev
}

func histogramDiff(cur, prev actors.HistogramCounts) actors.HistogramCounts {
	if cur.Count() < prev.Count() {
		return actors.HistogramCounts{}
	}
	return cur.Sub(prev)
}

func quantileMs(c actors.HistogramCounts, q float64) *float64 {
	d, ok := c.Quantile(q)
	if !ok {
		return nil
	}
	return ptr(millis(d))
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ptr(v float64) *float64 { return &v }

func maxOf(a, b *float64) *float64 {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return ptr(max(*a, *b))
}
