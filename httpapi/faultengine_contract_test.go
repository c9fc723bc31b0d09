package httpapi_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/entrypass"
	"github.com/seckill/seckill/httpapi"
)

// sevens is a random source that is not: two engines given it draw the
// same keys and lottery secrets (non-zero, as a lottery's must be).
type sevens struct{}

func (sevens) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 7
	}
	return len(p), nil
}

// faultEngine's contract: without hooks or load, a server on it answers
// every request byte for byte as a server on the bare engine does, at
// the same clock and reservation id key: purchases limited per campaign,
// batches, entry passes and a lottery drawn. The fault tests are only
// worth their faults while what they run between them is the engine.
func TestFaultEngineAnswersAsTheEngine(t *testing.T) {
	t.Parallel()
	clock := newStepClock()
	passes := passConfig(t)
	start := func(f *faultEngine) *testServer {
		return startServer(t, serverOptions{faults: f,
			engine: func(c *actors.Config) { c.Clock, c.Rand = clock.now, sevens{} },
			config: func(c *httpapi.Config) { passes(c); c.Clock = clock.now },
		})
	}
	servers := [2]*testServer{start(nil), start(&faultEngine{})}
	// same sends one request to both servers and compares the answers.
	same := func(method, path string, body any) response {
		t.Helper()
		var got [2]response
		for i, ts := range servers {
			if strings.HasPrefix(path, "/admin/") {
				got[i] = ts.admin(method, path, body)
			} else {
				got[i] = call(t, method, ts.base+path, body, nil)
			}
		}
		if got[0].status != got[1].status || !bytes.Equal(got[0].raw, got[1].raw) {
			t.Fatalf("%s %s: the engine %v, the fault engine %v", method, path, got[0], got[1])
		}
		return got[0]
	}
	reserve := func(campaignID, skuID string, body map[string]string) response {
		t.Helper()
		return same(http.MethodPost, "/v1/campaigns/"+campaignID+"/skus/"+skuID+"/reservations", body)
	}
	batch := func(campaignID, skuID string, items ...map[string]string) response {
		t.Helper()
		raw := make([]string, len(items))
		for i, it := range items {
			raw[i] = itemJSON(t, it)
		}
		r := same(http.MethodPost, "/v1/campaigns/"+campaignID+"/skus/"+skuID+"/reservations:batch", `{"items":[`+strings.Join(raw, ",")+`]}`)
		want(t, r, http.StatusOK, "")
		return r
	}

	// opened sets a campaign's window by the servers' clock, not the wall
	// clock campaign reads: the servers judge the window on clock, which
	// stands where it was made while a loaded machine's wall clock runs on.
	opened := func(c map[string]any) map[string]any {
		c["start_at"] = clock.now().Add(-time.Second).Format(time.RFC3339Nano)
		c["end_at"] = clock.now().Add(time.Hour).Format(time.RFC3339Nano)
		return c
	}

	// Purchases limited per campaign: one live purchase per user over
	// both SKUs, a batch's items too; buying again after a cancel.
	want(t, same(http.MethodPut, "/admin/campaigns/pl", opened(scopedCampaign("pl", 2, 10))), http.StatusCreated, "")
	first := reserve("pl", "s1", map[string]string{"request_id": "r1", "user_id": "u1"})
	want(t, first, http.StatusAccepted, "")
	want(t, reserve("pl", "s2", map[string]string{"request_id": "r2", "user_id": "u1"}), http.StatusConflict, "ALREADY_PURCHASED")
	batch("pl", "s2", map[string]string{"request_id": "r3", "user_id": "u2"},
		map[string]string{"request_id": "r4", "user_id": "u1"}, map[string]string{"request_id": "r5", "user_id": "u2"})
	want(t, same(http.MethodPost, "/v1/reservations/"+first.str("reservation_id")+"/cancel", nil), http.StatusOK, "")
	want(t, reserve("pl", "s2", map[string]string{"request_id": "r6", "user_id": "u1"}), http.StatusAccepted, "")
	same(http.MethodGet, "/v1/campaigns/pl/skus/s2/requests/r4", nil)
	same(http.MethodGet, "/v1/reservations/"+first.str("reservation_id"), nil)
	if a := same(http.MethodGet, "/admin/campaigns/pl/audit", nil); a.body["invariant_ok"] != true {
		t.Fatalf("campaign audit: %v", a)
	}

	// Entry passes: the holder a pass vouches for reaches the engine (a
	// second user on the same device gets SUBJECT_LIMIT), alone and in a
	// batch.
	c := campaign("ep", "15m", map[string]int{"s": 10})
	c["entry_pass"] = map[string]any{"required": true}
	c["max_unpaid_per_subject"] = 1
	want(t, same(http.MethodPut, "/admin/campaigns/ep", opened(c)), http.StatusCreated, "")
	phone := map[entrypass.SubjectKind]string{entrypass.SubjectDevice: "shared-phone"}
	alice, _ := mintPass(t, "ep", "s", "alice", clock.now(), phone)
	dan, _ := mintPass(t, "ep", "s", "dan", clock.now(), phone)
	erin, _ := mintPass(t, "ep", "s", "erin", clock.now(), nil)
	want(t, reserve("ep", "s", map[string]string{"user_id": "alice", "entry_pass": alice}), http.StatusAccepted, "")
	want(t, reserve("ep", "s", map[string]string{"user_id": "dan", "entry_pass": dan}), http.StatusConflict, "SUBJECT_LIMIT")
	batch("ep", "s", map[string]string{"user_id": "dan", "entry_pass": dan}, map[string]string{"user_id": "erin", "entry_pass": erin})
	same(http.MethodGet, "/admin/campaigns/ep/skus/s/audit", nil)

	// A lottery: entries, a batch refused, the draw recorded off the
	// actor, the results and the exported pool.
	body, round := lotteryCampaign(clock.now(), 3, 2)
	want(t, same(http.MethodPut, "/admin/campaigns/lc", body), http.StatusCreated, "")
	for i := 1; i <= 8; i++ {
		want(t, same(http.MethodPost, "/v1/campaigns/lc/skus/ls/entries",
			map[string]string{"request_id": fmt.Sprintf("e%d", i), "user_id": fmt.Sprintf("u%d", i)}), http.StatusAccepted, "")
	}
	batch("lc", "ls", map[string]string{"request_id": "b1", "user_id": "u1"})
	clock.step(76 * time.Second) // entries closed, the beacon round due
	rnd := sha256.Sum256([]byte("beacon"))
	want(t, same(http.MethodPost, "/admin/campaigns/lc/skus/ls/lottery/draw",
		map[string]any{"beacon": map[string]any{"round": round, "randomness": hex.EncodeToString(rnd[:])}}), http.StatusAccepted, "")
	for _, ts := range servers {
		eventually(t, 30*time.Second, "the draw is recorded", func() bool {
			return ts.get("/v1/campaigns/lc/skus/ls/lottery").str("phase") == "DRAWN"
		})
	}
	same(http.MethodGet, "/v1/campaigns/lc/skus/ls/lottery", nil)
	for i := 1; i <= 8; i++ {
		same(http.MethodGet, fmt.Sprintf("/v1/campaigns/lc/skus/ls/entries/e%d", i), nil)
	}
	same(http.MethodGet, "/admin/campaigns/lc/skus/ls/lottery/entries.csv", nil)
}
