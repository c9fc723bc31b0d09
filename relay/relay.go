// Package relay tails the event feed of a seckilld campaign
// (GET /admin/campaigns/{c}/events) and publishes every event to a broker,
// at least once and in log order per SKU. It keeps no state of its own:
// each message carries the campaign cursor as of that event, and on start
// (or after any error) the relay asks the sink for the cursor of the last
// message it holds and goes on from there (TigerBeetle's CDC keeps its
// progress in the broker the same way). Consumers deduplicate by the
// event id (CloudEvents: source + id names one event; the id is the same
// for every re-send).
//
// A sink is one small type (Sink); NATS JetStream is the one built here
// (nats.go), with Nats-Msg-Id = event id and an expected last sequence on
// every publish, so that a second relay on the same stream cannot
// interleave messages: its publishes fail and it starts again from the
// stream.
package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/httpapi"
)

// Defaults of Config.
const (
	DefaultLimit = 500
	DefaultWait  = 30 * time.Second
	// DefaultRetryAfter is the pause after an error before the relay
	// resumes from the sink.
	DefaultRetryAfter = time.Second
)

// Config configures Run.
type Config struct {
	// FeedURL is the base URL of seckilld (http://host:port).
	FeedURL string
	// AdminToken is seckilld's admin bearer token.
	AdminToken string
	// CampaignID is the campaign whose feed is relayed.
	CampaignID string
	// Types, when set, is the feed's types= (e.g. to add
	// seckill.request.rejected); empty: the feed's default types.
	Types []string
	// Limit is the events per feed page (default DefaultLimit, at most 1000).
	Limit int
	// Wait is the feed's long poll (default DefaultWait, at most 60 s).
	Wait time.Duration
	// RetryAfter is the pause after an error (default DefaultRetryAfter).
	RetryAfter time.Duration
	// Client is the HTTP client under the feed's client (package client);
	// default: its keep-alive one, each attempt bounded by Wait + 10 s.
	Client *http.Client
	// Logger defaults to slog.Default().
	Logger *slog.Logger

	feed *client.Client
}

// Message is one event to publish.
type Message struct {
	// ID is the event id: the broker's deduplication key.
	ID string
	// Type is the CloudEvents type, e.g. seckill.reservation.created.
	Type string
	// SKUID is the SKU of the event (from its source).
	SKUID string
	// Index is the event's log index (seckillindex).
	Index uint64
	// Cursor is the campaign cursor as of this event: where a relay that
	// finds this message last in the sink resumes.
	Cursor string
	// Event is the CloudEvents JSON object as the feed sent it.
	Event json.RawMessage
}

// Sink is where the relay publishes.
type Sink interface {
	// Resume returns the Cursor of the last message the sink holds, ""
	// when it holds none.
	Resume(ctx context.Context) (string, error)
	// Publish stores msgs in order and returns once every one is stored,
	// or with the first error; after an error the relay calls Resume
	// again, so a sink must never store a message after one that failed.
	Publish(ctx context.Context, msgs []Message) error
}

// ErrFeed wraps answers of the feed the relay cannot go past by itself:
// 410 CURSOR_COMPACTED, 409 CURSOR_DIVERGED (an operator resynchronises
// the consumers and the stream), 400 (BAD_CURSOR, or
// CAMPAIGN_FEED_TOO_WIDE: the campaign has more SKUs than its feed serves;
// relay each SKU's feed instead), 401, 404, and 414 or 431 (the request
// was too large for the server: a retry would be refused again).
var ErrFeed = errors.New("relay: the feed refused the cursor")

// Run relays until ctx is done (it then returns ctx.Err()) or the feed
// refuses the position (an error wrapping ErrFeed). Any other error (the
// feed unreachable, a publish that failed) is logged, and the relay
// resumes from the sink after RetryAfter.
func Run(ctx context.Context, cfg Config, sink Sink) error {
	cfg.fill()
	feed, err := client.New(client.Options{BaseURL: cfg.FeedURL, AdminToken: cfg.AdminToken, HTTPClient: cfg.Client})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrFeed, err)
	}
	cfg.feed = feed
	for {
		err := relayOnce(ctx, &cfg, sink)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, ErrFeed) {
			return err
		}
		cfg.Logger.Warn("relay: resuming from the sink after an error", "err", err, "after", cfg.RetryAfter)
		select {
		case <-time.After(cfg.RetryAfter):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *Config) fill() {
	if c.Limit <= 0 {
		c.Limit = DefaultLimit
	}
	if c.Wait <= 0 {
		c.Wait = DefaultWait
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = DefaultRetryAfter
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// relayOnce resumes from the sink and relays pages until an error.
func relayOnce(ctx context.Context, cfg *Config, sink Sink) error {
	cursor, err := sink.Resume(ctx)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	cfg.Logger.Info("relay: resuming", "campaign", cfg.CampaignID, "cursor", cursor)
	for {
		page, err := fetch(ctx, cfg, cursor)
		if err != nil {
			return err
		}
		msgs, err := messages(page, cursor)
		if err != nil {
			return err
		}
		if len(msgs) > 0 {
			if err := sink.Publish(ctx, msgs); err != nil {
				return fmt.Errorf("publish: %w", err)
			}
		}
		cursor = page.NextCursor
	}
}

// fetch reads one page of the campaign feed after cursor (the client's
// retries of a 429 or 503 included).
func fetch(ctx context.Context, cfg *Config, cursor string) (*client.FeedPage, error) {
	page, err := cfg.feed.Feed(ctx, client.FeedRequest{CampaignID: cfg.CampaignID, After: cursor, Limit: cfg.Limit, Wait: cfg.Wait, Types: cfg.Types})
	var e *client.Error
	if errors.As(err, &e) && e.Status >= 400 && e.Status < 500 && e.Status != http.StatusTooManyRequests && e.Status != http.StatusRequestTimeout {
		return nil, fmt.Errorf("%w: %w", ErrFeed, err)
	}
	return page, err
}

// messages turns a page into messages, each with the campaign cursor as
// of it (the cursor before the page, advanced event by event).
func messages(page *client.FeedPage, cursor string) ([]Message, error) {
	positions, err := httpapi.ParseCampaignCursor(cursor)
	if err != nil {
		return nil, err
	}
	msgs := make([]Message, 0, len(page.Events))
	for _, h := range page.Events {
		parts := strings.Split(h.Source, "/") // /seckill/{campaign}/{sku}
		if len(parts) != 4 || h.ID == "" || h.Type == "" {
			return nil, fmt.Errorf("feed: event without id, type or source /seckill/{campaign}/{sku}: %s", h.Raw)
		}
		history, _, _ := strings.Cut(h.ID, "-")
		positions[history] = h.ID // ParseCampaignCursor keys positions by history
		msgs = append(msgs, Message{ID: h.ID, Type: h.Type, SKUID: parts[3], Index: h.SeckillIndex,
			Cursor: httpapi.CampaignCursor(positions), Event: h.Raw})
	}
	return msgs, nil
}
