package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
)

// batchResult is one result of a batch answer.
type batchResult struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// postBatch sends a batch reserve of raw items and decodes its results.
func (ts *testServer) postBatch(campaignID, skuID string, items []string) (response, []batchResult) {
	ts.t.Helper()
	body := `{"items":[` + strings.Join(items, ",") + `]}`
	r := ts.post("/v1/campaigns/"+campaignID+"/skus/"+skuID+"/reservations:batch", body)
	var out struct {
		Results []batchResult `json:"results"`
	}
	if r.status == http.StatusOK {
		if err := json.Unmarshal(r.raw, &out); err != nil {
			ts.t.Fatalf("batch answer %v: %v", r, err)
		}
	}
	return r, out.Results
}

// zeroKey gives every SKU the same reservation id key, so that two
// engines fed the same commands issue the same reservation ids.
type zeroKey struct{}

func (zeroKey) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// batchWorld is a server on its engine.
type batchWorld struct {
	ts    *testServer
	clock *stepClock // shared by both worlds
}

// newBatchWorlds starts two servers on the same fixed clock and
// reservation id key.
func newBatchWorlds(t *testing.T) (batched, single batchWorld) {
	clock := newStepClock()
	config := func(c *httpapi.Config) { c.Clock = clock.now }
	start := func() batchWorld {
		ts := startServer(t, serverOptions{config: config, engine: func(c *actors.Config) {
			c.Clock, c.Rand = clock.now, zeroKey{}
		}})
		return batchWorld{ts: ts, clock: clock}
	}
	return start(), start()
}

// A batch answers each item what the single reserve answered the same
// item, byte for byte: random histories of batches (new, retried and
// reused request_ids, users buying twice, malformed items), cancels and
// pauses run against two servers, one sending each batch and one sending
// its items one by one. One difference is by design: the fast paths read
// the SKU's stats once per batch, so a batch is cut after the item that
// takes the last unit (the items after it would get the engine's recorded
// SOLD_OUT instead of the fast path's, the same answer, but final for
// their request_ids).
func TestBatchAnswersAsSingleReserves(t *testing.T) {
	t.Parallel()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	batched, single := newBatchWorlds(t)
	seen := map[string]int{}
	for h := range 100 {
		runBatchHistory(t, rand.New(rand.NewPCG(seed, uint64(h))), fmt.Sprintf("h%d", h), batched, single, seen)
	}
	t.Logf("answers: %v", seen)
	// The answers every run reaches: without them the comparison would
	// test little.
	for _, want := range []string{"202", "409 SOLD_OUT", "409 ALREADY_PURCHASED", "422 REQUEST_ID_REUSED", "400 BAD_REQUEST"} {
		if seen[want] == 0 {
			t.Errorf("seed %d: no %q among the answers", seed, want)
		}
	}
}

// runBatchHistory plays one random history on a fresh campaign.
// seen counts the answers by status and reason.
func runBatchHistory(t *testing.T, rng *rand.Rand, campaignID string, batched, single batchWorld, seen map[string]int) {
	t.Helper()
	const skuID = "s"
	batched.clock.ms.Store(time.Now().UnixMilli()) // within the window campaign() opens
	def := campaign(campaignID, "15m", map[string]int{skuID: 1 + rng.IntN(5)})
	batched.ts.define(def)
	single.ts.define(def)
	var reservations []string
	paused := false
	for step := range 2 + rng.IntN(8) {
		switch pick := rng.IntN(10); {
		case pick == 0: // pause or resume, in both
			action := "pause"
			if paused {
				action = "resume"
			}
			paused = !paused
			for _, w := range []batchWorld{batched, single} {
				w.ts.admin(http.MethodPost, "/admin/campaigns/"+campaignID+"/skus/"+skuID+"/"+action, nil)
			}
		case pick < 3 && len(reservations) > 0: // cancel a reservation, in both
			id := reservations[rng.IntN(len(reservations))]
			a := batched.ts.post("/v1/reservations/"+id+"/cancel", nil)
			b := single.ts.post("/v1/reservations/"+id+"/cancel", nil)
			if a.status != b.status || !bytes.Equal(a.raw, b.raw) {
				t.Fatalf("%s step %d: cancel %s: %v, alone %v", campaignID, step, id, a, b)
			}
		default:
			items := make([]string, 1+rng.IntN(8))
			for i := range items {
				items[i] = batchItem(rng)
			}
			reservations = append(reservations, compareBatch(t, campaignID, skuID, step, items, batched, single, seen)...)
		}
	}
}

// batchItem draws one raw item: mostly a reserve from small pools of
// request_ids and users (so they collide), now and then a malformed one.
func batchItem(rng *rand.Rand) string {
	switch rng.IntN(20) {
	case 0:
		return `{"request_id":"bad id!","user_id":"u1"}`
	case 1:
		return `{"request_id":"r1","user_id":"u1","extra":1}`
	case 2:
		return `7`
	}
	return fmt.Sprintf(`{"request_id":"r%d","user_id":"u%d"}`, rng.IntN(12), rng.IntN(6))
}

// compareBatch sends items one by one to single and as batches to
// batched, cut after an item that takes the last unit, and fails unless
// every answer is the same. It returns the reservation ids made.
func compareBatch(t *testing.T, campaignID, skuID string, step int, items []string, batched, single batchWorld, seen map[string]int) []string {
	t.Helper()
	path := "/v1/campaigns/" + campaignID + "/skus/" + skuID + "/reservations"
	alone := make([]response, len(items))
	var cuts []int // the batches end before these items
	for i, item := range items {
		before, _ := single.ts.engine.SKUStats(campaignID, skuID)
		alone[i] = single.ts.post(path, item)
		after, _ := single.ts.engine.SKUStats(campaignID, skuID)
		if before.Counts.Available > 0 && after.Counts.Available == 0 && i+1 < len(items) {
			cuts = append(cuts, i+1)
		}
	}
	cuts = append(cuts, len(items))
	var made []string
	first := 0
	for _, end := range cuts {
		r, results := batched.ts.postBatch(campaignID, skuID, items[first:end])
		if r.status != http.StatusOK || len(results) != end-first {
			t.Fatalf("%s step %d: batch %v: %v", campaignID, step, items[first:end], r)
		}
		for j, res := range results {
			a := alone[first+j]
			if res.Status != a.status || !bytes.Equal(res.Body, bytes.TrimSpace(a.raw)) {
				t.Fatalf("%s step %d item %d %s: batch %d %s, alone %v", campaignID, step, first+j, items[first+j], res.Status, res.Body, a)
			}
			if res.Status == http.StatusAccepted {
				made = append(made, a.str("reservation_id"))
			}
			seen[strings.TrimSpace(fmt.Sprintf("%d %s", a.status, a.str("error")))]++
		}
		first = end
	}
	return made
}

// A bad envelope fails the whole request with 400 and decides nothing; an
// unknown SKU is 404; a batch body may be larger than a single reserve's.
func TestBatchEnvelope(t *testing.T) {
	ts := startServer(t, serverOptions{})
	ts.define(campaign("c", "15m", map[string]int{"s": 5}))
	path := "/v1/campaigns/c/skus/s/reservations:batch"
	tooMany := make([]string, httpapi.MaxBatchItems+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf(`{"request_id":"r%d","user_id":"u%d"}`, i, i)
	}
	for _, body := range []string{
		`null`, `[]`, `{}`, `{"items":[]}`, `{"items":{}}`, `{"items":[1],"items":[2]}`,
		`{"items":[{"request_id":"r1","user_id":"u1"}],"extra":1}`, `{"Items":[]}`,
		`{"items":[` + strings.Join(tooMany, ",") + `]}`,
	} {
		want(t, ts.post(path, body), http.StatusBadRequest, "BAD_REQUEST")
	}
	for _, body := range []string{``, `{"items":[`, `{"items":[]} {}`} {
		want(t, ts.post(path, body), http.StatusBadRequest, "INVALID_JSON")
	}
	if st, _ := ts.engine.SKUStats("c", "s"); st.Counts.Available != 5 || st.Counts.Rejected != 0 {
		t.Fatalf("refused batches decided something: %+v", st.Counts)
	}
	want(t, ts.post("/v1/campaigns/c/skus/nope/reservations:batch", `{"items":[{"request_id":"r1","user_id":"u1"}]}`),
		http.StatusNotFound, "NOT_FOUND")
	// 1,000 items of long ids: far beyond a single reserve's body limit.
	items := make([]string, httpapi.MaxBatchItems)
	long := strings.Repeat("x", 60)
	for i := range items {
		items[i] = fmt.Sprintf(`{"request_id":"%s%04d","user_id":"%s%04d"}`, long, i, long, i)
	}
	r, results := ts.postBatch("c", "s", items)
	if r.status != http.StatusOK || len(results) != len(items) {
		t.Fatalf("a full batch: %v", r)
	}
	accepted := 0
	for _, res := range results {
		if res.Status == http.StatusAccepted {
			accepted++
		}
	}
	if accepted != 5 {
		t.Fatalf("%d of %d accepted, the sale_limit is 5", accepted, len(items))
	}
}

// A batch takes one permit per item for the engine, as many as are free:
// with room for two, two items reach the engine and the rest are answered
// 429 QUEUE_FULL, as single reserves beyond the permits would be.
func TestBatchTakesOnePermitPerItem(t *testing.T) {
	faults := &faultEngine{}
	faults.setLoad("c", "s", skuLoad{}) // no rate above the floor, no slow commit
	ts := startServer(t, serverOptions{faults: faults, config: func(c *httpapi.Config) {
		c.MinConsumerRate, c.MaxQueueWait = 2, 1e9 // the bound: min(available + margin, 2/s × 1 s) = 2
	}})
	ts.define(campaign("c", "15m", map[string]int{"s": 100}))
	items := make([]string, 5)
	for i := range items {
		items[i] = fmt.Sprintf(`{"request_id":"r%d","user_id":"u%d"}`, i, i)
	}
	_, results := ts.postBatch("c", "s", items)
	var got []int
	for _, res := range results {
		got = append(got, res.Status)
	}
	if fmt.Sprint(got) != "[202 202 429 429 429]" {
		t.Fatalf("statuses %v, want two admitted and three QUEUE_FULL", got)
	}
	// The permits are back: the next batch gets two again.
	_, results = ts.postBatch("c", "s", items[2:])
	if results[0].Status != http.StatusAccepted || results[1].Status != http.StatusAccepted || results[2].Status != http.StatusTooManyRequests {
		t.Fatalf("after the batch: %+v", results)
	}
}

// A batch body may be 512 KiB, as docs/api.md says: one of exactly
// 524,288 bytes (a full batch padded with JSON whitespace) is served, one
// byte more is 413 BODY_TOO_LARGE naming the limit.
func TestBatchBodyLimitIs512KiB(t *testing.T) {
	ts := startServer(t, serverOptions{})
	ts.define(campaign("c", "15m", map[string]int{"s": 5}))
	path := "/v1/campaigns/c/skus/s/reservations:batch"
	items := make([]string, httpapi.MaxBatchItems)
	for i := range items {
		items[i] = fmt.Sprintf(`{"request_id":"r%d","user_id":"u%d"}`, i, i)
	}
	batch := `{"items":[` + strings.Join(items, ",") + `]}`
	const limit = 512 << 10
	full := batch + strings.Repeat(" ", limit-len(batch))
	r := ts.post(path, full)
	if r.status != http.StatusOK {
		t.Fatalf("a batch body of %d bytes (512 KiB): %d %s", len(full), r.status, r.raw)
	}
	want(t, ts.post(path, full+" "), http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE")
	if d := ts.post(path, full+" ").str("detail"); d != "request body larger than 524288 bytes" {
		t.Fatalf("detail %q", d)
	}
}
