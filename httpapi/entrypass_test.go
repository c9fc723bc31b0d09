package httpapi_test

import (
	"bytes"
	"crypto/rand"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/entrypass"
	"github.com/seckill/seckill/httpapi"
)

// Test secrets of the entry passes: the signing keys (2 signs, 1 still
// verifies), the subject secret and the issuer token.
var (
	testPassKeys      = "2:" + strings.Repeat("2b", 32) + ",1:" + strings.Repeat("1a", 32)
	testSubjectSecret = bytes.Repeat([]byte{0x5c}, 32)
)

const testIssuerToken = "test-issuer-token"

// passConfig sets the entry-pass configuration of a test server.
func passConfig(t testing.TB) func(*httpapi.Config) {
	ring, err := entrypass.ParseKeyRing(testPassKeys)
	if err != nil {
		t.Fatal(err)
	}
	subjects, err := entrypass.NewSubjectHasher(testSubjectSecret)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *httpapi.Config) {
		c.EntryPasses = httpapi.EntryPassConfig{Keys: ring, Subjects: subjects, IssuerToken: testIssuerToken}
	}
}

// mintPass signs a pass for user on campaign/sku with the test ring's
// signer, valid for ten minutes from now.
func mintPass(t testing.TB, campaignID, skuID, user string, now time.Time, subjects map[entrypass.SubjectKind]string) (string, entrypass.Pass) {
	t.Helper()
	ring, _ := entrypass.ParseKeyRing(testPassKeys)
	hasher, _ := entrypass.NewSubjectHasher(testSubjectSecret)
	c := entrypass.Claims{CampaignID: campaignID, SKUID: skuID, UserID: user,
		NotBeforeMs: now.UnixMilli(), ExpiresAtMs: now.Add(10 * time.Minute).UnixMilli()}
	for k, v := range subjects {
		c.Subjects.Set(k, hasher.Hash(k, v))
	}
	text, pass, err := entrypass.Mint(ring.Signer(), c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return text, pass
}

// reserveWithPass posts a reserve with an entry pass; requestID "" leaves
// it out of the body.
func (ts *testServer) reserveWithPass(campaignID, skuID, requestID, userID, pass string) response {
	ts.t.Helper()
	body := map[string]string{"user_id": userID, "entry_pass": pass}
	if requestID != "" {
		body["request_id"] = requestID
	}
	return ts.post("/v1/campaigns/"+campaignID+"/skus/"+skuID+"/reservations", body)
}

// issue asks the issuing route for a pass.
func (ts *testServer) issue(campaignID, skuID, token string, body any) response {
	ts.t.Helper()
	h := map[string]string{}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	return call(ts.t, http.MethodPost, ts.base+"/v1/campaigns/"+campaignID+"/skus/"+skuID+"/entry-passes", body, h)
}

// metric returns the value of one series of /metrics ("" if absent).
func (ts *testServer) metric(series string) string {
	ts.t.Helper()
	return metricAt(ts.t, ts.base, series)
}

// 64 goroutines sending one pass get one reservation and 64 identical
// answers; the request_id may be left out or given.
func TestEntryPassOneReservation(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{config: passConfig(t)})
	ts.define(campaign("ep1", "15m", map[string]int{"s": 100}))
	text, pass := mintPass(t, "ep1", "s", "alice", time.Now(), nil)
	out := make([]response, 64)
	errs := make([]error, 64)
	parallel(64, func(i int) {
		body := map[string]string{"user_id": "alice", "entry_pass": text}
		if i%2 == 0 {
			body["request_id"] = pass.RequestID()
		}
		out[i], errs[i] = try(http.MethodPost, ts.base+"/v1/campaigns/ep1/skus/s/reservations", body, nil)
	})
	for i, r := range out {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		want(t, r, http.StatusAccepted, "")
		if !bytes.Equal(r.raw, out[0].raw) {
			t.Fatalf("answer %d differs: %s, first %s", i, r.raw, out[0].raw)
		}
	}
	if got := out[0].str("request_id"); got != pass.RequestID() {
		t.Fatalf("request_id %q, want the pass's %q", got, pass.RequestID())
	}
	if n := num(ts.audit("ep1", "s"), "reservations"); n != 1 {
		t.Fatalf("%d reservations", n)
	}
}

// After a cancel the same pass gets the closed reservation, never a new
// one; after a restart on the same data dir, the same.
func TestEntryPassAfterCancelAndRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts := startServer(t, serverOptions{dir: dir, config: passConfig(t)})
	ts.define(campaign("ep2", "15m", map[string]int{"s": 10}))
	text, _ := mintPass(t, "ep2", "s", "bob", time.Now(), map[entrypass.SubjectKind]string{entrypass.SubjectDevice: "phone-1"})
	first := ts.reserveWithPass("ep2", "s", "", "bob", text)
	want(t, first, http.StatusAccepted, "")
	id := first.str("reservation_id")
	want(t, ts.post("/v1/reservations/"+id+"/cancel", nil), http.StatusOK, "")
	again := ts.reserveWithPass("ep2", "s", "", "bob", text)
	if !bytes.Equal(again.raw, first.raw) {
		t.Fatalf("after cancel: %v, first %v", again, first)
	}
	if st := ts.get("/v1/reservations/" + id).str("state"); st != "CLOSED" {
		t.Fatalf("state %s", st)
	}
	ts.stop()

	ts2 := startServer(t, serverOptions{dir: dir, config: passConfig(t)})
	after := ts2.reserveWithPass("ep2", "s", "", "bob", text)
	if !bytes.Equal(after.raw, first.raw) {
		t.Fatalf("after restart: %v, first %v", after, first)
	}
	if n := num(ts2.audit("ep2", "s"), "reservations"); n != 1 {
		t.Fatalf("%d reservations", n)
	}
}

// Alice's pass sent as Bob: 403 ENTRY_PASS_INVALID, nothing recorded, the
// reason only in the metric.
func TestEntryPassOfAnotherUser(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{config: passConfig(t)})
	ts.define(campaign("ep3", "15m", map[string]int{"s": 10, "t": 10}))
	text, pass := mintPass(t, "ep3", "s", "alice", time.Now(), nil)
	r := ts.reserveWithPass("ep3", "s", "", "bob", text)
	want(t, r, http.StatusForbidden, "ENTRY_PASS_INVALID")
	if r.str("detail") != "" {
		t.Fatalf("the answer says why: %v", r)
	}
	// Another SKU, a damaged pass, a wrong key: the same answer.
	want(t, ts.reserveWithPass("ep3", "t", "", "alice", text), http.StatusForbidden, "ENTRY_PASS_INVALID")
	damaged := []byte(text)
	damaged[50] ^= 1
	want(t, ts.reserveWithPass("ep3", "s", "", "alice", string(damaged)), http.StatusForbidden, "ENTRY_PASS_INVALID")
	if got := ts.get("/v1/campaigns/ep3/skus/s/requests/" + pass.RequestID()); got.status != http.StatusNotFound {
		t.Fatalf("lookup of the refused pass's request_id: %v", got)
	}
	if n := num(ts.audit("ep3", "s"), "reservations"); n != 0 {
		t.Fatalf("%d reservations", n)
	}
	for reason, n := range map[string]string{"wrong_user": "1", "wrong_scope": "1", "malformed": "", "bad_mac": ""} {
		got := ts.metric(`seckill_entry_pass_rejections_total{reason="` + reason + `"}`)
		if n != "" && got != n {
			t.Fatalf("%s: %q", reason, got)
		}
	}
	metrics := string(call(t, http.MethodGet, ts.base+"/metrics", nil, nil).raw)
	if strings.Contains(metrics, "alice") || strings.Contains(metrics, text[:20]) || strings.Contains(metrics, pass.RequestID()) {
		t.Fatal("/metrics carries a user or pass value")
	}
	// Alice herself still may.
	want(t, ts.reserveWithPass("ep3", "s", "", "alice", text), http.StatusAccepted, "")
}

// The answers of the check, in the issue's order.
func TestEntryPassAnswers(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{config: passConfig(t)})
	c := campaign("ep4", "15m", map[string]int{"s": 10})
	c["entry_pass"] = map[string]any{"required": true}
	ts.define(c)
	want(t, ts.reserve("ep4", "s", "r1", "u1"), http.StatusForbidden, "ENTRY_PASS_REQUIRED")

	ts.define(campaign("ep5", "15m", map[string]int{"s": 10}))
	text, pass := mintPass(t, "ep5", "s", "u1", time.Now(), nil)
	// Without a pass, a request_id of a pass is not the client's to spend.
	want(t, ts.reserve("ep5", "s", pass.RequestID(), "u1"), http.StatusBadRequest, "BAD_REQUEST")
	want(t, ts.reserveWithPass("ep5", "s", "other-id", "u1", text), http.StatusBadRequest, "ENTRY_PASS_MISMATCH")
	// Expired: signed with past times.
	ring, _ := entrypass.ParseKeyRing(testPassKeys)
	past := time.Now().Add(-time.Hour).UnixMilli()
	old, err := entrypass.Encode(ring.Signer(), entrypass.Claims{CampaignID: "ep5", SKUID: "s", UserID: "u1",
		NotBeforeMs: past, ExpiresAtMs: past + 60_000}, entrypass.Nonce{1})
	if err != nil {
		t.Fatal(err)
	}
	r := ts.reserveWithPass("ep5", "s", "", "u1", old)
	want(t, r, http.StatusForbidden, "ENTRY_PASS_EXPIRED")
	if r.str("expired_at") == "" {
		t.Fatalf("no expired_at: %v", r)
	}
	// A pass under the old key of the ring still verifies (rotation).
	oldKeyRing, _ := entrypass.ParseKeyRing("1:" + strings.Repeat("1a", 32))
	rotated, rp, err := entrypass.Mint(oldKeyRing.Signer(), entrypass.Claims{CampaignID: "ep5", SKUID: "s", UserID: "u2",
		NotBeforeMs: time.Now().UnixMilli(), ExpiresAtMs: time.Now().Add(time.Minute).UnixMilli()}, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if r := ts.reserveWithPass("ep5", "s", rp.RequestID(), "u2", rotated); r.status != http.StatusAccepted {
		t.Fatalf("pass of the ring's second key: %v", r)
	}
	// Nothing but u2's reserve was recorded.
	if n := num(ts.audit("ep5", "s"), "reservations"); n != 1 {
		t.Fatalf("%d reservations", n)
	}
	for reason, n := range map[string]string{"required": "1", "reserved_prefix": "1", "mismatch": "1", "expired": "1"} {
		if got := ts.metric(`seckill_entry_pass_rejections_total{reason="` + reason + `"}`); got != n {
			t.Fatalf("%s: %q", reason, got)
		}
	}
}

// A server without keys: a pass is INVALID, a campaign that requires one
// is refused, the issuing route is absent.
func TestEntryPassWithoutKeys(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	c := campaign("ep6", "15m", map[string]int{"s": 10})
	c["entry_pass"] = map[string]any{"required": true}
	want(t, ts.admin(http.MethodPut, "/admin/campaigns/ep6", c), http.StatusBadRequest, "BAD_REQUEST")
	delete(c, "entry_pass")
	ts.define(c)
	text, _ := mintPass(t, "ep6", "s", "u1", time.Now(), nil)
	want(t, ts.reserveWithPass("ep6", "s", "", "u1", text), http.StatusForbidden, "ENTRY_PASS_INVALID")
	want(t, ts.issue("ep6", "s", testIssuerToken, map[string]any{"user_id": "u1"}), http.StatusNotFound, "NOT_FOUND")
}

// The issuing route: its own token, subjects by name, bounded values, its
// window; the pass it gives reserves.
func TestIssueEntryPass(t *testing.T) {
	t.Parallel()
	clock := newStepClock()
	cfg := passConfig(t)
	ts := startServer(t, serverOptions{
		engine: func(c *actors.Config) { c.Clock = clock.now },
		config: func(c *httpapi.Config) { cfg(c); c.Clock = clock.now },
	})
	c := campaign("ep7", "15m", map[string]int{"s": 10})
	start := clock.now().Add(time.Hour)
	c["start_at"] = start.UTC().Format(time.RFC3339Nano)
	c["end_at"] = start.Add(time.Hour).UTC().Format(time.RFC3339Nano)
	c["entry_pass"] = map[string]any{"required": true, "lead": "10m", "ttl": "5m"}
	ts.define(c)
	body := map[string]any{"user_id": "carol", "tier": 2, "risk": 1,
		"subjects": map[string]string{"device": "dev-9", "payment_account": "card-1"}}

	want(t, ts.issue("ep7", "s", "", body), http.StatusUnauthorized, "UNAUTHORIZED")
	want(t, ts.issue("ep7", "s", testToken, body), http.StatusUnauthorized, "UNAUTHORIZED") // the admin token is not the issuer's
	want(t, ts.issue("ep7", "s", testIssuerToken, body), http.StatusForbidden, "NOT_STARTED")
	want(t, ts.issue("ep7", "nope", testIssuerToken, body), http.StatusNotFound, "NOT_FOUND")
	for _, bad := range []map[string]any{
		{"user_id": "carol", "subjects": map[string]string{"fingerprint": "x"}},
		{"user_id": "carol", "subjects": map[string]string{"device": strings.Repeat("x", httpapi.MaxSubjectValueLength+1)}},
		{"user_id": "carol", "subjects": map[string]string{"device": ""}},
		{"user_id": "carol", "tier": 256},
		{"user_id": "carol", "risk": -1},
		{"user_id": "bad user"},
		{"user_id": "carol", "extra": 1},
	} {
		want(t, ts.issue("ep7", "s", testIssuerToken, bad), http.StatusBadRequest, "BAD_REQUEST")
	}

	clock.step(50 * time.Minute) // within the lead
	r := ts.issue("ep7", "s", testIssuerToken, body)
	want(t, r, http.StatusOK, "")
	text := r.str("entry_pass")
	ring, _ := entrypass.ParseKeyRing(testPassKeys)
	p, err := ring.Verify(text, entrypass.Scope{CampaignID: "ep7", SKUID: "s", UserID: "carol"}, clock.now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	hasher, _ := entrypass.NewSubjectHasher(testSubjectSecret)
	if dev, _ := p.Subjects.Get(entrypass.SubjectDevice); p.Tier != 2 || p.Risk != 1 || dev != hasher.Hash(entrypass.SubjectDevice, "dev-9") || p.Subjects.Count() != 2 {
		t.Fatalf("claims %+v", p.Claims)
	}
	if r.str("request_id") != p.RequestID() || p.ExpiresAtMs != start.Add(5*time.Minute).UnixMilli() {
		t.Fatalf("answer %v, pass expires %d", r, p.ExpiresAtMs)
	}
	if r.str("expires_at") != start.Add(5*time.Minute).UTC().Format("2006-01-02T15:04:05.000Z07:00") {
		t.Fatalf("expires_at %v", r)
	}
	clock.step(10 * time.Minute) // the sale is open
	res := ts.reserveWithPass("ep7", "s", "", "carol", text)
	want(t, res, http.StatusAccepted, "")
	// risk 1 without payment_window_high_risk: the normal window
	if got, _ := time.Parse(time.RFC3339, res.str("expire_at")); got.Sub(clock.now()) != 15*time.Minute {
		t.Fatalf("expire_at %s", res.str("expire_at"))
	}
	clock.step(time.Hour)
	want(t, ts.issue("ep7", "s", testIssuerToken, body), http.StatusForbidden, "ENDED")
	if got := ts.metric("seckill_entry_passes_issued_total"); got != "1" {
		t.Fatalf("issued %q", got)
	}
}

// Three users on one device with a cap of 1: the second gets SUBJECT_LIMIT
// (nothing recorded); once the first is paid, or expired, the next may.
// High risk gets the short window. On the real engine, with a clock the
// test steps.
func TestSubjectLimitOneDevice(t *testing.T) {
	t.Parallel()
	clock := newStepClock()
	cfg := passConfig(t)
	ts := startServer(t, serverOptions{
		engine: func(c *actors.Config) { c.Clock, c.ManualTick = clock.now, true },
		config: func(c *httpapi.Config) { cfg(c); c.Clock = clock.now },
	})
	c := campaign("ep8", "10m", map[string]int{"s": 10})
	c["max_unpaid_per_subject"] = 1
	c["payment_window_high_risk"] = "2m"
	ts.define(c)
	issue := func(user string, risk int) string {
		r := ts.issue("ep8", "s", testIssuerToken, map[string]any{"user_id": user, "risk": risk,
			"subjects": map[string]string{"device": "shared-phone", "network": "10.0.0.0/24:" + user}})
		want(t, r, http.StatusOK, "")
		return r.str("entry_pass")
	}
	ann, ben, cat := issue("ann", 0), issue("ben", 1), issue("cat", 0)
	first := ts.reserveWithPass("ep8", "s", "", "ann", ann)
	want(t, first, http.StatusAccepted, "")
	want(t, ts.reserveWithPass("ep8", "s", "", "ben", ben), http.StatusConflict, "SUBJECT_LIMIT")
	want(t, ts.reserveWithPass("ep8", "s", "", "cat", cat), http.StatusConflict, "SUBJECT_LIMIT")
	if n := num(ts.audit("ep8", "s"), "reservations"); n != 1 {
		t.Fatalf("%d reservations after the refusals", n)
	}
	want(t, ts.post("/v1/reservations/"+first.str("reservation_id")+"/payment", map[string]any{"payment_id": "pay-ann"}), http.StatusOK, "")
	second := ts.reserveWithPass("ep8", "s", "", "ben", ben)
	want(t, second, http.StatusAccepted, "")
	if got, _ := time.Parse(time.RFC3339, second.str("expire_at")); got.Sub(clock.now()) != 2*time.Minute {
		t.Fatalf("high-risk expire_at %s", second.str("expire_at"))
	}
	want(t, ts.reserveWithPass("ep8", "s", "", "cat", cat), http.StatusConflict, "SUBJECT_LIMIT")
	clock.step(2 * time.Minute) // ben's reservation is due: cat's reserve expires it first
	want(t, ts.reserveWithPass("ep8", "s", "", "cat", cat), http.StatusAccepted, "")
	if st := ts.get("/v1/reservations/" + second.str("reservation_id")).str("state"); st != "CLOSED" {
		t.Fatalf("ben's reservation: %s", st)
	}
	ts.audit("ep8", "s")
}

// The pass's request_id is the one the engine's request index keeps.
func TestEntryPassLookup(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{config: passConfig(t)})
	ts.define(campaign("ep9", "15m", map[string]int{"s": 1}))
	text, pass := mintPass(t, "ep9", "s", "dan", time.Now(), nil)
	want(t, ts.reserveWithPass("ep9", "s", "", "dan", text), http.StatusAccepted, "")
	l := ts.get("/v1/campaigns/ep9/skus/s/requests/" + pass.RequestID())
	if l.status != http.StatusOK {
		t.Fatalf("lookup: %v", l)
	}
	if l.str("request_id") != pass.RequestID() && l.str("reservation_id") == "" {
		t.Fatalf("lookup: %v", l)
	}
}
