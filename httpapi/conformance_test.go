package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/httpapi"
)

// rawExchange writes raw on a new connection and reads every answer the
// server sends before it closes the connection or 5 s pass.
func rawExchange(t *testing.T, ts *testServer, raw string) string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(bufio.NewReader(conn)) // until the server closes (or the deadline)
	return string(got)
}

// RFC 9110 §9.3.4: a PUT that creates a campaign answers 201 Created with
// its Location; a PUT of the same campaign again answers 200.
func TestPutCreatesWith201(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	body := campaign("new", "15m", map[string]int{"s": 5})
	r := ts.admin(http.MethodPut, "/admin/campaigns/new", body)
	want(t, r, http.StatusCreated, "")
	if r.header.Get("Location") != "/admin/campaigns/new" {
		t.Fatalf("201 Location %q", r.header.Get("Location"))
	}
	want(t, ts.admin(http.MethodPut, "/admin/campaigns/new", body), http.StatusOK, "")
}

// RFC 9110 §11.6.1: every 401 carries a WWW-Authenticate challenge, the
// admin token's and the payment signature's.
func TestUnauthorizedCarriesAChallenge(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) { c.PaymentSecret = []byte("s3cret") }})
	ts.define(campaign("auth", "15m", map[string]int{"s": 5}))
	id := ts.reserve("auth", "s", "r1", "u1").str("reservation_id")
	pay := call(t, http.MethodPost, ts.base+"/v1/reservations/"+id+"/payment", `{"payment_id":"p1"}`, map[string]string{"X-Signature": "zz"})
	want(t, pay, http.StatusUnauthorized, "UNAUTHORIZED")
	if ch := pay.header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, "X-Signature ") {
		t.Errorf("payment 401: WWW-Authenticate %q", ch)
	}
	adm := ts.get("/admin/campaigns/auth/skus/s/audit")
	want(t, adm, http.StatusUnauthorized, "UNAUTHORIZED")
	if ch := adm.header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, "Bearer ") {
		t.Errorf("admin 401: WWW-Authenticate %q", ch)
	}
}

// RFC 9110 §10.1.1: with "Expect: 100-continue" and a Content-Length over
// the limit, the header alone decides: 413 and no 100 Continue. Within
// the limit, the body is invited and the request served.
func TestExpectContinue(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("exp", "15m", map[string]int{"s": 5}))
	const path = "/v1/campaigns/exp/skus/s/reservations"
	got := rawExchange(t, ts, "POST "+path+" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
		"Content-Length: "+strconv.Itoa(httpapi.DefaultMaxRequestBodySize+1)+"\r\nExpect: 100-continue\r\n\r\n")
	if strings.Contains(got, "100 Continue") || !strings.HasPrefix(got, "HTTP/1.1 413 ") || !strings.Contains(got, `"error":"BODY_TOO_LARGE"`) {
		t.Fatalf("oversize body with Expect: got\n%s", got)
	}
	body := `{"request_id":"r1","user_id":"u1"}`
	got = rawExchange(t, ts, "POST "+path+" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"+
		"Content-Length: "+strconv.Itoa(len(body))+"\r\nExpect: 100-continue\r\n\r\n"+body)
	if !strings.HasPrefix(got, "HTTP/1.1 100 Continue") || !strings.Contains(got, "HTTP/1.1 202 ") {
		t.Fatalf("small body with Expect: got\n%s", got)
	}
}

// RFC 9112 §6.1: a transfer coding the server does not implement (here
// gzip before chunked) is 501 with the JSON error body, not 400.
func TestUnknownTransferCodingIs501(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	got := rawExchange(t, ts, "POST /v1/campaigns/x/skus/s/reservations HTTP/1.1\r\nHost: x\r\n"+
		"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n")
	if !strings.HasPrefix(got, "HTTP/1.1 501 ") || !strings.Contains(got, `"error":"NOT_IMPLEMENTED"`) {
		t.Fatalf("gzip, chunked: got\n%s", got)
	}
}

// 503 PAUSED says when to come back (Retry-After); 403 NOT_STARTED gives
// start_at and the seconds until then; the reservation and request-lookup
// GETs say how they may be cached.
func TestRetryAfterAndCacheControl(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	ts.define(campaign("ra", "15m", map[string]int{"s": 5}))
	id := ts.reserve("ra", "s", "r1", "u1").str("reservation_id")
	for _, path := range []string{"/v1/reservations/" + id, "/v1/campaigns/ra/skus/s/requests/r1"} {
		r := ts.get(path)
		want(t, r, http.StatusOK, "")
		if cc := r.header.Get("Cache-Control"); cc != "private, no-cache" {
			t.Errorf("%s: Cache-Control %q", path, cc)
		}
	}
	want(t, ts.admin(http.MethodPost, "/admin/campaigns/ra/skus/s/pause", nil), http.StatusOK, "")
	paused := ts.reserve("ra", "s", "r2", "u2")
	want(t, paused, http.StatusServiceUnavailable, "PAUSED")
	if paused.header.Get("Retry-After") == "" {
		t.Errorf("503 PAUSED without Retry-After")
	}

	later := campaign("later", "15m", map[string]int{"s": 5})
	start := time.Now().Add(90 * time.Second).UTC().Truncate(time.Millisecond)
	later["start_at"] = start.Format(time.RFC3339Nano)
	ts.define(later)
	early := ts.reserve("later", "s", "r1", "u1")
	want(t, early, http.StatusForbidden, "NOT_STARTED")
	if got, err := time.Parse(time.RFC3339Nano, early.str("start_at")); err != nil || !got.Equal(start) {
		t.Errorf("NOT_STARTED start_at %q, want %s", early.str("start_at"), start)
	}
	if s, err := strconv.Atoi(early.header.Get("Retry-After")); err != nil || s < 80 || s > 91 {
		t.Errorf("NOT_STARTED Retry-After %q, want ~90", early.header.Get("Retry-After"))
	}
}

// A campaign PUT answers the campaign as GET shows it, byte for byte
// (one rendering): every SKU of the campaign, those of earlier PUTs and
// their paused flags too, the purchase limit, and durations as a body
// gives them ("15m", not "15m0s").
func TestPutAnswersTheCampaignAsGetShowsIt(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{config: passConfig(t)})
	first := campaign("view", "15m", map[string]int{"a": 5, "b": 7})
	first["entry_pass"] = map[string]any{"required": false, "lead": "1h", "ttl": "90s"}
	first["payment_window_high_risk"] = "5m"
	first["max_unpaid_per_subject"] = 2
	check := func(put response, status int) map[string]any {
		t.Helper()
		want(t, put, status, "")
		get := ts.admin(http.MethodGet, "/admin/campaigns/view", nil)
		want(t, get, http.StatusOK, "")
		if string(put.raw) != string(get.raw) {
			t.Fatalf("PUT answered\n%s\nGET shows\n%s", put.raw, get.raw)
		}
		return put.body
	}
	body := check(ts.admin(http.MethodPut, "/admin/campaigns/view", first), http.StatusCreated)
	skus, _ := body["skus"].([]any)
	if body["purchase_limit"] != "sku" || len(skus) != 2 {
		t.Fatalf("answer: %v", body)
	}
	a := skus[0].(map[string]any)
	if a["payment_window"] != "15m" || a["payment_window_high_risk"] != "5m" || a["max_unpaid_per_subject"] != 2.0 ||
		fmt.Sprint(a["entry_pass"]) != "map[lead:1h required:false ttl:1m30s]" {
		t.Errorf("sku a: %v", a)
	}
	// A later PUT of one SKU, with the other paused: the answer is the
	// whole campaign as it now is.
	want(t, ts.admin(http.MethodPost, "/admin/campaigns/view/skus/b/pause", nil), http.StatusOK, "")
	later := campaign("view", "15m", map[string]int{"a": 9})
	later["start_at"], later["end_at"] = first["start_at"], first["end_at"]
	for _, k := range []string{"entry_pass", "payment_window_high_risk", "max_unpaid_per_subject"} {
		later[k] = first[k]
	}
	body = check(ts.admin(http.MethodPut, "/admin/campaigns/view", later), http.StatusOK)
	skus, _ = body["skus"].([]any)
	if len(skus) != 2 || skus[0].(map[string]any)["sale_limit"] != 9.0 || skus[1].(map[string]any)["paused"] != true {
		t.Fatalf("answer after the second PUT: %v", body)
	}
}

// Campaigns can be read back: GET /admin/campaigns/{c} lists every SKU of
// the campaign (also those of earlier PUTs), GET /admin/campaigns every
// campaign; an unknown campaign is 404, a malformed id 400 with the rule.
func TestReadCampaigns(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	first := campaign("spring", "10m", map[string]int{"a": 5, "b": 7})
	ts.define(first)
	second := campaign("spring", "10m", map[string]int{"c": 9})
	second["start_at"], second["end_at"] = first["start_at"], first["end_at"]
	ts.define(second)
	ts.define(campaign("autumn", "15m", map[string]int{"x": 1}))
	want(t, ts.admin(http.MethodPost, "/admin/campaigns/spring/skus/b/pause", nil), http.StatusOK, "")

	got := ts.admin(http.MethodGet, "/admin/campaigns/spring", nil)
	want(t, got, http.StatusOK, "")
	skus, _ := got.body["skus"].([]any)
	if got.str("campaign_id") != "spring" || len(skus) != 3 {
		t.Fatalf("campaign: %s", got.raw)
	}
	for i, wantID := range []string{"a", "b", "c"} {
		s := skus[i].(map[string]any)
		if s["sku_id"] != wantID || s["payment_window"] != "10m" || s["release_on_close"] != true || s["paused"] != (wantID == "b") {
			t.Errorf("sku %d: %v", i, s)
		}
	}
	all := ts.admin(http.MethodGet, "/admin/campaigns", nil)
	want(t, all, http.StatusOK, "")
	if cs, _ := all.body["campaigns"].([]any); len(cs) != 2 || cs[0].(map[string]any)["campaign_id"] != "autumn" {
		t.Fatalf("campaigns: %s", all.raw)
	}
	want(t, ts.admin(http.MethodGet, "/admin/campaigns/winter", nil), http.StatusNotFound, "NOT_FOUND")
	bad := ts.admin(http.MethodGet, "/admin/campaigns/b%20d", nil)
	want(t, bad, http.StatusBadRequest, "BAD_REQUEST")
	if !strings.Contains(bad.str("detail"), "campaign_id must be") {
		t.Errorf("bad id: %v", bad)
	}
	want(t, ts.get("/admin/campaigns"), http.StatusUnauthorized, "UNAUTHORIZED")

	limit := campaign("neg", "15m", map[string]int{"s": 1})
	limit["skus"] = []map[string]any{{"sku_id": "s", "sale_limit": -1}}
	neg := ts.admin(http.MethodPut, "/admin/campaigns/neg", limit)
	want(t, neg, http.StatusBadRequest, "BAD_REQUEST")
	if !strings.Contains(neg.str("detail"), "from 1 to 1073741824") {
		t.Errorf("sale_limit -1: %v", neg)
	}
}

// A connection beyond MaxConnections gets the documented JSON error body
// (503 UNAVAILABLE, Retry-After), not fasthttp's plain-text one; once a
// connection closes, a new one is served.
func TestConnectionLimitAnswersJSON(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{config: func(c *httpapi.Config) { c.MaxConnections = 1 }})
	first, err := net.Dial("tcp", strings.TrimPrefix(ts.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	first.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := first.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(first), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first connection: %v %v", resp, err)
	}
	resp.Body.Close() // the connection stays open (keep-alive)
	got := rawExchange(t, ts, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	if !strings.HasPrefix(got, "HTTP/1.1 503 ") || !strings.Contains(got, "Content-Type: application/json") ||
		!strings.Contains(got, "Retry-After: 1") || !strings.Contains(got, `{"error":"UNAVAILABLE"`) {
		t.Fatalf("connection over the limit: %q", got)
	}
	first.Close()
	deadline := time.Now().Add(time.Minute) // a bound for a server that never frees the place
	for {
		r, err := try(http.MethodGet, ts.base+"/healthz", nil, map[string]string{"Connection": "close"})
		if err == nil && r.status == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection served after the first closed: %v %v", r, err)
		}
		time.Sleep(10 * time.Millisecond) // the server sees the close a moment later
	}
}
