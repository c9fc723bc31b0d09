package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/feed"
)

// feedEvent is the part of a feed event the tests read.
type feedEvent struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Source       string         `json:"source"`
	Subject      string         `json:"subject"`
	SeckillIndex uint64         `json:"seckillindex"`
	Data         map[string]any `json:"data"`
}

type feedPage struct {
	Events       []feedEvent `json:"events"`
	NextCursor   string      `json:"next_cursor"`
	FirstIndex   uint64      `json:"first_index"`
	DurableIndex uint64      `json:"durable_index"`
}

func feedPath(campaignID, skuID, query string) string {
	return "/admin/campaigns/" + campaignID + "/skus/" + skuID + "/events" + query
}

// page reads one feed page and fails the test unless it is 200.
func (ts *testServer) page(campaignID, skuID, query string) feedPage {
	ts.t.Helper()
	r := ts.admin(http.MethodGet, feedPath(campaignID, skuID, query), nil)
	if r.status != http.StatusOK {
		ts.t.Fatalf("feed %s: %v", query, r)
	}
	var p feedPage
	if err := json.Unmarshal(r.raw, &p); err != nil {
		ts.t.Fatal(err)
	}
	return p
}

// historyOf returns the history of an event id ("<history>-<index>"):
// the key of its position in a parsed campaign cursor.
func historyOf(eventID string) string {
	h, _, _ := strings.Cut(eventID, "-")
	return h
}

func types(events []feedEvent) string {
	var s []string
	for _, e := range events {
		s = append(s, strings.TrimPrefix(e.Type, "seckill."))
	}
	return strings.Join(s, " ")
}

// The feed sends every durable record of a SKU as an event, in log order,
// with the reservation's immutable fields on later events; SOLD_OUT only
// when asked for; bad input gets clear errors.
func TestFeedEvents(t *testing.T) {
	ts := startServer(t, serverOptions{})
	ts.define(campaign("fd", "15m", map[string]int{"s": 2}))
	a := ts.reserve("fd", "s", "req-a", "alice")
	b := ts.reserve("fd", "s", "req-b", "bob")
	want(t, ts.reserve("fd", "s", "req-c", "carol"), http.StatusConflict, "SOLD_OUT")
	want(t, ts.post("/v1/reservations/"+a.str("reservation_id")+"/payment", map[string]any{"payment_id": "pay-a", "amount": 500}), http.StatusOK, "")
	want(t, ts.post("/v1/reservations/"+b.str("reservation_id")+"/cancel", nil), http.StatusOK, "")

	p := ts.page("fd", "s", "")
	if got := types(p.Events); got != "sku.defined reservation.created reservation.created reservation.paid reservation.closed" {
		t.Fatalf("events: %s", got)
	}
	paid := p.Events[3]
	if paid.Subject != a.str("reservation_id") || paid.Data["user_id"] != "alice" || paid.Data["request_id"] != "req-a" ||
		paid.Data["payment_id"] != "pay-a" || paid.Data["amount"] != 500.0 || paid.Data["created_at"] == nil || paid.Source != "/seckill/fd/s" {
		t.Fatalf("paid event: %+v", paid)
	}
	if closed := p.Events[4]; closed.Data["reason"] != "CANCELLED" || closed.Data["user_id"] != "bob" {
		t.Fatalf("closed event: %+v", closed)
	}
	if p.NextCursor != p.Events[4].ID || p.DurableIndex != p.Events[4].SeckillIndex || p.FirstIndex != 1 {
		t.Fatalf("page: cursor %q first %d durable %d, last event %+v", p.NextCursor, p.FirstIndex, p.DurableIndex, p.Events[4])
	}
	// The same records give the same ids and payloads; after the last
	// cursor, nothing (wait=0 answers at once).
	again := ts.page("fd", "s", "?limit=2&after="+p.Events[1].ID)
	if len(again.Events) != 2 || again.Events[0].ID != p.Events[2].ID || again.NextCursor != p.Events[3].ID {
		t.Fatalf("page after %s: %+v", p.Events[1].ID, again)
	}
	if empty := ts.page("fd", "s", "?after="+p.NextCursor); len(empty.Events) != 0 || empty.NextCursor != p.NextCursor {
		t.Fatalf("page at the end: %+v", empty)
	}
	if only := ts.page("fd", "s", "?types=seckill.reservation.paid,seckill.sku.defined"); types(only.Events) != "sku.defined reservation.paid" || only.NextCursor != p.NextCursor {
		t.Fatalf("types=: %+v", only)
	}

	want(t, call(t, http.MethodGet, ts.base+feedPath("fd", "s", ""), nil, nil), http.StatusUnauthorized, "UNAUTHORIZED")
	want(t, ts.admin(http.MethodGet, feedPath("fd", "nope", ""), nil), http.StatusNotFound, "NOT_FOUND")
	want(t, ts.admin(http.MethodGet, feedPath("fd", "s", "?after=xyz"), nil), http.StatusBadRequest, "BAD_CURSOR")
	want(t, ts.admin(http.MethodGet, feedPath("fd", "s", "?after=0123456789abcdef-1"), nil), http.StatusBadRequest, "BAD_CURSOR")
	want(t, ts.admin(http.MethodGet, feedPath("fd", "s", "?limit=1001"), nil), http.StatusBadRequest, "BAD_REQUEST")
	want(t, ts.admin(http.MethodGet, feedPath("fd", "s", "?wait=61s"), nil), http.StatusBadRequest, "BAD_REQUEST")
	want(t, ts.admin(http.MethodGet, feedPath("fd", "s", "?types=seckill.nope"), nil), http.StatusBadRequest, "BAD_REQUEST")
	// Another SKU's cursor (another history) is refused.
	ts.define(campaign("fd2", "15m", map[string]int{"t": 1}))
	other := ts.page("fd2", "t", "")
	want(t, ts.admin(http.MethodGet, feedPath("fd", "s", "?after="+other.NextCursor), nil), http.StatusBadRequest, "BAD_CURSOR")
	// A cursor beyond the durable log (an older copy of it) is refused.
	h, _, _ := strings.Cut(p.NextCursor, "-")
	want(t, ts.admin(http.MethodGet, feedPath("fd", "s", "?after="+h+"-999"), nil), http.StatusConflict, "CURSOR_DIVERGED")
}

// A long poll answers as soon as a record passes the cursor.
func TestFeedLongPoll(t *testing.T) {
	ts := startServer(t, serverOptions{})
	ts.define(campaign("lp", "15m", map[string]int{"s": 5}))
	start := ts.page("lp", "s", "")
	got := make(chan response, 1)
	go func() {
		r, err := try(http.MethodGet, ts.base+feedPath("lp", "s", "?wait=30s&after="+start.NextCursor), nil,
			map[string]string{"Authorization": "Bearer " + testToken})
		if err != nil {
			r.status = -1
		}
		got <- r
	}()
	ts.reserve("lp", "s", "req-1", "u1")
	select {
	case r := <-got:
		var p feedPage
		if r.status != http.StatusOK || json.Unmarshal(r.raw, &p) != nil || len(p.Events) != 1 || p.Events[0].Data["user_id"] != "u1" {
			t.Fatalf("long poll: %v", r)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("the long poll did not answer after the reserve")
	}
}

// After snapshots truncate the log, an old cursor answers 410 with the
// first index kept.
func TestFeedCompactedCursor(t *testing.T) {
	ts := startServer(t, serverOptions{engine: func(c *actors.Config) {
		c.WAL.SegmentSize = 512
		c.SnapshotKeep = 1
	}})
	ts.define(campaign("cp", "15m", map[string]int{"s": 200}))
	first := ts.page("cp", "s", "?limit=1")
	for i := 0; i < 60; i++ {
		ts.reserve("cp", "s", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i))
	}
	want(t, ts.admin(http.MethodPost, "/admin/campaigns/cp/skus/s/snapshot", nil), http.StatusOK, "")
	// The actor truncates the log after the snapshot's answer.
	var r response
	eventually(t, 20*time.Second, "410 for a truncated cursor", func() bool {
		r = ts.admin(http.MethodGet, feedPath("cp", "s", "?limit=1&after="+first.NextCursor), nil)
		return r.status == http.StatusGone
	})
	want(t, r, http.StatusGone, "CURSOR_COMPACTED")
	if num(r, "first_index") < 3 {
		t.Fatalf("410 without the first index kept: %v", r)
	}
	// Without a cursor the feed starts at the retained log.
	if p := ts.page("cp", "s", ""); p.Events[0].SeckillIndex != uint64(num(r, "first_index")) {
		t.Fatalf("first event %d, first index %d", p.Events[0].SeckillIndex, num(r, "first_index"))
	}
}

// A cursor of a history that a restore abandoned answers 409 beyond the
// fork point, and resumes before it.
func TestFeedDivergedCursor(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, serverOptions{dir: dir})
	ts.define(campaign("fk", "15m", map[string]int{"s": 5}))
	for i := 0; i < 4; i++ {
		ts.reserve("fk", "s", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i))
	}
	p := ts.page("fk", "s", "")
	root, _, _ := strings.Cut(p.NextCursor, "-")
	// What seckillctl restore --until-index 2 leaves in the SKU folder
	// (of a stopped server: restore refuses a data dir a seckilld holds).
	ts.stop()
	chain := feed.Chain{Root: root, Forks: []feed.Fork{{History: "00000000000000aa", ForkIndex: 2}}}
	if err := chain.Write(filepath.Join(dir, "fk", "s")); err != nil {
		t.Fatal(err)
	}
	ts = startServer(t, serverOptions{dir: dir})
	r := ts.admin(http.MethodGet, feedPath("fk", "s", "?after="+p.NextCursor), nil)
	want(t, r, http.StatusConflict, "CURSOR_DIVERGED")
	if num(r, "fork_index") != 2 {
		t.Fatalf("409 without the fork index: %v", r)
	}
	ok := ts.page("fk", "s", "?after="+p.Events[1].ID)
	if ok.Events[0].ID != "00000000000000aa-3" {
		t.Fatalf("record 3 after the fork has id %s", ok.Events[0].ID)
	}
}

// Server-Sent Events: id: is the cursor, and Last-Event-ID resumes after it.
func TestFeedSSE(t *testing.T) {
	ts := startServer(t, serverOptions{})
	ts.define(campaign("se", "15m", map[string]int{"s": 5}))
	ts.reserve("se", "s", "r1", "u1")
	ids := readSSE(t, ts, "", 2)
	ts.reserve("se", "s", "r2", "u2")
	more := readSSE(t, ts, ids[1], 1)
	if more[0] == ids[1] || more[0] == ids[0] {
		t.Fatalf("resumed at %s after %v", more[0], ids)
	}
}

// A browser's EventSource opened with ?after=C reconnects to the same URL
// with the last id it got as Last-Event-ID: the stream resumes after that
// id, not again after C (every event since C twice at each reconnect,
// and a 410 once C is compacted, which ends an EventSource for good).
// Both the SKU's feed and the campaign's.
func TestFeedSSEReconnectResumesAfterLastEventID(t *testing.T) {
	ts := startServer(t, serverOptions{})
	ts.define(campaign("se", "15m", map[string]int{"s": 5}))
	for i := range 3 {
		ts.reserve("se", "s", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i))
	}
	ids := readSSE(t, ts, "", 3) // DEFINE, then two reservations
	got := readSSEMessages(t, ts, feedPath("se", "s", "?after="+ids[0]), ids[2], 1)
	if got[0].id == ids[1] || got[0].id == ids[2] {
		t.Fatalf("SKU feed opened with after=%s, reconnecting with Last-Event-ID %s: resumed at %s", ids[0], ids[2], got[0].id)
	}
	first := readSSEMessages(t, ts, "/admin/campaigns/se/events", "", 3)
	got = readSSEMessages(t, ts, "/admin/campaigns/se/events?after="+first[0].id, first[2].id, 1)
	if got[0].data.ID == first[1].data.ID || got[0].data.ID == first[2].data.ID {
		t.Fatalf("campaign feed opened with after=%s, reconnecting with Last-Event-ID %s: resumed at event %s", first[0].id, first[2].id, got[0].data.ID)
	}
}

// readSSE opens the stream (after lastID when not empty) and returns the
// ids of its first n events.
func readSSE(t *testing.T, ts *testServer, lastID string, n int) []string {
	t.Helper()
	var ids []string
	for _, m := range readSSEMessages(t, ts, feedPath("se", "s", ""), lastID, n) {
		ids = append(ids, m.id)
	}
	return ids
}

// table is a consumer's view: reservation id -> state.
type table map[string]string

func (tb table) apply(events []feedEvent) {
	for _, e := range events {
		switch e.Type {
		case "seckill.reservation.created":
			tb[e.Subject] = "PENDING_PAYMENT"
		case "seckill.reservation.paid":
			tb[e.Subject] = "PAID"
		case "seckill.reservation.closed":
			tb[e.Subject] = "CLOSED"
		}
	}
}

// follow reads the feed from cursor to its end into tb and returns the
// last cursor; a 410 is returned as is.
func (ts *testServer) follow(tb table, campaignID, skuID, cursor string) (string, response) {
	for {
		r := ts.admin(http.MethodGet, feedPath(campaignID, skuID, "?limit=7&after="+cursor), nil)
		if r.status != http.StatusOK {
			return cursor, r
		}
		var p feedPage
		if err := json.Unmarshal(r.raw, &p); err != nil {
			ts.t.Fatal(err)
		}
		tb.apply(p.Events)
		if p.NextCursor == cursor {
			return cursor, r
		}
		cursor = p.NextCursor
	}
}

// A consumer that fell behind a truncation gets 410, resynchronises from
// the export and continues after it: it ends with the table of a consumer
// that never fell behind.
func TestFeedExportAfterCompaction(t *testing.T) {
	ts := startServer(t, serverOptions{engine: func(c *actors.Config) {
		c.WAL.SegmentSize = 512
		c.SnapshotKeep = 1
	}})
	ts.define(campaign("ex", "15m", map[string]int{"s": 100}))
	live, behind := table{}, table{}
	liveCursor, _ := ts.follow(live, "ex", "s", "")
	behindCursor := ts.page("ex", "s", "?limit=1").NextCursor
	ops := func(from, to int) {
		for i := from; i < to; i++ {
			r := ts.reserve("ex", "s", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i))
			id := r.str("reservation_id")
			switch i % 3 {
			case 0:
				want(t, ts.post("/v1/reservations/"+id+"/payment", map[string]any{"payment_id": fmt.Sprintf("p%d", i), "amount": 1}), http.StatusOK, "")
			case 1:
				want(t, ts.post("/v1/reservations/"+id+"/cancel", nil), http.StatusOK, "")
			}
		}
	}
	ops(0, 30)
	liveCursor, _ = ts.follow(live, "ex", "s", liveCursor)
	want(t, ts.admin(http.MethodPost, "/admin/campaigns/ex/skus/s/snapshot", nil), http.StatusOK, "")
	var gone response
	eventually(t, 20*time.Second, "410 for the consumer behind", func() bool {
		gone = ts.admin(http.MethodGet, feedPath("ex", "s", "?limit=1&after="+behindCursor), nil)
		return gone.status == http.StatusGone
	})
	want(t, gone, http.StatusGone, "CURSOR_COMPACTED")
	ops(30, 40)

	// Resynchronise: the export's rows, then the feed after its cursor.
	r := ts.admin(http.MethodGet, "/admin/campaigns/ex/skus/s/reservations", nil)
	if r.status != http.StatusOK {
		t.Fatalf("export: %v", r)
	}
	lines := strings.Split(strings.TrimSpace(string(r.raw)), "\n")
	var end struct {
		AsOfIndex  uint64 `json:"as_of_index"`
		NextCursor string `json:"next_cursor"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &end); err != nil || end.NextCursor == "" {
		t.Fatalf("export's last line %q: %v", lines[len(lines)-1], err)
	}
	for _, line := range lines[:len(lines)-1] {
		var row struct {
			ReservationID string `json:"reservation_id"`
			State         string `json:"state"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		behind[row.ReservationID] = row.State
	}
	ops(40, 45)
	if _, r := ts.follow(behind, "ex", "s", end.NextCursor); r.status != http.StatusOK {
		t.Fatalf("continuing after the export: %v", r)
	}
	if _, r := ts.follow(live, "ex", "s", liveCursor); r.status != http.StatusOK {
		t.Fatalf("the live consumer: %v", r)
	}
	if len(live) != 45 || fmt.Sprint(live) != fmt.Sprint(behind) {
		t.Fatalf("tables differ:\nlive   %v\nbehind %v", live, behind)
	}
}

// --feed-retain-records holds truncation back: after snapshots, the feed
// still starts at record 1.
func TestFeedRetentionHoldsTruncation(t *testing.T) {
	ts := startServer(t, serverOptions{engine: func(c *actors.Config) {
		c.WAL.SegmentSize = 512
		c.SnapshotKeep = 1
		c.FeedRetainRecords = 1000
	}})
	ts.define(campaign("rt", "15m", map[string]int{"s": 100}))
	for i := 0; i < 60; i++ {
		ts.reserve("rt", "s", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i))
	}
	// The second snapshot starts once the first is done, after its
	// truncation: when it answers, the first truncation has run.
	want(t, ts.admin(http.MethodPost, "/admin/campaigns/rt/skus/s/snapshot", nil), http.StatusOK, "")
	want(t, ts.admin(http.MethodPost, "/admin/campaigns/rt/skus/s/snapshot", nil), http.StatusOK, "")
	if p := ts.page("rt", "s", "?limit=1"); p.FirstIndex != 1 || p.Events[0].SeckillIndex != 1 {
		t.Fatalf("retained log starts at %d", p.FirstIndex)
	}
}

// startCampaignFeed starts a server with campaign c of SKUs a and b, one
// reservation each (r1 by u1 of a, r2 by u2 of b), and returns the path of
// its campaign feed.
func startCampaignFeed(t *testing.T, c string) (*testServer, string) {
	ts := startServer(t, serverOptions{})
	ts.define(campaign(c, "15m", map[string]int{"a": 5, "b": 5}))
	ts.reserve(c, "a", "r1", "u1")
	ts.reserve(c, "b", "r2", "u2")
	return ts, "/admin/campaigns/" + c + "/events"
}

// The campaign feed merges the SKUs' feeds; its cursor carries each SKU's
// position, and a long poll wakes for any of them.
func TestCampaignFeed(t *testing.T) {
	ts, path := startCampaignFeed(t, "cf")
	r := ts.admin(http.MethodGet, path, nil)
	var p struct {
		Events     []feedEvent `json:"events"`
		NextCursor string      `json:"next_cursor"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.raw, &p) != nil {
		t.Fatalf("campaign feed: %v", r)
	}
	if got := types(p.Events); got != "sku.defined reservation.created sku.defined reservation.created" ||
		p.Events[0].Source != "/seckill/cf/a" || p.Events[2].Source != "/seckill/cf/b" {
		t.Fatalf("campaign events: %s", got)
	}
	positions, err := feed.ParseCampaignCursor(p.NextCursor)
	if err != nil || len(positions) != 2 || positions[historyOf(p.Events[1].ID)] != p.Events[1].ID || positions[historyOf(p.Events[3].ID)] != p.Events[3].ID {
		t.Fatalf("cursor %v, %v", positions, err)
	}
	got := make(chan response, 1)
	go func() {
		r, _ := try(http.MethodGet, ts.base+path+"?wait=30s&after="+p.NextCursor, nil, map[string]string{"Authorization": "Bearer " + testToken})
		got <- r
	}()
	ts.reserve("cf", "b", "r3", "u3")
	select {
	case r := <-got:
		if r.status != http.StatusOK || json.Unmarshal(r.raw, &p) != nil || len(p.Events) != 1 || p.Events[0].Data["user_id"] != "u3" {
			t.Fatalf("long poll: %v", r)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("the campaign long poll did not answer")
	}
	// A limit of 1 still serves every SKU in turn (a share each, rounded up).
	r = ts.admin(http.MethodGet, path+"?limit=1", nil)
	if json.Unmarshal(r.raw, &p) != nil || len(p.Events) != 1 {
		t.Fatalf("limit=1: %v", r)
	}
	want(t, ts.admin(http.MethodGet, "/admin/campaigns/nope/events", nil), http.StatusNotFound, "NOT_FOUND")
	want(t, ts.admin(http.MethodGet, path+"?after=!!", nil), http.StatusBadRequest, "BAD_CURSOR")
	want(t, ts.admin(http.MethodGet, path+"?after="+feed.CampaignCursor(map[string]string{"zz": "0123456789abcdef-1"}), nil), http.StatusBadRequest, "BAD_CURSOR")
}

// sseMessage is one event of a Server-Sent Events stream.
type sseMessage struct {
	id, event string
	data      feedEvent
}

// readSSEMessages reads n events of the stream at path (after lastID, as
// Last-Event-ID, when not empty).
func readSSEMessages(t *testing.T, ts *testServer, path, lastID string, n int) []sseMessage {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, ts.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("SSE answer %d %s", resp.StatusCode, ct)
	}
	var out []sseMessage
	var m sseMessage
	sc := bufio.NewScanner(resp.Body)
	for len(out) < n && sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			m.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			m.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m.data); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
		case line == "" && m.id != "":
			out = append(out, m)
			m = sseMessage{}
		}
	}
	if len(out) < n {
		t.Fatalf("stream ended after %d events: %v", len(out), sc.Err())
	}
	return out
}

// The campaign feed as Server-Sent Events: each event's id: is the
// campaign cursor as of it (every SKU's position, this one's at the
// event), and Last-Event-ID resumes after it.
func TestCampaignFeedSSE(t *testing.T) {
	ts, path := startCampaignFeed(t, "cs")
	got := readSSEMessages(t, ts, path, "", 4)
	seen := map[string]string{}
	for i, m := range got {
		positions, err := feed.ParseCampaignCursor(m.id)
		sku := strings.TrimPrefix(m.data.Source, "/seckill/cs/")
		seen[historyOf(m.data.ID)] = m.data.ID
		if err != nil || !maps.Equal(positions, seen) || m.event != m.data.Type {
			t.Fatalf("event %d (%s of %s): id %v (%v), want the positions %v", i, m.data.ID, sku, positions, err, seen)
		}
	}
	if types([]feedEvent{got[0].data, got[1].data, got[2].data, got[3].data}) != "sku.defined reservation.created sku.defined reservation.created" {
		t.Fatalf("campaign events: %+v", got)
	}
	// Resumed after the second event: a's created, b's events, then new ones.
	ts.reserve("cs", "b", "r3", "u3")
	more := readSSEMessages(t, ts, path, got[1].id, 3)
	if more[0].data.ID != got[2].data.ID || more[1].data.ID != got[3].data.ID || more[2].data.Data["user_id"] != "u3" {
		t.Fatalf("resumed after %s: %+v", got[1].id, more)
	}
	// A bad Last-Event-ID is a 400 before the stream starts.
	req, _ := http.NewRequest(http.MethodGet, ts.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", "!!")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad Last-Event-ID: %d", resp.StatusCode)
	}
}

// rawEvents reads a SKU's events (query's page) as the bytes the feed
// sent, by id, in order.
func (ts *testServer) rawEvents(campaignID, skuID, query string) (ids []string, raw map[string]string) {
	ts.t.Helper()
	r := ts.admin(http.MethodGet, feedPath(campaignID, skuID, query), nil)
	var p struct {
		Events []json.RawMessage `json:"events"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.raw, &p) != nil {
		ts.t.Fatalf("feed: %v", r)
	}
	raw = map[string]string{}
	for _, e := range p.Events {
		var head struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(e, &head); err != nil {
			ts.t.Fatal(err)
		}
		ids = append(ids, head.ID)
		raw[head.ID] = string(e)
	}
	return ids, raw
}

// The same durable record gives the same id and the same payload, byte
// for byte, across a snapshot and a restart (the event cache starts empty,
// the reservations' views come from the recovered state), and a durable
// SOLD_OUT is an event when asked for with types=.
func TestFeedPayloadsStableAcrossSnapshotAndRestart(t *testing.T) {
	dir := t.TempDir()
	opts := serverOptions{dir: dir, engine: func(c *actors.Config) { c.FeedRetainRecords = 1000 }}
	ts := startServer(t, opts)
	ts.define(campaign("sr", "15m", map[string]int{"s": 2}))
	a := ts.reserve("sr", "s", "req-a", "alice")
	b := ts.reserve("sr", "s", "req-b", "bob")
	// Straight to the engine (the ingress would answer SOLD_OUT itself):
	// the actor records the rejection.
	if res, err := ts.engine.Reserve(context.Background(), "sr", "s", "req-c", "carol"); err != nil || res.Outcome != sku.OutcomeSoldOut {
		t.Fatalf("carol's reserve: %+v %v", res, err)
	}
	want(t, ts.post("/v1/reservations/"+a.str("reservation_id")+"/payment", map[string]any{"payment_id": "pay-a", "amount": 500}), http.StatusOK, "")
	want(t, ts.admin(http.MethodPost, "/admin/campaigns/sr/skus/s/snapshot", nil), http.StatusOK, "")
	want(t, ts.post("/v1/reservations/"+b.str("reservation_id")+"/cancel", nil), http.StatusOK, "")
	const all = "?types=seckill.sku.defined,seckill.reservation.created,seckill.request.rejected,seckill.reservation.paid,seckill.reservation.closed"
	ids, before := ts.rawEvents("sr", "s", all)
	if got := strings.Count(strings.Join(ids, " "), "-"); got != 6 {
		t.Fatalf("events %v, want 6 (defined, 2 created, rejected, paid, closed)", ids)
	}
	rejected := 0
	for _, e := range before {
		if strings.Contains(e, `"type":"seckill.request.rejected"`) && strings.Contains(e, `"outcome":"SOLD_OUT"`) && strings.Contains(e, `"user_id":"carol"`) {
			rejected++
		}
	}
	if rejected != 1 {
		t.Fatalf("want carol's SOLD_OUT as one seckill.request.rejected event: %v", before)
	}
	ts.stop()

	ts2 := startServer(t, opts)
	ids2, after := ts2.rawEvents("sr", "s", all)
	if strings.Join(ids2, " ") != strings.Join(ids, " ") {
		t.Fatalf("ids after the restart %v, before %v", ids2, ids)
	}
	for _, id := range ids {
		if after[id] != before[id] {
			t.Fatalf("event %s changed across the restart:\n%s\n%s", id, before[id], after[id])
		}
	}
}
