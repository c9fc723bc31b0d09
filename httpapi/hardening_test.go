package httpapi_test

import (
	"bytes"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/paysig"
	"github.com/seckill/seckill/snapshot"
)

// Payment callbacks must carry the HMAC of their raw body when a secret is
// set.
func TestPaymentSignature(t *testing.T) {
	t.Parallel()
	secret := []byte("s3cret")
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) { c.PaymentSecret = secret }})
	ts.define(campaign("sig", "15m", map[string]int{"s": 5}))
	id := ts.reserve("sig", "s", "r1", "u1").str("reservation_id")
	url := ts.base + "/v1/reservations/" + id + "/payment"
	body := []byte(`{"payment_id":"p-1","amount":100,"reservation_id":"` + id + `"}`)

	want(t, call(t, http.MethodPost, url, body, nil), http.StatusUnauthorized, "UNAUTHORIZED")
	want(t, call(t, http.MethodPost, url, body, map[string]string{"X-Signature": paysig.Sign([]byte("wrong"), body)}), http.StatusUnauthorized, "UNAUTHORIZED")
	want(t, call(t, http.MethodPost, url, body, map[string]string{"X-Signature": "zz"}), http.StatusUnauthorized, "UNAUTHORIZED")
	tampered := bytes.Replace(body, []byte("100"), []byte("1"), 1)
	want(t, call(t, http.MethodPost, url, tampered, map[string]string{"X-Signature": paysig.Sign(secret, body)}), http.StatusUnauthorized, "UNAUTHORIZED")
	if g := ts.get("/v1/reservations/" + id); g.str("state") != "PENDING_PAYMENT" {
		t.Fatalf("an unsigned callback changed the reservation: %v", g)
	}
	ok := call(t, http.MethodPost, url, body, map[string]string{"X-Signature": paysig.Sign(secret, body)})
	if ok.status != http.StatusOK || ok.str("state") != "PAID" {
		t.Fatalf("signed payment: %v", ok)
	}
	// A signed body is bound to its reservation: replayed on another one
	// it is refused as naming another reservation, and without
	// reservation_id as unsigned.
	other := ts.reserve("sig", "s", "r2", "u2").str("reservation_id")
	otherURL := ts.base + "/v1/reservations/" + other + "/payment"
	want(t, call(t, http.MethodPost, otherURL, body, map[string]string{"X-Signature": paysig.Sign(secret, body)}), http.StatusBadRequest, "RESERVATION_MISMATCH")
	bare := []byte(`{"payment_id":"p-2"}`)
	want(t, call(t, http.MethodPost, otherURL, bare, map[string]string{"X-Signature": paysig.Sign(secret, bare)}), http.StatusUnauthorized, "UNAUTHORIZED")
	if g := ts.get("/v1/reservations/" + other); g.str("state") != "PENDING_PAYMENT" {
		t.Fatalf("a replayed signature paid another reservation: %v", g)
	}
}

// Without a payment secret, a payment body is still checked: a
// reservation_id must name the reservation of the path, and unknown fields
// are refused, as in every body of the API; a cancel body carries nothing.
func TestPaymentAndCancelBodies(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("pb", "15m", map[string]int{"s": 5}))
	id := ts.reserve("pb", "s", "r1", "u1").str("reservation_id")
	other := ts.reserve("pb", "s", "r2", "u2").str("reservation_id")
	pay, cancel := "/v1/reservations/"+id+"/payment", "/v1/reservations/"+id+"/cancel"

	for _, named := range []string{other, ""} { // given but empty is not absent
		r := ts.post(pay, `{"payment_id":"p-mm","reservation_id":"`+named+`"}`)
		want(t, r, http.StatusBadRequest, "RESERVATION_MISMATCH")
		if r.str("detail") == "" {
			t.Errorf("mismatch without detail: %v", r)
		}
	}
	for _, body := range []string{`{"payment_id":"p-u","x":1}`, `{"payment_id":"p-u","amount":1,"reservation_id":"` + id + `","extra":null}`} {
		r := ts.post(pay, body)
		want(t, r, http.StatusBadRequest, "BAD_REQUEST")
		if !strings.Contains(r.str("detail"), "unknown field") {
			t.Errorf("%s: detail %q", body, r.str("detail"))
		}
	}
	for _, body := range []string{`{"reason":"changed my mind"}`, `[]`, `null`} {
		want(t, ts.post(cancel, body), http.StatusBadRequest, "BAD_REQUEST")
	}
	want(t, ts.post(cancel, `{`), http.StatusBadRequest, "INVALID_JSON")
	if g := ts.get("/v1/reservations/" + id); g.str("state") != "PENDING_PAYMENT" {
		t.Fatalf("a refused body changed the reservation: %v", g)
	}
	want(t, ts.post(pay, `{"payment_id":"p-1","reservation_id":"`+id+`"}`), http.StatusOK, "")
	want(t, ts.post("/v1/reservations/"+other+"/cancel", `{}`), http.StatusOK, "")
}

// Every body takes its keys exactly as documented, case and all, and
// once: encoding/json alone would fold case and let the last of repeated
// keys win, so a signed payment could be read differently by its sender.
func TestBodiesTakeExactKeys(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("ek", "15m", map[string]int{"s": 5}))
	id := ts.reserve("ek", "s", "r1", "u1").str("reservation_id")
	pay := "/v1/reservations/" + id + "/payment"
	for body, detail := range map[string]string{
		`{"Payment_Id":"z1","AMOUNT":777}`:          `unknown field "Payment_Id"`,
		`{"payment_id":"z1","AMOUNT":777}`:          `unknown field "AMOUNT"`,
		`{"payment_id":"p1","payment_id":"p2"}`:     `field "payment_id" repeated`,
		`{"payment_id":"p1","amount":1,"amount":2}`: `field "amount" repeated`,
	} {
		r := ts.post(pay, body)
		want(t, r, http.StatusBadRequest, "BAD_REQUEST")
		if r.str("detail") != detail {
			t.Errorf("%s: detail %q, want %q", body, r.str("detail"), detail)
		}
	}
	if g := ts.get("/v1/reservations/" + id); g.str("state") != "PENDING_PAYMENT" {
		t.Fatalf("a refused payment changed the reservation: %v", g)
	}
	want(t, ts.post("/v1/reservations/"+id+"/cancel", `{"":1}`), http.StatusBadRequest, "BAD_REQUEST")

	window := `"start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-02T00:00:00Z"`
	for body, detail := range map[string]string{
		`{"campaign_id":"ek2",` + window + `,"skus":[{"SKU_ID":"a","Sale_Limit":5}]}`:                                        `skus[0]: unknown field "SKU_ID"`,
		`{"campaign_id":"ek2",` + window + `,"skus":[{"sku_id":"a","sale_limit":5,"sale_limit":9}]}`:                         `skus[0]: field "sale_limit" repeated`,
		`{"campaign_id":"ek2",` + window + `,"skus":[{"sku_id":"a","sale_limit":5}],"skus":[{"sku_id":"b","sale_limit":5}]}`: `field "skus" repeated`,
		`{"Campaign_Id":"ek2",` + window + `,"skus":[{"sku_id":"a","sale_limit":5}]}`:                                        `unknown field "Campaign_Id"`,
	} {
		r := ts.admin(http.MethodPut, "/admin/campaigns/ek2", body)
		want(t, r, http.StatusBadRequest, "BAD_REQUEST")
		if r.str("detail") != detail {
			t.Errorf("%s: detail %q, want %q", body, r.str("detail"), detail)
		}
	}
	for _, skuID := range []string{"a", "b"} {
		want(t, ts.admin(http.MethodGet, "/admin/campaigns/ek2/skus/"+skuID+"/audit", nil), http.StatusNotFound, "NOT_FOUND")
	}
}

// Admin routes need the bearer token; redefinitions may only extend end_at
// or raise sale_limit; pause and resume gate reserves.
func TestAdmin(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	body := campaign("adm", "15m", map[string]int{"s": 5})
	put := ts.base + "/admin/campaigns/adm"
	for h, detail := range map[string]string{"": "admin bearer token missing", "Bearer wrong": "admin bearer token wrong",
		testToken: "admin bearer token missing", "Basic " + testToken: "admin bearer token missing", "Bearer ": "admin bearer token missing",
		"Bearer " + testToken + "x": "admin bearer token wrong"} {
		r := call(t, http.MethodPut, put, body, map[string]string{"Authorization": h})
		want(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
		if r.str("detail") != detail {
			t.Errorf("Authorization %q: detail %q, want %q", h, r.str("detail"), detail)
		}
	}
	want(t, call(t, http.MethodGet, ts.base+"/admin/campaigns/adm/skus/s/audit", nil, nil), http.StatusUnauthorized, "UNAUTHORIZED")
	want(t, call(t, http.MethodPost, ts.base+"/admin/campaigns/adm/skus/s/pause", nil, nil), http.StatusUnauthorized, "UNAUTHORIZED")
	want(t, ts.reserve("adm", "s", "r0", "u0"), http.StatusNotFound, "NOT_FOUND")

	ts.define(body)
	ts.define(body) // the same definition again is a no-op
	raised := campaign("adm", "15m", map[string]int{"s": 8})
	raised["start_at"], raised["end_at"] = body["start_at"], "2099-01-01T00:00:00Z"
	ts.define(raised)
	if a := ts.audit("adm", "s"); num(a, "sale_limit") != 8 {
		t.Fatalf("audit after raise: %v", a)
	}
	lowered := campaign("adm", "15m", map[string]int{"s": 7})
	lowered["start_at"], lowered["end_at"] = raised["start_at"], raised["end_at"]
	want(t, ts.admin(http.MethodPut, "/admin/campaigns/adm", lowered), http.StatusConflict, "DEFINITION_CONFLICT")
	moved := campaign("adm", "15m", map[string]int{"s": 8})
	moved["end_at"] = raised["end_at"]
	want(t, ts.admin(http.MethodPut, "/admin/campaigns/adm", moved), http.StatusConflict, "DEFINITION_CONFLICT")
	want(t, ts.admin(http.MethodPut, "/admin/campaigns/other", body), http.StatusBadRequest, "BAD_REQUEST")
	bad := campaign("adm2", "15m", map[string]int{"s": 0})
	want(t, ts.admin(http.MethodPut, "/admin/campaigns/adm2", bad), http.StatusBadRequest, "BAD_REQUEST")
	want(t, ts.admin(http.MethodPut, "/admin/campaigns/adm2", `{"campaign_id":"adm2","bogus":1}`), http.StatusBadRequest, "BAD_REQUEST")

	want(t, ts.admin(http.MethodPost, "/admin/campaigns/adm/skus/s/pause", nil), http.StatusOK, "")
	want(t, ts.reserve("adm", "s", "r1", "u1"), http.StatusServiceUnavailable, "PAUSED")
	if st := ts.get("/v1/campaigns/adm/skus/s").str("status"); st != "PAUSED" {
		t.Fatalf("status: %s", st)
	}
	want(t, ts.admin(http.MethodPost, "/admin/campaigns/adm/skus/s/resume", nil), http.StatusOK, "")
	want(t, ts.reserve("adm", "s", "r1", "u1"), http.StatusAccepted, "")
	want(t, ts.admin(http.MethodPost, "/admin/campaigns/adm/skus/nope/pause", nil), http.StatusNotFound, "NOT_FOUND")
	r := ts.admin(http.MethodGet, "/admin/campaigns/adm/skus/s/refunds", nil)
	if r.status != http.StatusOK || r.body["refunds"] == nil {
		t.Fatalf("refunds: %v", r)
	}
	snap := ts.admin(http.MethodPost, "/admin/campaigns/adm/skus/s/snapshot", nil)
	if snap.status != http.StatusOK && snap.status != http.StatusNotImplemented {
		t.Fatalf("snapshot: %v", snap)
	}
}

// The admin actions (pause, resume, snapshot, release) take no body, or
// an empty object {}: a body that says anything is refused with 400
// BAD_REQUEST and the detail any other body would get, before anything is
// done, so that no client believes it recorded a reason or targeted
// another SKU. As on every route the Content-Type is not looked at; the
// token is checked first, then the path.
func TestAdminActionBodies(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	def := campaign("ab", "15m", map[string]int{"s": 2})
	def["release_on_close"] = false
	ts.define(def)
	id := ts.reserve("ab", "s", "r1", "u1").str("reservation_id")
	want(t, ts.post("/v1/reservations/"+id+"/cancel", nil), http.StatusOK, "") // CLOSED, still holding its token

	const skuPath = "/admin/campaigns/ab/skus/s"
	pause, resume, snap := skuPath+"/pause", skuPath+"/resume", skuPath+"/snapshot"
	release := "/admin/reservations/" + id + "/release"
	asJSON := map[string]string{"Content-Type": "application/json"}
	asForm := map[string]string{"Content-Type": "application/x-www-form-urlencoded"} // curl -d's
	asText := map[string]string{"Content-Type": "text/plain"}
	post := func(path string, body any, header map[string]string) response {
		h := map[string]string{"Authorization": "Bearer " + testToken}
		for k, v := range header {
			h[k] = v
		}
		return call(t, http.MethodPost, ts.base+path, body, h)
	}

	refuse := func(path string) {
		t.Helper()
		for body, answer := range map[string][2]string{ // reason, detail
			`{"reason":"fraud"}`:              {"BAD_REQUEST", `unknown field "reason"`},
			`{"sku_id":"other"}`:              {"BAD_REQUEST", `unknown field "sku_id"`},
			`{"reservation_id":"` + id + `"}`: {"BAD_REQUEST", `unknown field "reservation_id"`},
			`{"paused":true}`:                 {"BAD_REQUEST", `unknown field "paused"`},
			`null`:                            {"BAD_REQUEST", "the body must be a JSON object"},
			`["fraud"]`:                       {"BAD_REQUEST", "the body must be a JSON object"},
			`{"reason":`:                      {"INVALID_JSON", "the body is not complete JSON: it ends at byte 10, inside the object"},
			`{} {"reason":"fraud"}`:           {"INVALID_JSON", "the body is not one JSON value: more follows the object, at byte 4"},
			`reason=fraud`:                    {"INVALID_JSON", "the body is not JSON: invalid character 'r' looking for beginning of value (at byte 1)"},
		} {
			for _, header := range []map[string]string{nil, asJSON, asForm} {
				r := post(path, body, header)
				want(t, r, http.StatusBadRequest, answer[0])
				if r.str("detail") != answer[1] {
					t.Errorf("%s %s (%v): detail %q, want %q", path, body, header, r.str("detail"), answer[1])
				}
			}
		}
		want(t, call(t, http.MethodPost, ts.base+path, `{"reason":"fraud"}`, nil), http.StatusUnauthorized, "UNAUTHORIZED")
	}
	accepted := []struct {
		body   any
		header map[string]string
	}{{nil, nil}, {"", nil}, {" \r\n\t", nil}, {`{}`, nil}, {" {\n} \n", nil}, {`{}`, asJSON}, {`{}`, asText}, {`{}`, asForm}}
	status := func() string { return ts.get("/v1/campaigns/ab/skus/s").str("status") }
	snapshots := func() int {
		files, err := snapshot.List(filepath.Join(ts.dir, "ab", "s", "snapshots"))
		if err != nil {
			t.Fatal(err)
		}
		return len(files)
	}

	refuse(pause)
	if st := status(); st != "OPEN" {
		t.Fatalf("a refused pause paused the SKU: %s", st)
	}
	for _, a := range accepted {
		if r := post(pause, a.body, a.header); r.status != http.StatusOK || r.body["paused"] != true {
			t.Fatalf("pause with %q %v: %v", a.body, a.header, r)
		}
	}
	if st := status(); st != "PAUSED" {
		t.Fatalf("after pause: %s", st)
	}
	refuse(resume)
	if st := status(); st != "PAUSED" {
		t.Fatalf("a refused resume resumed the SKU: %s", st)
	}
	for _, a := range accepted {
		if r := post(resume, a.body, a.header); r.status != http.StatusOK || r.body["paused"] != false {
			t.Fatalf("resume with %q %v: %v", a.body, a.header, r)
		}
	}
	if st := status(); st != "OPEN" {
		t.Fatalf("after resume: %s", st)
	}

	if n := snapshots(); n != 0 {
		t.Fatalf("%d snapshots before any was asked for", n)
	}
	refuse(snap)
	if n := snapshots(); n != 0 {
		t.Fatalf("a refused snapshot request wrote %d snapshots", n)
	}
	for _, a := range accepted {
		if r := post(snap, a.body, a.header); r.status != http.StatusOK || r.body["snapshot"] == nil {
			t.Fatalf("snapshot with %q %v: %v", a.body, a.header, r)
		}
	}
	if n := snapshots(); n == 0 {
		t.Fatal("no snapshot written")
	}

	refuse(release)
	if a := ts.audit("ab", "s"); num(a, "held_closed") != 1 || num(a, "available") != 1 {
		t.Fatalf("a refused release released the token: %v", a)
	}
	for i, a := range accepted {
		outcome := "ALREADY_RELEASED"
		if i == 0 {
			outcome = "RELEASED"
		}
		if r := post(release, a.body, a.header); r.status != http.StatusOK || r.str("outcome") != outcome {
			t.Fatalf("release with %q %v: %v, want %s", a.body, a.header, r, outcome)
		}
	}
	if a := ts.audit("ab", "s"); num(a, "held_closed") != 0 || num(a, "available") != 2 {
		t.Fatalf("after release: %v", a)
	}

	// An admin path whose id breaks the id rule is 400 with the rule,
	// whatever the body; one that could name a SKU is refused for its body
	// before the engine is asked whether it does.
	bad := post("/admin/campaigns/ab/skus/b%20d/pause", `{"reason":"fraud"}`, nil)
	want(t, bad, http.StatusBadRequest, "BAD_REQUEST")
	if !strings.Contains(bad.str("detail"), "sku_id must be 1-64 characters") {
		t.Fatalf("bad sku_id in the path: %v", bad)
	}
	want(t, post("/admin/reservations/x/release", `{"reason":"fraud"}`, nil), http.StatusNotFound, "NOT_FOUND")
	want(t, post("/admin/campaigns/ab/skus/nope/pause", `{"reason":"fraud"}`, nil), http.StatusBadRequest, "BAD_REQUEST")
	want(t, post("/admin/campaigns/ab/skus/nope/pause", `{}`, nil), http.StatusNotFound, "NOT_FOUND")
}

// Malformed input gets the documented errors, never a crash or a redirect.
func TestBadInput(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("bad", "15m", map[string]int{"s": 5}))
	res := "/v1/campaigns/bad/skus/s/reservations"
	for name, body := range map[string]string{
		"malformed":     `{"request_id":"r1",`,
		"empty":         ``,
		"trailing data": `{"request_id":"r1","user_id":"u1"} {}`,
	} {
		r := ts.post(res, body)
		if r.status != http.StatusBadRequest || r.str("error") != "INVALID_JSON" || r.str("detail") == "" {
			t.Errorf("%s: %v", name, r)
		}
	}
	for name, body := range map[string]string{
		"not an object":  `["r1","u1"]`,
		"unknown field":  `{"request_id":"r1","user_id":"u1","qty":2}`,
		"missing user":   `{"request_id":"r1"}`,
		"bad user chars": `{"request_id":"r1","user_id":"u 1"}`,
		"long request":   `{"request_id":"` + strings.Repeat("r", 65) + `","user_id":"u1"}`,
		"slash in id":    `{"request_id":"a/b","user_id":"u1"}`,
		"wrong type":     `{"request_id":1,"user_id":"u1"}`,
	} {
		r := ts.post(res, body)
		if r.status != http.StatusBadRequest || r.str("error") != "BAD_REQUEST" || r.str("detail") == "" {
			t.Errorf("%s: %v", name, r)
		}
	}
	big := `{"request_id":"r1","user_id":"u1","pad":"` + strings.Repeat("x", 8<<10) + `"}`
	if r, err := try(http.MethodPost, ts.base+res, big, nil); err == nil && (r.status != http.StatusRequestEntityTooLarge || r.str("error") != "BODY_TOO_LARGE") {
		t.Errorf("oversize body: %v", r)
	}
	for _, path := range []string{
		"/v1/campaigns/bad/skus/nope/reservations",
		"/v1/campaigns/b%20d/skus/s/reservations",
		"/v1/campaigns/" + strings.Repeat("c", 65) + "/skus/s/reservations",
	} {
		want(t, ts.post(path, `{"request_id":"r1","user_id":"u1"}`), http.StatusNotFound, "NOT_FOUND")
	}
	for _, id := range []string{"x", "bad~s~0", "bad~s~01", "bad~s~-1", "bad~s~99999999999", "bad~s", "bad~s~1~2", "b%20d~s~1", "bad~s~5"} {
		want(t, ts.get("/v1/reservations/"+id), http.StatusNotFound, "NOT_FOUND")
		want(t, ts.post("/v1/reservations/"+id+"/cancel", nil), http.StatusNotFound, "NOT_FOUND")
		want(t, ts.post("/v1/reservations/"+id+"/payment", `{"payment_id":"p"}`), http.StatusNotFound, "NOT_FOUND")
	}
	id := ts.reserve("bad", "s", "r1", "u1").str("reservation_id")
	for _, amount := range []string{"-1", "9223372036854775808"} {
		r := ts.post("/v1/reservations/"+id+"/payment", `{"payment_id":"p","amount":`+amount+`}`)
		want(t, r, http.StatusBadRequest, "BAD_REQUEST")
		if d := r.str("detail"); d != "amount: must be an integer from 0 to 9223372036854775807" {
			t.Errorf("amount %s: detail %q", amount, d)
		}
	}
	if r := ts.post("/v1/reservations/"+id+"/payment", `{"amount":1}`); r.status != http.StatusBadRequest ||
		r.str("error") != "BAD_REQUEST" || r.str("detail") != "payment_id is missing" {
		t.Errorf("a payment without payment_id: %v", r)
	}
	// Details name the field in JSON's terms, never Go's.
	for path, c := range map[string]struct{ body, detail string }{
		"/v1/reservations/" + id + "/payment": {`{"payment_id":"p","amount":1.5}`, "amount: must be an integer"},
		"/v1/reservations/" + id + "/cancel":  {`{"x":1}`, `unknown field "x"`},
		res:                                   {`{"request_id":1,"user_id":"u1"}`, "request_id: must be a string"},
	} {
		r := ts.post(path, c.body)
		want(t, r, http.StatusBadRequest, "BAD_REQUEST")
		if r.str("detail") != c.detail {
			t.Errorf("%s %s: detail %q, want %q", path, c.body, r.str("detail"), c.detail)
		}
	}
	// A dot folder name is refused with a detail that says so.
	for _, id := range []string{".", ".."} {
		r := ts.post(res, `{"request_id":"r9","user_id":"`+id+`"}`)
		want(t, r, http.StatusBadRequest, "BAD_REQUEST")
		if d := r.str("detail"); d != `user_id must be 1-64 characters of [A-Za-z0-9._:-], not "." or ".."` {
			t.Errorf("user_id %q: detail %q", id, d)
		}
	}
	define := campaign("bad", "15m", map[string]int{"s": 5})
	define["start_at"] = "tomorrow"
	if r := ts.admin(http.MethodPut, "/admin/campaigns/bad", define); r.status != http.StatusBadRequest ||
		r.str("detail") != "start_at: must be an RFC 3339 time such as 2030-01-01T12:00:00Z" {
		t.Errorf("define with a bad time: %v", r)
	}
	// A time RFC 3339 parses but cannot write back (UTC year -1) is
	// refused, not echoed as "-0001-12-31T23:00:00.000Z".
	define["start_at"] = "0000-01-01T00:00:00+01:00"
	if r := ts.admin(http.MethodPut, "/admin/campaigns/bad", define); r.status != http.StatusBadRequest || r.str("error") != "BAD_REQUEST" ||
		r.str("detail") != "start_at: must be a time from 1970-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z (UTC)" {
		t.Errorf("define with a time before 1970: %v", r)
	}

	want(t, ts.get("/nope"), http.StatusNotFound, "NOT_FOUND")
	want(t, ts.post(res+"/", `{"request_id":"r2","user_id":"u2"}`), http.StatusNotFound, "NOT_FOUND")
	want(t, ts.get("/V1/CAMPAIGNS/bad/skus/s"), http.StatusNotFound, "NOT_FOUND")
	r := call(t, http.MethodDelete, ts.base+res, nil, nil)
	want(t, r, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
	if r.header.Get("Allow") == "" {
		t.Errorf("405 without Allow: %v", r.header)
	}
	want(t, ts.get(res), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
	want(t, call(t, http.MethodPut, ts.base+"/healthz", nil, nil), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")

	want(t, ts.get("/healthz"), http.StatusOK, "")
	want(t, ts.get("/readyz"), http.StatusOK, "")
	ts.audit("bad", "s")
}

// OPTIONS answers 204 with the route's methods in Allow (RFC 9110
// §9.3.7), HEAD is served on every GET route without a body (§9.3.2), and
// a 405 names the methods it allows in Allow.
func TestOptionsHeadAndAllow(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("opt", "15m", map[string]int{"s": 5}))
	id := ts.reserve("opt", "s", "r1", "u1").str("reservation_id")
	reserve, status := ts.base+"/v1/campaigns/opt/skus/s/reservations", ts.base+"/v1/campaigns/opt/skus/s"
	for url, allow := range map[string]string{
		reserve:                            "OPTIONS, POST",
		status:                             "GET, HEAD, OPTIONS",
		ts.base + "/v1/reservations/" + id: "GET, HEAD, OPTIONS",
		ts.base + "/admin/campaigns/opt":   "GET, HEAD, OPTIONS, PUT",
		ts.base + "/healthz":               "GET, HEAD, OPTIONS",
	} {
		r := call(t, http.MethodOptions, url, nil, nil)
		if r.status != http.StatusNoContent || r.header.Get("Allow") != allow || len(r.raw) != 0 {
			t.Errorf("OPTIONS %s: %v, Allow %q; want 204, Allow %q", url, r, r.header.Get("Allow"), allow)
		}
	}
	want(t, call(t, http.MethodOptions, ts.base+"/nope", nil, nil), http.StatusNotFound, "NOT_FOUND")

	for _, path := range []string{"/v1/campaigns/opt/skus/s", "/v1/reservations/" + id, "/v1/campaigns/opt/skus/s/requests/r1", "/healthz", "/readyz", "/metrics"} {
		got := ts.get(path)
		head := call(t, http.MethodHead, ts.base+path, nil, nil)
		if head.status != got.status || len(head.raw) != 0 || head.header.Get("Content-Type") != got.header.Get("Content-Type") {
			t.Errorf("HEAD %s: %v %v; GET: %d %s", path, head, head.header, got.status, got.header.Get("Content-Type"))
		}
		if path != "/metrics" && head.header.Get("Content-Length") != strconv.Itoa(len(got.raw)) {
			t.Errorf("HEAD %s: Content-Length %q, GET's body has %d bytes", path, head.header.Get("Content-Length"), len(got.raw))
		}
	}
	if h := call(t, http.MethodHead, status, nil, nil); h.header.Get("Cache-Control") == "" {
		t.Errorf("HEAD of a status without its Cache-Control: %v", h.header)
	}
	if h := call(t, http.MethodHead, ts.base+"/v1/reservations/opt~s~9~0123456789abcdef", nil, nil); h.status != http.StatusNotFound {
		t.Errorf("HEAD of a missing reservation: %v", h)
	}

	for method, url := range map[string]string{http.MethodDelete: reserve, http.MethodHead: reserve, http.MethodPost: status} {
		r := call(t, method, url, nil, nil)
		if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") == "" {
			t.Errorf("%s %s: %v, Allow %q", method, url, r, r.header.Get("Allow"))
		}
		if method != http.MethodHead && (r.str("error") != "METHOD_NOT_ALLOWED" || r.str("detail") != "allowed: "+r.header.Get("Allow")) {
			t.Errorf("%s %s: %v", method, url, r)
		}
	}
}

// Percent-encoded ids in the path name the same resources (RFC 3986 §2.1).
func TestPercentEncodedPath(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("pct", "15m", map[string]int{"sku-1": 5}))
	id := ts.reserve("pct", "sku-1", "r1", "u1").str("reservation_id")
	encoded := strings.ReplaceAll(id, "~", "%7E")
	if g := ts.get("/v1/reservations/" + encoded); g.status != http.StatusOK || g.str("reservation_id") != id {
		t.Fatalf("GET %s: %v", encoded, g)
	}
	if g := ts.get("/v1/campaigns/pct/skus/sku%2D1"); g.status != http.StatusOK {
		t.Fatalf("status with an encoded SKU id: %v", g)
	}
}

// A reservation id is a capability: the same sequence number with another
// tag names nothing, for reads, payments and cancels.
func TestForgedReservationID(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("cap", "15m", map[string]int{"s": 5}))
	id := ts.reserve("cap", "s", "r1", "u1").str("reservation_id")
	forged := id[:strings.LastIndex(id, "~")+1] + "0123456789abcdef"
	want(t, ts.get("/v1/reservations/"+forged), http.StatusNotFound, "NOT_FOUND")
	want(t, ts.post("/v1/reservations/"+forged+"/cancel", nil), http.StatusNotFound, "NOT_FOUND")
	want(t, ts.post("/v1/reservations/"+forged+"/payment", map[string]any{"payment_id": "p1"}), http.StatusNotFound, "NOT_FOUND")
	want(t, ts.get("/v1/reservations/"+id[:strings.LastIndex(id, "~")]), http.StatusNotFound, "NOT_FOUND") // no tag at all
	if g := ts.get("/v1/reservations/" + id); g.status != http.StatusOK || g.str("state") != "PENDING_PAYMENT" {
		t.Fatalf("the real id: %v", g)
	}
}
