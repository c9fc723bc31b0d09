package relay_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
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
