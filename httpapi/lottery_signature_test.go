package httpapi_test

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/lottery"
	"github.com/seckill/seckill/lottery/lotterytest"
)

// TestLotteryDrawSignedOverHTTP: a draw given the signature of a published
// quicknet round (lottery/testdata/beacons.json) without its randomness
// takes SHA-256 of the signature as the randomness, records the signature
// and publishes it; the auditor re-checks it. A changed signature, or
// randomness that is not its SHA-256, answers 400 BAD_BEACON and records
// nothing.
func TestLotteryDrawSignedOverHTTP(t *testing.T) {
	q := lotterytest.Load(t).Quicknet
	sigHex := hex.EncodeToString(q.Signature)
	roundT, _ := lottery.RoundTimeMs(lottery.SourceDrandQuicknet, q.Round)
	clock := newStepClock()
	clock.ms.Store(roundT - 75_000)
	ts := startServer(t, serverOptions{
		engine: func(c *actors.Config) { c.Clock = clock.now },
		config: func(c *httpapi.Config) { c.Clock = clock.now },
	})
	body, _ := lotteryCampaign(clock.now(), 3, 2)
	body["skus"].([]map[string]any)[0]["beacon"] = map[string]any{"source": lottery.SourceDrandQuicknet, "round": q.Round}
	ts.define(body)
	for i := 1; i <= 12; i++ {
		want(t, ts.post("/v1/campaigns/lc/skus/ls/entries", map[string]string{"request_id": fmt.Sprintf("r%d", i), "user_id": fmt.Sprintf("u%d", i)}), http.StatusAccepted, "")
	}
	clock.step(75 * time.Second) // the round's time
	draw := func(beacon map[string]any) response {
		beacon["round"] = q.Round
		return ts.admin(http.MethodPost, "/admin/campaigns/lc/skus/ls/lottery/draw", map[string]any{"beacon": beacon})
	}
	flipped := []byte(sigHex)
	flipped[10] = "01"[map[bool]int{true: 1, false: 0}[flipped[10] == '0']]
	want(t, draw(map[string]any{"signature": string(flipped)}), http.StatusBadRequest, "BAD_BEACON")
	other := lottery.RandomnessOf([]byte("another"))
	want(t, draw(map[string]any{"signature": sigHex, "randomness": hex.EncodeToString(other[:])}), http.StatusBadRequest, "BAD_BEACON")
	want(t, draw(map[string]any{"signature": "zz"}), http.StatusBadRequest, "BAD_BEACON")
	if info := ts.get("/v1/campaigns/lc/skus/ls/lottery"); info.str("phase") != "CLOSED" {
		t.Fatalf("a refused draw recorded something: %v", info)
	}
	if r := draw(map[string]any{"signature": sigHex}); r.status != http.StatusAccepted {
		t.Fatalf("a signed draw: %v", r)
	}
	var info response
	eventually(t, 30*time.Second, "the draw is recorded", func() bool {
		info = ts.get("/v1/campaigns/lc/skus/ls/lottery")
		return info.str("phase") == "DRAWN"
	})
	rnd := lottery.RandomnessOf(q.Signature)
	if info.str("signature") != sigHex || info.str("randomness") != hex.EncodeToString(rnd[:]) {
		t.Fatalf("evidence: signature %q, randomness %q", info.str("signature"), info.str("randomness"))
	}
	ev, err := lottery.ParseEvidence(info.raw)
	if err != nil {
		t.Fatal(err)
	}
	csv := ts.admin(http.MethodGet, "/admin/campaigns/lc/skus/ls/lottery/entries.csv", nil)
	rep := lottery.Verify(ev, csv.raw)
	for _, c := range rep.Checks {
		if c.Name == "beacon_signature" && (!c.OK || !strings.Contains(c.Detail, "verifies")) {
			t.Fatalf("beacon_signature: %+v", c)
		}
	}
	if !rep.OK {
		t.Fatalf("the auditor fails the evidence: %+v", rep.Checks)
	}
}
