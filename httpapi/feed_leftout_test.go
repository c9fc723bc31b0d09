package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/feed"
)

// A stream's id: moves past the records its types leave out, as a page's
// next_cursor does: an EventSource resumes with the last id it got, and
// one that stayed at the last event sent would read those records again
// and, once snapshots truncated them, get CURSOR_COMPACTED although it
// missed nothing of its types. Both the SKU's feed and the campaign's.
func TestFeedSSEMovesPastRecordsLeftOut(t *testing.T) {
	ts := startServer(t, serverOptions{engine: func(c *actors.Config) {
		c.WAL.SegmentSize = 512
		c.SnapshotKeep = 1
	}})
	ts.define(campaign("lo", "15m", map[string]int{"s": 200}))
	for i := 0; i < 60; i++ {
		ts.reserve("lo", "s", fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i))
	}
	all := ts.page("lo", "s", "")
	last := all.NextCursor // the last record: a reservation, left out below
	skuPath := feedPath("lo", "s", "?types=seckill.sku.defined")
	campaignPath := "/admin/campaigns/lo/events?types=seckill.sku.defined"
	campaignLast := feed.CampaignCursor(map[string]string{historyOf(last): last})
	streams := []struct{ path, want string }{{skuPath, last}, {campaignPath, campaignLast}}
	for _, c := range streams {
		if got := lastIDUntil(t, ts, c.path, "", c.want); got != c.want {
			t.Fatalf("%s: the stream's last id is %s after the records left out, want %s", c.path, got, c.want)
		}
	}
	// Snapshots truncate the records left out: a stream resumed with its
	// last id goes on after them.
	want(t, ts.admin(http.MethodPost, "/admin/campaigns/lo/skus/s/snapshot", nil), http.StatusOK, "")
	eventually(t, 20*time.Second, "the log truncated", func() bool {
		return ts.admin(http.MethodGet, feedPath("lo", "s", "?after="+all.Events[0].ID), nil).status == http.StatusGone
	})
	ts.reserve("lo", "s", "r-after", "u-after")
	for _, c := range streams {
		if next := lastIDUntil(t, ts, c.path, c.want, ""); next == "" {
			t.Fatalf("%s resumed after %s once its records were truncated: no message (an event: error?)", c.path, c.want)
		}
	}
}

// lastIDUntil reads the stream at path (after lastID when not empty) until
// a message has id want (want "": until the first), within 20 s, and
// returns the last id it read. Messages without data (an id: alone)
// count.
func lastIDUntil(t *testing.T, ts *testServer, path, lastID, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.base+path, nil)
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
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d", path, resp.StatusCode)
	}
	var id, seen string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case line == "" && id != "":
			seen = id
			if want == "" || seen == want {
				return seen
			}
		}
	}
	return seen // the deadline: the caller says what it lacked
}
