package httpapi_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/feed"
)

// campaignFeedPage is the campaign feed's JSON answer.
type campaignFeedPage struct {
	Events     []feedEvent `json:"events"`
	NextCursor string      `json:"next_cursor"`
}

// The widest campaign the feed serves (CampaignFeedMaxSKUs SKUs with ids
// of the longest length, a campaign id of that length too) hands out a
// cursor the server takes back as after= (with the other parameters), as
// Last-Event-ID, and as both at once with a browser's headers (an
// EventSource opened with ?after= reconnecting); one SKU more is refused
// with 400 CAMPAIGN_FEED_TOO_WIDE instead of a cursor nobody could send
// back.
func TestCampaignFeedWidest(t *testing.T) {
	ts := startServer(t, serverOptions{})
	c := strings.Repeat("c", 64)
	skus := map[string]int{}
	for i := range feed.CampaignFeedMaxSKUs {
		skus[fmt.Sprintf("%064d", i)] = 1
	}
	ts.define(campaign(c, "15m", skus))
	path := "/admin/campaigns/" + c + "/events"
	var p campaignFeedPage
	if r := ts.admin(http.MethodGet, path, nil); r.status != http.StatusOK || json.Unmarshal(r.raw, &p) != nil || len(p.Events) != len(skus) {
		t.Fatalf("first page: %v", r)
	}
	positions, err := feed.ParseCampaignCursor(p.NextCursor)
	if err != nil || len(positions) != len(skus) {
		t.Fatalf("cursor of %d positions (%v), want %d", len(positions), err, len(skus))
	}
	ts.reserve(c, fmt.Sprintf("%064d", 7), "r1", "u1")
	query := "?after=" + p.NextCursor + "&limit=1000&wait=10s&types=seckill.reservation.created,seckill.reservation.paid,seckill.reservation.closed"
	var next campaignFeedPage
	if r := ts.admin(http.MethodGet, path+query, nil); r.status != http.StatusOK || json.Unmarshal(r.raw, &next) != nil ||
		len(next.Events) != 1 || next.Events[0].Data["user_id"] != "u1" {
		t.Fatalf("after= the widest cursor (%d bytes): %v", len(p.NextCursor), r)
	}
	if got := readSSEMessages(t, ts, path, p.NextCursor, 1); got[0].data.Data["user_id"] != "u1" {
		t.Fatalf("Last-Event-ID: %+v", got)
	}
	if status := browserReconnect(t, ts, path+query, p.NextCursor); status != "HTTP/1.1 200 OK" {
		t.Fatalf("after= and Last-Event-ID both (%d-byte cursor): %q", len(p.NextCursor), status)
	}
	// The widest cursor the bound allows (every index just below 2^35),
	// twice: the request is read (the handler answers: those histories
	// are no SKU's), not refused 431 by fasthttp.
	widest := map[string]string{}
	for i := range feed.CampaignFeedMaxSKUs {
		widest[fmt.Sprint(i)] = fmt.Sprintf("%016x-%d", i+1, 1<<35-1)
	}
	wide := feed.CampaignCursor(widest)
	if status := browserReconnect(t, ts, path+"?after="+wide+"&limit=1000&wait=10s&types=seckill.reservation.created,seckill.reservation.paid,seckill.reservation.closed", wide); status != "HTTP/1.1 400 Bad Request" {
		t.Fatalf("after= and Last-Event-ID both at the widest cursor (%d bytes): %q", len(wide), status)
	}
	ts.define(campaign(c, "15m", map[string]int{"one-more": 1}))
	want(t, ts.admin(http.MethodGet, path, nil), http.StatusBadRequest, "CAMPAIGN_FEED_TOO_WIDE")
	want(t, ts.admin(http.MethodGet, path+"?after="+p.NextCursor, nil), http.StatusBadRequest, "CAMPAIGN_FEED_TOO_WIDE")
}

// A cursor of the first version (base64url of a JSON object of the SKUs'
// event ids), handed out before, still resumes; a compact cursor is
// smaller, and refused for another campaign.
func TestCampaignFeedCursorVersions(t *testing.T) {
	ts, path := startCampaignFeed(t, "cv")
	var p campaignFeedPage
	if r := ts.admin(http.MethodGet, path, nil); r.status != http.StatusOK || json.Unmarshal(r.raw, &p) != nil || len(p.Events) != 4 {
		t.Fatalf("first page: %v", r)
	}
	v0, _ := json.Marshal(map[string]string{"a": p.Events[1].ID, "b": p.Events[3].ID})
	legacy := base64.RawURLEncoding.EncodeToString(v0)
	if len(p.NextCursor) >= len(legacy) {
		t.Fatalf("compact cursor %q is no shorter than %q", p.NextCursor, legacy)
	}
	ts.reserve("cv", "a", "r3", "u3")
	for _, cursor := range []string{legacy, p.NextCursor} {
		var next campaignFeedPage
		if r := ts.admin(http.MethodGet, path+"?after="+cursor, nil); r.status != http.StatusOK || json.Unmarshal(r.raw, &next) != nil ||
			len(next.Events) != 1 || next.Events[0].Data["user_id"] != "u3" {
			t.Fatalf("after=%s: %v", cursor, r)
		}
	}
	ts.define(campaign("other", "15m", map[string]int{"a": 5}))
	want(t, ts.admin(http.MethodGet, "/admin/campaigns/other/events?after="+p.NextCursor, nil), http.StatusBadRequest, "BAD_CURSOR")
	want(t, ts.admin(http.MethodGet, path+"?after=AQE", nil), http.StatusBadRequest, "BAD_CURSOR") // version 1, a truncated position
}

// A long poll and a stream of the campaign feed that began before a SKU
// was added to the campaign deliver the new SKU's events, from the start
// of its log.
func TestCampaignFeedNewSKU(t *testing.T) {
	ts, path := startCampaignFeed(t, "phones")
	var p campaignFeedPage
	if r := ts.admin(http.MethodGet, path, nil); r.status != http.StatusOK || json.Unmarshal(r.raw, &p) != nil {
		t.Fatalf("first page: %v", r)
	}
	polled := make(chan response, 1)
	go func() {
		r, _ := try(http.MethodGet, ts.base+path+"?wait=30s&after="+p.NextCursor, nil, map[string]string{"Authorization": "Bearer " + testToken})
		polled <- r
	}()
	streamed := make(chan []sseMessage, 1)
	go func() { streamed <- readSSEMessages(t, ts, path, p.NextCursor, 3) }()
	eventually(t, 2*time.Minute, "the long poll and the stream wait", func() bool {
		return strings.Contains(ts.get("/metrics").String(), "seckill_feed_waiting 2")
	})
	ts.define(campaign("phones", "15m", map[string]int{"orange": 5}))
	select {
	case r := <-polled:
		var got campaignFeedPage
		if r.status != http.StatusOK || json.Unmarshal(r.raw, &got) != nil || types(got.Events) != "sku.defined" ||
			got.Events[0].Source != "/seckill/phones/orange" {
			t.Fatalf("long poll: %v", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the long poll did not wake for the new SKU")
	}
	ts.reserve("phones", "orange", "r3", "u3")
	ts.reserve("phones", "a", "r4", "u4")
	select {
	case got := <-streamed:
		var seen []string
		for _, m := range got {
			seen = append(seen, strings.TrimPrefix(m.data.Source, "/seckill/phones/")+" "+m.event)
		}
		// orange's two events in order; a's after them or between them
		if strings.Join(seen, ",") != "orange seckill.sku.defined,orange seckill.reservation.created,a seckill.reservation.created" &&
			strings.Join(seen, ",") != "orange seckill.sku.defined,a seckill.reservation.created,orange seckill.reservation.created" {
			t.Fatalf("stream: %v", seen)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stream did not deliver the new SKU's events")
	}
}

// browserReconnect sends GET target with the headers a browser's
// EventSource sends when it reconnects (Last-Event-ID = lastID, beside
// whatever after= target carries) and returns the answer's status line.
func browserReconnect(t *testing.T, ts *testServer, target, lastID string) string {
	t.Helper()
	host := strings.TrimPrefix(ts.base, "http://")
	req := "GET " + target + " HTTP/1.1\r\n" +
		"Host: " + host + "\r\n" +
		"Connection: keep-alive\r\n" +
		"Accept: text/event-stream\r\n" +
		"Cache-Control: no-cache\r\n" +
		"Last-Event-ID: " + lastID + "\r\n" +
		"Authorization: Bearer " + testToken + "\r\n" +
		"User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36\r\n" +
		"sec-ch-ua: \"Google Chrome\";v=\"131\", \"Chromium\";v=\"131\", \"Not_A Brand\";v=\"24\"\r\n" +
		"sec-ch-ua-mobile: ?0\r\n" +
		"sec-ch-ua-platform: \"Linux\"\r\n" +
		"Sec-Fetch-Site: same-origin\r\n" +
		"Sec-Fetch-Mode: cors\r\n" +
		"Sec-Fetch-Dest: empty\r\n" +
		"Referer: " + ts.base + "/admin/dashboard\r\n" +
		"Accept-Encoding: gzip, deflate, br, zstd\r\n" +
		"Accept-Language: en-US,en;q=0.9\r\n\r\n"
	conn, err := net.DialTimeout("tcp", host, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	t.Logf("a %d-byte request line and headers", len(req))
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	status, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("%d-byte request: %v", len(req), err)
	}
	return strings.TrimRight(status, "\r\n")
}
