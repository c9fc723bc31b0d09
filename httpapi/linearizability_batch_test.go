package httpapi_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// Batch reserves in the linearizability run: now and then a client sends
// 2 to linBatchMaxItems reserves as one POST .../reservations:batch. Each
// item is recorded as a reserve of its own, called when the batch was sent
// and returned when its answer came, so the checker places each one at
// some point within the batch's interval: the batch's answers must be
// those of single reserves made while it was in flight. (Their order
// within the batch is not checked here: TestBatchAnswersAsSingleReserves
// checks it against single reserves in sequence.)
//
// Items with a batch's whole interval widen the checker's search: with one
// operation in 16 a batch of 2 or 3 items, its time grew from at most
// 0.23 s to at most 0.85 s in 150 runs (0.93 s in 30 with -race), well
// within linCheckTimeout; one in 8 with up to 4 items ran out of it.
const (
	// linBatchOneIn: one operation in linBatchOneIn is a batch.
	linBatchOneIn    = 16
	linBatchMaxItems = 3
)

// chooseBatch picks the items of a batch: retried and reused request_ids,
// reserves with an entry pass (choosePass: new, retried or another user's)
// and new ones, from the same pools as single reserves.
func (r *linRecorder) chooseBatch(client, n int, rng *rand.Rand) []linInput {
	r.mu.Lock()
	defer r.mu.Unlock()
	items := make([]linInput, 2+rng.IntN(linBatchMaxItems-1))
	for i := range items {
		user := fmt.Sprintf("u%d", rng.IntN(linUsers))
		switch pick := rng.IntN(100); {
		case pick < 20 && len(r.requests) > 0: // a retry
			q := r.requests[rng.IntN(len(r.requests))]
			items[i] = linInput{kind: linReserve, requestID: q.requestID, userID: q.userID}
		case pick < 35 && len(r.requests) > 0: // a request_id sent again by any user
			items[i] = linInput{kind: linReserve, requestID: r.requests[rng.IntN(len(r.requests))].requestID, userID: user}
		case pick < 55: // with an entry pass, as a single reserve's
			items[i] = r.choosePass(rng)
		default:
			q := linRequest{requestID: fmt.Sprintf("r%d-%d-b%d", client, n, i), userID: user}
			r.requests = append(r.requests, q)
			items[i] = linInput{kind: linReserve, requestID: q.requestID, userID: q.userID}
		}
	}
	return items
}

// doBatch sends items as one batch reserve and records each item's answer
// as a reserve with the batch's call and return times.
func (r *linRecorder) doBatch(client int, items []linInput) {
	body := map[string]any{}
	list := make([]map[string]string, len(items))
	for i, in := range items {
		list[i] = map[string]string{"request_id": in.requestID, "user_id": in.userID}
		if in.pass != "" {
			list[i]["entry_pass"] = in.pass
		}
	}
	body["items"] = list
	path := "/v1/campaigns/" + linCampaign + "/skus/" + linSKU + "/reservations:batch"
	call := time.Since(r.start).Nanoseconds()
	resp, err := try(http.MethodPost, r.base+path, body, nil)
	ret := time.Since(r.start).Nanoseconds()
	var answer struct {
		Results []batchResult `json:"results"`
	}
	if err == nil && resp.status == http.StatusOK {
		err = json.Unmarshal(resp.raw, &answer)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err != nil:
		r.errs = append(r.errs, err)
		return
	case resp.status != http.StatusOK || len(answer.Results) != len(items):
		r.errs = append(r.errs, fmt.Errorf("POST %s: %v, want 200 with %d results", path, resp, len(items)))
		return
	}
	for i, res := range answer.Results {
		if res.Status == http.StatusGatewayTimeout {
			r.errs = append(r.errs, fmt.Errorf("batch item %+v: %s (a stall: the specification has no unknown results)", items[i], res.Body))
			continue
		}
		location := ""
		if res.Status == http.StatusAccepted { // the Location a single reserve sends: its status_url
			var b struct {
				StatusURL string `json:"status_url"`
			}
			_ = json.Unmarshal(res.Body, &b)
			location = b.StatusURL
		}
		r.record(client, items[i], call, ret, res.Status, location, res.Body)
		r.batchItems++
	}
}
