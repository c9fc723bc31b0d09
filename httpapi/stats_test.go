package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
)

// statsRow is the part of a /admin/stats row the tests read.
type statsRow struct {
	CampaignID   string `json:"campaign_id"`
	SKUID        string `json:"sku_id"`
	Status       string `json:"status"`
	SaleLimit    uint32 `json:"sale_limit"`
	Available    uint32 `json:"available"`
	Reserved     uint32 `json:"reserved"`
	Confirmed    uint32 `json:"confirmed"`
	InvariantOK  bool   `json:"invariant_ok"`
	Reservations struct {
		PendingPayment uint32 `json:"pending_payment"`
		Paid           uint32 `json:"paid"`
		Closed         uint32 `json:"closed"`
		HeldClosed     uint32 `json:"held_closed"`
		Total          uint32 `json:"total"`
	} `json:"reservations"`
	OutcomesJSON    map[string]float64 `json:"outcomes_per_second"`
	ReserveP99Ms    *float64           `json:"reserve_p99_ms"`
	Unpaid          uint32             `json:"unpaid"`
	UnpaidOldest    *float64           `json:"unpaid_oldest_age_seconds"`
	ExpiriesPerMin  float64            `json:"expiries_per_minute"`
	RefundsRequired uint32             `json:"refunds_required"`
	RecordsPerFsync *float64           `json:"records_per_fsync"`
	DurableIndex    uint64             `json:"durable_index"`
	SnapshotAge     *float64           `json:"snapshot_age_seconds"`
	NoSnapshot      uint64             `json:"skus_without_snapshot"`
	FeedLag         *uint64            `json:"feed_lag_records"`
}

type statsDoc struct {
	IntervalSeconds float64    `json:"interval_seconds"`
	SKUCount        int        `json:"sku_count"`
	Totals          statsRow   `json:"totals"`
	Rows            []statsRow `json:"skus"`
}

func (ts *testServer) stats(query string) statsDoc {
	ts.t.Helper()
	r := ts.admin(http.MethodGet, "/admin/stats"+query, nil)
	if r.status != http.StatusOK {
		ts.t.Fatalf("GET /admin/stats%s: %v", query, r)
	}
	var doc statsDoc
	if err := json.Unmarshal(r.raw, &doc); err != nil {
		ts.t.Fatal(err)
	}
	return doc
}

func (d statsDoc) row(t *testing.T, campaignID, skuID string) statsRow {
	t.Helper()
	for _, r := range d.Rows {
		if r.CampaignID == campaignID && r.SKUID == skuID {
			return r
		}
	}
	t.Fatalf("no row for %s/%s in %+v", campaignID, skuID, d.Rows)
	return statsRow{}
}

// manualStats turns the background sampling off: the test samples with
// Server.SampleStats at the times it chooses.
func manualStats(c *httpapi.Config) { c.StatsInterval = -1 }

// /admin/stats counts are the audit's, SKU by SKU, after a sale with
// sold-out answers, payments, a cancel and a late payment; the totals sum
// them.
func TestAdminStatsCountsEqualAudit(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{config: manualStats})
	ts.define(campaign("fair", "15m", map[string]int{"a": 5, "b": 40, "c": 3}))
	ids := map[string][]string{}
	for _, s := range []string{"a", "b", "c"} {
		for i := range 8 {
			r := ts.reserve("fair", s, fmt.Sprintf("%s-r%d", s, i), fmt.Sprintf("u%d", i))
			if r.status == http.StatusAccepted {
				ids[s] = append(ids[s], r.str("reservation_id"))
			}
		}
	}
	for i, id := range ids["b"][:3] {
		want(t, ts.post("/v1/reservations/"+id+"/payment", map[string]any{"payment_id": fmt.Sprintf("p%d", i), "amount": 10}), http.StatusOK, "")
	}
	want(t, ts.post("/v1/reservations/"+ids["b"][3]+"/cancel", nil), http.StatusOK, "")
	want(t, ts.post("/v1/reservations/"+ids["b"][3]+"/payment", map[string]any{"payment_id": "late", "amount": 10}), http.StatusConflict, "REFUND_REQUIRED")
	want(t, ts.post("/v1/reservations/"+ids["c"][0]+"/cancel", nil), http.StatusOK, "")

	ts.srv.SampleStats(time.Now())
	doc := ts.stats("")
	if doc.SKUCount != 3 || len(doc.Rows) != 3 {
		t.Fatalf("sku_count %d, %d rows; want 3", doc.SKUCount, len(doc.Rows))
	}
	var sum statsRow
	for _, r := range doc.Rows {
		a := ts.audit(r.CampaignID, r.SKUID)
		got := map[string]uint32{
			"sale_limit": r.SaleLimit, "available": r.Available, "reserved": r.Reserved, "confirmed": r.Confirmed,
			"PENDING_PAYMENT": r.Reservations.PendingPayment, "PAID": r.Reservations.Paid, "CLOSED": r.Reservations.Closed,
			"held_closed": r.Reservations.HeldClosed, "reservations": r.Reservations.Total, "refunds_required": r.RefundsRequired,
		}
		for k, v := range got {
			var w float64
			if strings.ToUpper(k) == k {
				w = a.body["states"].(map[string]any)[k].(float64)
			} else {
				w = a.body[k].(float64)
			}
			if float64(v) != w {
				t.Errorf("%s/%s %s: stats %d, audit %v", r.CampaignID, r.SKUID, k, v, w)
			}
		}
		if !r.InvariantOK || r.Unpaid != r.Reservations.PendingPayment || r.FeedLag != nil {
			t.Errorf("%s/%s: %+v", r.CampaignID, r.SKUID, r)
		}
		sum.Available += r.Available
		sum.Confirmed += r.Confirmed
		sum.RefundsRequired += r.RefundsRequired
		sum.DurableIndex += r.DurableIndex
	}
	if tot := doc.Totals; tot.Available != sum.Available || tot.Confirmed != sum.Confirmed ||
		tot.RefundsRequired != sum.RefundsRequired || tot.DurableIndex != sum.DurableIndex || !tot.InvariantOK {
		t.Errorf("totals %+v do not sum the rows %+v", tot, sum)
	}
	if b := doc.row(t, "fair", "b"); b.Confirmed != 3 || b.RefundsRequired != 1 {
		t.Errorf("fair/b: %+v", b)
	}
	// The age of the oldest unpaid reservation comes with the SKU's next
	// expiry step (the engine's tick loop, every 100 ms).
	eventually(t, 2*time.Minute, "the oldest unpaid age of fair/b", func() bool {
		ts.srv.SampleStats(time.Now())
		age := ts.stats("?skus=fair/b").row(t, "fair", "b").UnpaidOldest
		return age != nil && *age >= 0 && *age < 60
	})

	// The filter: ?skus= picks rows, the totals stay those of every SKU.
	only := ts.stats("?skus=fair/a,fair/c")
	if len(only.Rows) != 2 || only.Totals.Available != doc.Totals.Available {
		t.Errorf("?skus=fair/a,fair/c: %d rows, totals %+v", len(only.Rows), only.Totals)
	}
	if m := ts.stats("?match=fair/&top=1"); len(m.Rows) != 1 || m.Rows[0].CampaignID != "fair" {
		t.Errorf("?match=fair/&top=1: %+v", m.Rows)
	}
	want(t, ts.admin(http.MethodGet, "/admin/stats?skus=nope", nil), http.StatusBadRequest, "BAD_REQUEST")
	want(t, ts.admin(http.MethodGet, "/admin/stats?top=-1", nil), http.StatusBadRequest, "BAD_REQUEST")
	want(t, ts.get("/admin/stats"), http.StatusUnauthorized, "UNAUTHORIZED")
}

// The rates of a scripted burst, over an interval the test sets: each
// within 10% of what was sent (here exact: the time is injected).
func TestAdminStatsRatesOfABurst(t *testing.T) {
	t.Parallel()
	clock := newStepClock()
	ts := startServer(t, serverOptions{
		engine: func(c *actors.Config) { c.Clock, c.ManualTick = clock.now, true },
		config: func(c *httpapi.Config) {
			manualStats(c)
			c.Clock = clock.now
		}})
	ts.define(campaign("burst", "1m", map[string]int{"s": 30}))
	t0 := time.Unix(1_000_000, 0)
	ts.srv.SampleStats(t0)

	// 30 accepted, 6 ALREADY_PURCHASED (the actor), then 12 SOLD_OUT
	// from the fast path: the published stock is 0.
	for i := range 30 {
		want(t, ts.reserve("burst", "s", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i)), http.StatusAccepted, "")
	}
	for i := range 6 {
		want(t, ts.reserve("burst", "s", fmt.Sprintf("again%d", i), fmt.Sprintf("u%d", i)), http.StatusConflict, "SOLD_OUT")
	}
	ts.srv.SampleStats(t0.Add(3 * time.Second))
	first := ts.stats("").row(t, "burst", "s")

	// Then the 30 expire unpaid: 30 in 2 s is 900 a minute.
	clock.step(2 * time.Minute)
	ts.tickUntil(clock.now(), "burst", "s", "30 expired", func(a actors.Activity) bool { return a.Expired == 30 })
	ts.srv.SampleStats(t0.Add(5 * time.Second))
	second := ts.stats("").row(t, "burst", "s")

	within := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.1*want || (want == 0 && got != 0) {
			t.Errorf("%s: %.3f, want %.3f ±10%%", what, got, want)
		}
	}
	o := first.OutcomesJSON
	within("accepted/s", o["accepted"], 10)
	within("sold_out_fast/s", o["sold_out_fast"], 2)
	within("sold_out_actor/s", o["sold_out_actor"], 0)
	within("all/s", o["all"], 12)
	within("server_errors/s", o["server_errors"], 0)
	if first.ReserveP99Ms == nil || first.RecordsPerFsync == nil || *first.RecordsPerFsync < 1 {
		t.Errorf("first interval: p99 %v, records/fsync %v", first.ReserveP99Ms, first.RecordsPerFsync)
	}
	within("expiries/min", second.ExpiriesPerMin, 900)
	within("accepted/s after", second.OutcomesJSON["accepted"], 0)
	if second.ReserveP99Ms != nil || second.Unpaid != 0 {
		t.Errorf("second interval: p99 %v, unpaid %d", second.ReserveP99Ms, second.Unpaid)
	}
}

// The ALREADY_PURCHASED and actor SOLD_OUT rates come from the engine's
// own counters: the real engine, sequential reserves on a SKU of 2.
func TestAdminStatsActorOutcomes(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{config: manualStats})
	ts.define(campaign("act", "15m", map[string]int{"s": 2, "t": 2}))
	t0 := time.Unix(2_000_000, 0)
	ts.srv.SampleStats(t0)
	want(t, ts.reserve("act", "s", "r0", "u0"), http.StatusAccepted, "")
	want(t, ts.reserve("act", "s", "r1", "u0"), http.StatusConflict, "ALREADY_PURCHASED")
	want(t, ts.reserve("act", "s", "r2", "u1"), http.StatusAccepted, "")
	ts.srv.SampleStats(t0.Add(time.Second))
	o := ts.stats("").row(t, "act", "s")
	if a := o.OutcomesJSON; a["accepted"] != 2 || a["already_purchased"] != 1 || a["all"] != 3 {
		t.Errorf("outcomes %v", a)
	}
	if o.RecordsPerFsync == nil || *o.RecordsPerFsync < 1 || o.DurableIndex == 0 || o.SnapshotAge != nil {
		t.Errorf("durability: records/fsync %v, durable index %d, snapshot age %v", o.RecordsPerFsync, o.DurableIndex, o.SnapshotAge)
	}
	want(t, ts.admin(http.MethodPost, "/admin/campaigns/act/skus/s/snapshot", nil), http.StatusOK, "")
	ts.srv.SampleStats(t0.Add(2 * time.Second))
	doc := ts.stats("")
	if age := doc.row(t, "act", "s").SnapshotAge; age == nil || *age < 0 || *age > 60 {
		t.Errorf("snapshot age after a snapshot: %v", age)
	}
	// The totals: the oldest snapshot of the SKUs that have one, and how
	// many have none (t).
	if r := doc.row(t, "act", "t"); r.SnapshotAge != nil || r.NoSnapshot != 1 {
		t.Errorf("SKU without a snapshot: age %v, without %d", r.SnapshotAge, r.NoSnapshot)
	}
	if tot := doc.Totals; tot.SnapshotAge == nil || *tot.SnapshotAge != *doc.row(t, "act", "s").SnapshotAge || tot.NoSnapshot != 1 {
		t.Errorf("totals: oldest snapshot %v, SKUs without one %d; want s's age and 1", tot.SnapshotAge, tot.NoSnapshot)
	}
}

// The stream: a history event, then the latest sample, then one event per
// sample; the token is needed.
func TestAdminStatsStream(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{config: manualStats})
	ts.define(campaign("st", "15m", map[string]int{"a": 5, "b": 5}))
	t0 := time.Unix(3_000_000, 0)
	ts.srv.SampleStats(t0)
	ts.srv.SampleStats(t0.Add(time.Second))
	want(t, ts.get("/admin/stats/stream"), http.StatusUnauthorized, "UNAUTHORIZED")

	req, _ := http.NewRequest(http.MethodGet, ts.base+"/admin/stats/stream?skus=st/b", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, ct)
	}
	events := bufio.NewReader(resp.Body)
	next := func() (name string, data []byte) {
		t.Helper()
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the stream: %v", err)
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "event: "):
				name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				data = []byte(line[len("data: "):])
			case line == "":
				return name, data
			}
		}
	}
	name, data := next()
	var history struct {
		At   []int64                    `json:"at"`
		SKUs map[string]json.RawMessage `json:"skus"`
	}
	if err := json.Unmarshal(data, &history); name != "history" || err != nil || len(history.At) != 2 || len(history.SKUs) != 1 {
		t.Fatalf("first event %s %s (%v)", name, data, err)
	}
	if name, data = next(); name != "stats" {
		t.Fatalf("second event %s %s", name, data)
	}
	ts.srv.SampleStats(t0.Add(2 * time.Second))
	name, data = next()
	var doc statsDoc
	if err := json.Unmarshal(data, &doc); name != "stats" || err != nil || doc.IntervalSeconds != 1 || len(doc.Rows) != 1 {
		t.Fatalf("third event %s %s (%v)", name, data, err)
	}
}

// The page and its assets need no token, carry a strict Content Security
// Policy, and name no other host; the page reads the stream with fetch and
// never puts the token in a URL.
func TestDashboardPage(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{config: manualStats})
	const csp = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
		"img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	pages := map[string]string{
		"/admin/dashboard":         "text/html",
		"/admin/dashboard/app.js":  "text/javascript",
		"/admin/dashboard/app.css": "text/css",
	}
	for path, ct := range pages {
		r := ts.get(path)
		if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), ct) ||
			r.header.Get("Content-Security-Policy") != csp || r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d %v", path, r.status, r.header)
		}
		for _, bad := range []string{"http://", "https://", "//cdn", "<script>", "new EventSource", "localStorage", "?token", "&token"} {
			if strings.Contains(string(r.raw), bad) && !(bad == "http://" && strings.Contains(string(r.raw), "http://www.w3.org/2000/svg")) {
				t.Errorf("%s contains %q", path, bad)
			}
		}
	}
	js := string(ts.get("/admin/dashboard/app.js").raw)
	for _, need := range []string{"fetch(", "'Bearer '", "sessionStorage", "/admin/stats/stream"} {
		if !strings.Contains(js, need) {
			t.Errorf("app.js lacks %q", need)
		}
	}
}
