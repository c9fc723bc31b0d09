package httpapi_test

import (
	"crypto/rand"
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
	"github.com/seckill/seckill/lottery"
)

// lotteryCampaign is a campaign with one lottery SKU whose entries are
// open from a second ago for a minute, and the beacon round published
// next after the close.
func lotteryCampaign(now time.Time, saleLimit, waitlist int) (map[string]any, uint64) {
	closeAt := now.Add(time.Minute)
	round := uint64((closeAt.Unix()-lottery.QuicknetGenesis)/lottery.QuicknetPeriod + 3)
	return map[string]any{
		"campaign_id":    "lc",
		"start_at":       now.Add(-time.Second).UTC().Format(time.RFC3339Nano),
		"end_at":         now.Add(24 * time.Hour).UTC().Format(time.RFC3339Nano),
		"payment_window": "10m",
		"skus": []map[string]any{{
			"sku_id": "ls", "sale_limit": saleLimit, "allocation": "lottery",
			"entries_open_at":  now.Add(-time.Second).UTC().Format(time.RFC3339Nano),
			"entries_close_at": closeAt.UTC().Format(time.RFC3339Nano),
			"beacon":           map[string]any{"source": "drand-quicknet", "round": round},
			"waitlist":         waitlist,
			"tiers":            []map[string]any{{"tier": 0, "quota": "rest"}},
		}},
	}, round
}

var _ httpapi.Lotteries = (*actors.Engine)(nil)

// TestLotteryOverHTTP runs a lottery through the API, on the real engine
// (the ranking off the actor).
func TestLotteryOverHTTP(t *testing.T) {
	t.Run("engine", func(t *testing.T) {
		clock := newStepClock()
		testLotteryOverHTTP(t, clock, startServer(t, serverOptions{
			engine: func(c *actors.Config) { c.Clock = clock.now },
			config: func(c *httpapi.Config) { c.Clock = clock.now },
		}))
	})
}

// A draw asked at or after end_at, the lottery undrawn, is 403 ENDED: the
// status a reserve at or after end_at gets (one status a reason).
func TestLotteryDrawAfterEndIsEnded(t *testing.T) {
	t.Parallel()
	clock := newStepClock()
	ts := startServer(t, serverOptions{
		engine: func(c *actors.Config) { c.Clock = clock.now },
		config: func(c *httpapi.Config) { c.Clock = clock.now },
	})
	body, round := lotteryCampaign(clock.now(), 5, 3)
	ts.define(body)
	want(t, ts.post("/v1/campaigns/lc/skus/ls/entries", map[string]string{"request_id": "r1", "user_id": "u1"}), http.StatusAccepted, "")
	clock.step(25 * time.Hour)
	rnd := sha256.Sum256([]byte("beacon"))
	r := ts.admin(http.MethodPost, "/admin/campaigns/lc/skus/ls/lottery/draw",
		map[string]any{"beacon": map[string]any{"round": round, "randomness": hex.EncodeToString(rnd[:])}})
	want(t, r, http.StatusForbidden, "ENDED")
	if !strings.Contains(r.str("detail"), "ended undrawn") {
		t.Fatalf("the draw's ENDED does not say the lottery ended undrawn: %v", r)
	}
}

func testLotteryOverHTTP(t *testing.T, clock *stepClock, ts *testServer) {
	badRound, _ := lotteryCampaign(clock.now(), 5, 3)
	badRound["skus"].([]map[string]any)[0]["beacon"] = map[string]any{"source": "drand-quicknet", "round": -5}
	if r := ts.admin(http.MethodPut, "/admin/campaigns/lc", badRound); r.status != http.StatusBadRequest ||
		r.str("detail") != fmt.Sprintf(`skus[0].beacon.round (sku_id "ls"): must be an integer from 1 to %d`, uint64(lottery.MaxRound)) {
		t.Fatalf("a campaign with beacon round -5: %v", r)
	}
	// A round not published before end_at: 400, and nothing defined (a
	// plain SKU beside it neither).
	late, _ := lotteryCampaign(clock.now(), 5, 3)
	late["end_at"] = clock.now().Add(62 * time.Second).UTC().Format(time.RFC3339Nano)
	late["skus"] = append(late["skus"].([]map[string]any), map[string]any{"sku_id": "beside", "sale_limit": 5})
	if r := ts.admin(http.MethodPut, "/admin/campaigns/lc", late); r.status != http.StatusBadRequest || !strings.Contains(r.str("detail"), "not before end_at") {
		t.Fatalf("a campaign whose round comes after end_at: %v", r)
	}
	want(t, ts.admin(http.MethodGet, "/admin/campaigns/lc", nil), http.StatusNotFound, "NOT_FOUND")
	body, round := lotteryCampaign(clock.now(), 5, 3)
	ts.define(body)
	// Refusals the SKU would make are checked before anything is defined:
	// a lottery first defined after entries_close_at, a lottery SKU sent
	// without its lottery; the plain SKU beside them is not defined.
	closed, _ := lotteryCampaign(clock.now().Add(-2*time.Minute), 5, 3)
	closed["campaign_id"] = "lc-late"
	closed["skus"] = append(closed["skus"].([]map[string]any), map[string]any{"sku_id": "beside", "sale_limit": 5})
	want(t, ts.admin(http.MethodPut, "/admin/campaigns/lc-late", closed), http.StatusConflict, "DEFINITION_CONFLICT")
	want(t, ts.admin(http.MethodGet, "/admin/campaigns/lc-late", nil), http.StatusNotFound, "NOT_FOUND")
	dropped, _ := lotteryCampaign(clock.now(), 5, 3)
	dropped["start_at"], dropped["end_at"] = body["start_at"], body["end_at"]
	dropped["skus"] = []map[string]any{{"sku_id": "q", "sale_limit": 2}, {"sku_id": "ls", "sale_limit": 5}}
	want(t, ts.admin(http.MethodPut, "/admin/campaigns/lc", dropped), http.StatusConflict, "DEFINITION_CONFLICT")
	if r := ts.admin(http.MethodGet, "/admin/campaigns/lc", nil); strings.Contains(string(r.raw), `"q"`) ||
		!strings.Contains(string(r.raw), `"allocation":"lottery"`) {
		t.Fatalf("a refused PUT defined q, or the lottery is not shown: %v", r)
	}
	const entries = "/v1/campaigns/lc/skus/ls/entries"
	want(t, ts.reserve("lc", "ls", "r0", "u0"), http.StatusConflict, "LOTTERY_SALE")
	for i := 1; i <= 30; i++ {
		r := ts.post(entries, map[string]string{"request_id": fmt.Sprintf("r%d", i), "user_id": fmt.Sprintf("u%d", i)})
		if r.status != http.StatusAccepted || r.str("outcome") != "ENTERED" || num(r, "entry_seq") != i || r.header.Get("Location") != r.str("status_url") {
			t.Fatalf("entry %d: %v", i, r)
		}
	}
	if r := ts.post(entries, map[string]string{"request_id": "again", "user_id": "u7"}); r.status != http.StatusAccepted || num(r, "entry_seq") != 7 {
		t.Fatalf("a second entry of u7: %v", r)
	}
	want(t, ts.post(entries, map[string]string{"request_id": "r7", "user_id": "u8"}), http.StatusUnprocessableEntity, "REQUEST_ID_REUSED")
	want(t, ts.post(entries, map[string]string{"request_id": "r7"}), http.StatusBadRequest, "BAD_REQUEST")
	if r := ts.get(entries + "/r3"); r.status != http.StatusOK || r.str("status") != "ENTERED" {
		t.Fatalf("entry status: %v", r)
	}
	want(t, ts.get(entries+"/nope"), http.StatusNotFound, "NOT_FOUND")
	info := ts.get("/v1/campaigns/lc/skus/ls/lottery")
	if info.status != http.StatusOK || info.str("phase") != "OPEN" || len(info.str("commit")) != 64 || info.str("server_seed") != "" {
		t.Fatalf("lottery info while open: %v", info)
	}
	rnd := sha256.Sum256([]byte("beacon"))
	draw := func(r uint64, randomness string) response {
		return ts.admin(http.MethodPost, "/admin/campaigns/lc/skus/ls/lottery/draw",
			map[string]any{"beacon": map[string]any{"round": r, "randomness": randomness}})
	}
	want(t, draw(round, hex.EncodeToString(rnd[:])), http.StatusConflict, "ENTRIES_OPEN")
	want(t, draw(round, hex.EncodeToString(rnd[:31])), http.StatusBadRequest, "BAD_BEACON")
	clock.step(61 * time.Second)
	want(t, ts.post(entries, map[string]string{"request_id": "late", "user_id": "late"}), http.StatusForbidden, "ENTRIES_CLOSED")
	notDue := draw(round, hex.EncodeToString(rnd[:]))
	want(t, notDue, http.StatusConflict, "BEACON_NOT_DUE")
	due, _ := lottery.RoundTimeMs("drand-quicknet", round)
	if d := notDue.str("detail"); !strings.Contains(d, fmt.Sprintf("beacon round %d of drand-quicknet is published at %s", round,
		time.UnixMilli(due).UTC().Format("2006-01-02T15:04:05.000Z07:00"))) {
		t.Fatalf("BEACON_NOT_DUE does not say when the round is due: %v", notDue)
	}
	for _, bad := range []any{-5, 1.5, "1"} {
		r := ts.admin(http.MethodPost, "/admin/campaigns/lc/skus/ls/lottery/draw",
			map[string]any{"beacon": map[string]any{"round": bad, "randomness": hex.EncodeToString(rnd[:])}})
		want(t, r, http.StatusBadRequest, "BAD_REQUEST")
		if bad == -5 && r.str("detail") != fmt.Sprintf("beacon.round: must be an integer from 1 to %d", uint64(lottery.MaxRound)) {
			t.Fatalf("round -5: %v", r)
		}
	}
	want(t, draw(round+1, hex.EncodeToString(rnd[:])), http.StatusBadRequest, "WRONG_ROUND")
	clock.step(15 * time.Second)
	if r := draw(round, hex.EncodeToString(rnd[:])); r.status != http.StatusAccepted || r.str("outcome") != "DRAW_STARTED" {
		t.Fatalf("draw: %v", r)
	}
	want(t, draw(round, hex.EncodeToString(rnd[:])), http.StatusConflict, "ALREADY_DRAWN")
	eventually(t, 30*time.Second, "the draw is recorded", func() bool {
		info = ts.get("/v1/campaigns/lc/skus/ls/lottery")
		return info.str("phase") == "DRAWN"
	})
	// The evidence checks out against the exported pool.
	seed := mustHex(t, info.str("server_seed"))
	if c := lottery.Commit(seed); hex.EncodeToString(c[:]) != info.str("commit") {
		t.Fatal("the server seed does not match its commit")
	}
	csv := ts.admin(http.MethodGet, "/admin/campaigns/lc/skus/ls/lottery/entries.csv", nil)
	root := sha256.Sum256(csv.raw)
	if csv.status != http.StatusOK || hex.EncodeToString(root[:]) != info.str("entries_root") || csv.header.Get("X-Entries-Root") != info.str("entries_root") {
		t.Fatalf("entries.csv: %d, root %x, evidence %s", csv.status, root, info.str("entries_root"))
	}
	pool, err := lottery.ParsePool(csv.raw)
	if err != nil || len(pool) != 30 {
		t.Fatalf("pool: %d entries, %v", len(pool), err)
	}
	drawSeed := lottery.Seed("lc", "ls", seed, rnd[:], root)
	if hex.EncodeToString(drawSeed[:]) != info.str("seed") {
		t.Fatal("the seed does not follow from the evidence")
	}
	// The auditor's parser reads what the server publishes, and passes it.
	ev, err := lottery.ParseEvidence(info.raw)
	if err != nil {
		t.Fatal(err)
	}
	if rep := lottery.Verify(ev, csv.raw); !rep.OK {
		t.Fatalf("the auditor fails the evidence: %+v", rep.Checks)
	}
	res := lottery.Draw(drawSeed, pool, lottery.Rules{Units: 5, Waitlist: 3})
	if wr := lottery.ListRoot(res.Winners); hex.EncodeToString(wr[:]) != info.str("winners_root") {
		t.Fatal("the winners do not follow from the evidence")
	}
	for _, e := range res.Winners {
		r := ts.get(fmt.Sprintf("%s/r%d", entries, e))
		if r.str("status") != "WON" || r.str("reservation_id") == "" {
			t.Fatalf("winner %d: %v", e, r)
		}
		if g := ts.get("/v1/reservations/" + r.str("reservation_id")); g.str("state") != "PENDING_PAYMENT" {
			t.Fatalf("winner %d's reservation: %v", e, g)
		}
	}
	for i, e := range res.Waitlist {
		if r := ts.get(fmt.Sprintf("%s/r%d", entries, e)); r.str("status") != "WAITLISTED" || num(r, "position") != i+1 {
			t.Fatalf("waitlisted %d: %v", e, r)
		}
	}
	if r := ts.get(fmt.Sprintf("%s/r%d", entries, res.Lost[0])); r.str("status") != "LOST" {
		t.Fatalf("lost: %v", r)
	}
	ts.audit("lc", "ls")
}

func mustHex(t *testing.T, s string) lottery.Hash {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != lottery.Size {
		t.Fatalf("hex %q", s)
	}
	return lottery.Hash(b)
}

// TestLotteryEntryPass: on a lottery SKU whose campaign requires entry
// passes, the entries route checks them as reserve does (required, the
// "ep." prefix, another user's pass, a mismatched request_id), takes the
// pass's request_id when the body leaves it out, and enters at the pass's
// tier.
func TestLotteryEntryPass(t *testing.T) {
	t.Parallel()
	clock := newStepClock()
	ts := startServer(t, serverOptions{
		engine: func(c *actors.Config) { c.Clock = clock.now },
		config: func(c *httpapi.Config) { passConfig(t)(c); c.Clock = clock.now },
	})
	body, _ := lotteryCampaign(clock.now(), 5, 3)
	body["entry_pass"] = map[string]any{"required": true}
	ts.define(body)
	const entries = "/v1/campaigns/lc/skus/ls/entries"
	ring, err := entrypass.ParseKeyRing(testPassKeys)
	if err != nil {
		t.Fatal(err)
	}
	mint := func(user string, tier uint8) (string, entrypass.Pass) {
		c := entrypass.Claims{CampaignID: "lc", SKUID: "ls", UserID: user, Tier: tier,
			NotBeforeMs: clock.now().UnixMilli(), ExpiresAtMs: clock.now().Add(10 * time.Minute).UnixMilli()}
		text, pass, err := entrypass.Mint(ring.Signer(), c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return text, pass
	}
	want(t, ts.post(entries, map[string]string{"request_id": "r1", "user_id": "u1"}), http.StatusForbidden, "ENTRY_PASS_REQUIRED")
	text, pass := mint("u1", 2)
	want(t, ts.post(entries, map[string]string{"user_id": "u2", "entry_pass": text}), http.StatusForbidden, "ENTRY_PASS_INVALID")
	want(t, ts.post(entries, map[string]string{"request_id": "other", "user_id": "u1", "entry_pass": text}), http.StatusBadRequest, "ENTRY_PASS_MISMATCH")
	r := ts.post(entries, map[string]string{"user_id": "u1", "entry_pass": text})
	if r.status != http.StatusAccepted || r.str("outcome") != "ENTERED" || r.str("request_id") != pass.RequestID() || num(r, "tier") != 2 {
		t.Fatalf("entry with a pass: %v", r)
	}
	if again := ts.post(entries, map[string]string{"request_id": pass.RequestID(), "user_id": "u1", "entry_pass": text}); again.status != http.StatusAccepted || num(again, "entry_seq") != num(r, "entry_seq") {
		t.Fatalf("the same pass again: %v", again)
	}
	if st := ts.get(entries + "/" + pass.RequestID()); st.status != http.StatusOK || st.str("status") != "ENTERED" {
		t.Fatalf("entry status: %v", st)
	}
	text0, _ := mint("u3", 0)
	if r := ts.post(entries, map[string]string{"user_id": "u3", "entry_pass": text0}); r.status != http.StatusAccepted || num(r, "tier") != 0 {
		t.Fatalf("a tier-0 pass: %v", r)
	}
}

// TestLotteryEntrySubjectLimit: on a lottery SKU with
// max_unpaid_per_subject 1, a second entry whose pass carries the same
// device key is 409 SUBJECT_LIMIT and not recorded; at the draw, the
// winner whose pass had risk 1 gets payment_window_high_risk, the other
// payment_window.
func TestLotteryEntrySubjectLimit(t *testing.T) {
	t.Parallel()
	clock := newStepClock()
	ts := startServer(t, serverOptions{
		engine: func(c *actors.Config) { c.Clock = clock.now },
		config: func(c *httpapi.Config) { passConfig(t)(c); c.Clock = clock.now },
	})
	body, round := lotteryCampaign(clock.now(), 5, 0)
	body["max_unpaid_per_subject"] = 1
	body["payment_window_high_risk"] = "2m"
	ts.define(body)
	const entries = "/v1/campaigns/lc/skus/ls/entries"
	ring, err := entrypass.ParseKeyRing(testPassKeys)
	if err != nil {
		t.Fatal(err)
	}
	mint := func(user string, risk uint8, device byte) (string, string) {
		c := entrypass.Claims{CampaignID: "lc", SKUID: "ls", UserID: user, Risk: risk,
			NotBeforeMs: clock.now().UnixMilli(), ExpiresAtMs: clock.now().Add(10 * time.Minute).UnixMilli()}
		c.Subjects.Set(entrypass.SubjectDevice, entrypass.SubjectKey{device})
		text, pass, err := entrypass.Mint(ring.Signer(), c, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return text, pass.RequestID()
	}
	passes := map[string]string{} // user -> request_id
	for _, e := range []struct {
		user   string
		risk   uint8
		device byte
	}{{"u1", 1, 'a'}, {"u3", 0, 'b'}} {
		text, requestID := mint(e.user, e.risk, e.device)
		want(t, ts.post(entries, map[string]string{"user_id": e.user, "entry_pass": text}), http.StatusAccepted, "")
		passes[e.user] = requestID
	}
	text, requestID := mint("u2", 0, 'a')
	want(t, ts.post(entries, map[string]string{"user_id": "u2", "entry_pass": text}), http.StatusConflict, "SUBJECT_LIMIT")
	want(t, ts.get(entries+"/"+requestID), http.StatusNotFound, "NOT_FOUND")
	if info := ts.get("/v1/campaigns/lc/skus/ls/lottery"); num(info, "entry_count") != 2 {
		t.Fatalf("entry_count after a SUBJECT_LIMIT: %v", info)
	}
	clock.step(76 * time.Second)
	rnd := sha256.Sum256([]byte("beacon"))
	want(t, ts.admin(http.MethodPost, "/admin/campaigns/lc/skus/ls/lottery/draw",
		map[string]any{"beacon": map[string]any{"round": round, "randomness": hex.EncodeToString(rnd[:])}}), http.StatusAccepted, "")
	eventually(t, 30*time.Second, "the draw is recorded", func() bool {
		return ts.get("/v1/campaigns/lc/skus/ls/lottery").str("phase") == "DRAWN"
	})
	for user, window := range map[string]time.Duration{"u1": 2 * time.Minute, "u3": 10 * time.Minute} {
		r := ts.get(entries + "/" + passes[user])
		expireAt, err := time.Parse(time.RFC3339Nano, r.str("expire_at"))
		if r.str("status") != "WON" || err != nil {
			t.Fatalf("%s: %v (%v)", user, r, err)
		}
		if got := expireAt.Sub(clock.now()); got != window {
			t.Errorf("%s won a payment window of %s, want %s", user, got, window)
		}
	}
	ts.audit("lc", "ls")
}
