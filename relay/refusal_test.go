package relay_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/relay"
)

// emptySink holds no message and stores nothing.
type emptySink struct{}

func (emptySink) Resume(context.Context) (string, error) { return "", nil }
func (emptySink) Open(context.Context) error             { return errors.New("unexpected open") }
func (emptySink) Publish(context.Context, []relay.Message) error {
	return errors.New("unexpected publish")
}
func (emptySink) Advance(context.Context, string) error { return errors.New("unexpected advance") }

// The relay stops with ErrFeed, instead of retrying forever, when the feed
// refuses a campaign too wide for its cursor (400 CAMPAIGN_FEED_TOO_WIDE)
// or a request too large for the server (431, 414).
func TestRelayStopsOnRefusal(t *testing.T) {
	for _, answer := range []struct {
		status int
		body   string
	}{
		{http.StatusBadRequest, `{"error":"CAMPAIGN_FEED_TOO_WIDE","detail":"campaign c has 300 SKUs"}`},
		{http.StatusRequestHeaderFieldsTooLarge, "Request Header Fields Too Large"},
		{http.StatusRequestURITooLong, "URI Too Long"},
	} {
		calls := 0
		feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls++
			w.WriteHeader(answer.status)
			w.Write([]byte(answer.body))
		}))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := relay.Run(ctx, relay.Config{FeedURL: feed.URL, AdminToken: token, CampaignID: "c", RetryAfter: time.Millisecond, Logger: quiet}, emptySink{})
		cancel()
		feed.Close()
		if !errors.Is(err, relay.ErrFeed) || calls != 1 {
			t.Fatalf("%d: Run returned %v after %d requests, want ErrFeed after 1", answer.status, err, calls)
		}
	}
}

// A --feed whose path is wrong (a prefix seckilld does not serve) is not
// "no campaign": the relay stops with an error that says the feed URL
// answered 404 for the URL it asked for (the campaign feed's route,
// /admin/campaigns/{c}/events) and the form it expects, while a campaign seckilld does
// not have is named as such.
func TestRelayNamesAWrongFeedPath(t *testing.T) {
	base := startSeckill(t)
	run := func(feedURL string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return relay.Run(ctx, relay.Config{FeedURL: feedURL, AdminToken: token, CampaignID: "c", RetryAfter: time.Millisecond, Logger: quiet}, emptySink{})
	}
	err := run(base + "/seckill")
	t.Logf("wrong path: %v", err)
	if !errors.Is(err, relay.ErrFeed) || strings.Contains(err.Error(), "no campaign") ||
		!strings.Contains(err.Error(), base+"/seckill/admin/campaigns/c/events") || !strings.Contains(err.Error(), "wrong path") {
		t.Fatalf("a wrong --feed path: %v", err)
	}
	err = run(base)
	t.Logf("no campaign: %v", err)
	if !errors.Is(err, relay.ErrFeed) || !strings.Contains(err.Error(), `seckilld has no campaign "c"`) {
		t.Fatalf("a campaign seckilld does not have: %v", err)
	}
}
