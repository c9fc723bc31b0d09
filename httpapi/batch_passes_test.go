package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/seckill/seckill/entrypass"
	"github.com/seckill/seckill/httpapi"
)

// itemJSON encodes one batch item.
func itemJSON(t testing.TB, fields map[string]string) string {
	t.Helper()
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A batch item carrying an entry pass goes through the single reserve's
// pass check: a valid pass is accepted with the pass's request_id (the
// body may leave it out), an invalid one refuses that item alone with 403
// ENTRY_PASS_INVALID, and the holder reaches the engine (a second user on
// the same device gets SUBJECT_LIMIT). Each refusal is byte for byte what
// a single reserve answers; a repeat of the pass gets the same 202.
func TestBatchEntryPass(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{config: passConfig(t)})
	c := campaign("bp", "15m", map[string]int{"s": 10})
	c["max_unpaid_per_subject"] = 1
	ts.define(c)
	now := time.Now()
	phone := map[entrypass.SubjectKind]string{entrypass.SubjectDevice: "shared-phone"}
	alice, alicePass := mintPass(t, "bp", "s", "alice", now, phone)
	bobs, _ := mintPass(t, "bp", "s", "bob", now, nil)
	dan, _ := mintPass(t, "bp", "s", "dan", now, phone)
	r, results := ts.postBatch("bp", "s", []string{
		itemJSON(t, map[string]string{"user_id": "alice", "entry_pass": alice}),
		itemJSON(t, map[string]string{"request_id": "r-carol", "user_id": "carol", "entry_pass": bobs}), // bob's pass
		itemJSON(t, map[string]string{"request_id": "r-erin", "user_id": "erin"}),
		itemJSON(t, map[string]string{"user_id": "dan", "entry_pass": dan}), // alice's device
	})
	want(t, r, http.StatusOK, "")
	if len(results) != 4 {
		t.Fatalf("%d results: %s", len(results), r.raw)
	}
	var accepted struct {
		RequestID string `json:"request_id"`
	}
	if results[0].Status != http.StatusAccepted || json.Unmarshal(results[0].Body, &accepted) != nil || accepted.RequestID != alicePass.RequestID() {
		t.Fatalf("valid pass: %d %s, want 202 with request_id %s", results[0].Status, results[0].Body, alicePass.RequestID())
	}
	if results[2].Status != http.StatusAccepted {
		t.Fatalf("item without a pass: %d %s", results[2].Status, results[2].Body)
	}
	single := ts.reserveWithPass("bp", "s", "r-carol", "carol", bobs)
	want(t, single, http.StatusForbidden, "ENTRY_PASS_INVALID")
	if results[1].Status != single.status || !bytes.Equal(results[1].Body, single.raw) {
		t.Fatalf("invalid pass: %d %s, a single reserve %d %s", results[1].Status, results[1].Body, single.status, single.raw)
	}
	single = ts.reserveWithPass("bp", "s", "", "dan", dan)
	want(t, single, http.StatusConflict, "SUBJECT_LIMIT")
	if results[3].Status != single.status || !bytes.Equal(results[3].Body, single.raw) {
		t.Fatalf("same device: %d %s, a single reserve %d %s", results[3].Status, results[3].Body, single.status, single.raw)
	}
	again := ts.reserveWithPass("bp", "s", alicePass.RequestID(), "alice", alice)
	if again.status != http.StatusAccepted || !bytes.Equal(again.raw, results[0].Body) {
		t.Fatalf("the pass again: %v, the batch's %s", again, results[0].Body)
	}
	if n := num(ts.audit("bp", "s"), "reservations"); n != 2 {
		t.Fatalf("%d reservations, want alice's and erin's", n)
	}
	if got := ts.metric(`seckill_entry_pass_rejections_total{reason="wrong_user"}`); got != "2" {
		t.Fatalf("wrong_user rejections %q, want 2 (the batch item and the single reserve)", got)
	}
}

// A batch on a lottery SKU refuses each good item 409 LOTTERY_SALE and a
// bad one 400, as single reserves are answered, and decides nothing.
func TestBatchLotterySale(t *testing.T) {
	t.Parallel()
	clock := newStepClock()
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) { c.Clock = clock.now }})
	body, _ := lotteryCampaign(clock.now(), 5, 3)
	ts.define(body)
	items := []map[string]string{
		{"request_id": "r1", "user_id": "u1"},
		{"request_id": "bad id", "user_id": "u2"},
		{"request_id": "r3", "user_id": "u3"},
	}
	raw := make([]string, len(items))
	for i, it := range items {
		raw[i] = itemJSON(t, it)
	}
	r, results := ts.postBatch("lc", "ls", raw)
	want(t, r, http.StatusOK, "")
	if len(results) != len(items) {
		t.Fatalf("%d results: %s", len(results), r.raw)
	}
	for i, it := range items {
		single := ts.post("/v1/campaigns/lc/skus/ls/reservations", it)
		if results[i].Status != single.status || !bytes.Equal(results[i].Body, single.raw) {
			t.Fatalf("item %d: %d %s, a single reserve %d %s", i, results[i].Status, results[i].Body, single.status, single.raw)
		}
	}
	if results[0].Status != http.StatusConflict || results[1].Status != http.StatusBadRequest {
		t.Fatalf("results %+v, want 409 LOTTERY_SALE then 400", results)
	}
	want(t, ts.get("/v1/campaigns/lc/skus/ls/requests/r1"), http.StatusNotFound, "")
}

// A batch's items count in the dashboard as single reserves do: the
// engine's outcomes (batch items decided by the actor) and the ingress's
// answers (every item, a bad one too); the real engine, a SKU of 2.
func TestBatchItemsInAdminStats(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{config: manualStats})
	ts.define(campaign("bst", "15m", map[string]int{"s": 2}))
	t0 := time.Unix(2_000_000, 0)
	ts.srv.SampleStats(t0)
	r, results := ts.postBatch("bst", "s", []string{
		`{"request_id":"r0","user_id":"u0"}`,
		`{"request_id":"r1","user_id":"u0"}`,
		`{"request_id":"r2","user_id":"u1"}`,
		`{"request_id":"r3","user_id":"u2"}`,
		`{"request_id":"bad id","user_id":"u3"}`,
	})
	want(t, r, http.StatusOK, "")
	statuses := []int{}
	for _, res := range results {
		statuses = append(statuses, res.Status)
	}
	if fmt.Sprint(statuses) != "[202 409 202 409 400]" {
		t.Fatalf("statuses %v: %s", statuses, r.raw)
	}
	ts.srv.SampleStats(t0.Add(time.Second))
	o := ts.stats("").row(t, "bst", "s").OutcomesJSON
	if o["accepted"] != 2 || o["already_purchased"] != 1 || o["sold_out_actor"] != 1 || o["all"] != 5 {
		t.Errorf("outcomes %v, want 2 accepted, 1 already_purchased, 1 sold_out_actor, 5 in all", o)
	}
}
