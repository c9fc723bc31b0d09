// Package relay tails the event feed of a seckilld campaign
// (GET /admin/campaigns/{c}/events, read with package client's Feed: its
// retries, Retry-After and refusals) and publishes every event to a broker,
// at least once and in log order per SKU. It keeps no state of its own:
// each message carries the campaign cursor as of that event, the sink
// keeps the progress past its last message over records nothing was
// published for (Sink.Advance; NATS: a key-value bucket,
// ProgressBucket), and on start (or after any error) the
// relay asks the sink where it stands and goes on from there
// (TigerBeetle's CDC keeps its progress in the broker the same way).
// Consumers deduplicate by the event id (CloudEvents: source + id names
// one event; the id is the same for every re-send).
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
	"github.com/seckill/seckill/feed"
)

// Defaults of Config.
const (
	DefaultLimit = 500
	DefaultWait  = 30 * time.Second
	// DefaultRetryAfter is the pause after an error before the relay
	// resumes from the sink.
	DefaultRetryAfter = time.Second
	// publishBound bounds the wait for a batch's acks once the relay is
	// told to stop.
	publishBound = 30 * time.Second
	// advanceEvery is how often at most the relay gives the sink its
	// progress over pages it published nothing for (Sink.Advance); it
	// gives it too when it stops.
	advanceEvery = time.Second
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
	// HTTPClient, when set, sends the feed's requests (package client's
	// Options.HTTPClient: its Timeout should be 0).
	HTTPClient *http.Client
	// Logger defaults to slog.Default().
	Logger *slog.Logger
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
	// Resume returns where the relay goes on: the progress Advance
	// recorded if no message was stored after it, else the Cursor of the
	// last message the sink holds, "" when it holds none (or does not
	// exist yet: it creates nothing).
	Resume(ctx context.Context) (string, error)
	// Open makes the sink ready to store (the NATS sink creates its
	// stream if it is missing). The relay calls it once the feed has
	// answered a page, before any Publish, so that a relay the feed
	// refuses (an unknown campaign, a wrong token) leaves nothing behind.
	Open(ctx context.Context) error
	// Publish stores msgs in order and returns once every one is stored,
	// or with the first error; after an error the relay calls Resume
	// again, so a sink must never store a message after one that failed.
	Publish(ctx context.Context, msgs []Message) error
	// Advance records that the relay read the feed to cursor past the
	// last message stored, over records it publishes nothing for (types
	// Config.Types leaves out): Resume returns cursor until a message is
	// stored after it. Without it a relay started again would read those
	// records anew, and, once snapshots truncated them, stop on the
	// feed's 410 although nothing it relays is gone. An error wrapping
	// ErrSinkMoved (another relay recorded a progress since Resume) makes
	// the relay resume from the sink; any other is logged and the
	// progress given again later.
	Advance(ctx context.Context, cursor string) error
}

// ErrFeed is what every *FeedError is (errors.Is): an answer of the feed
// the relay cannot go past by itself.
var ErrFeed = errors.New("relay: the feed refused the relay")

// ErrSinkRefused is what a sink's error wraps when a retry would be
// refused again and an operator acts (NATSSink: JetStream refused to
// create the stream, its subjects held by another stream; the stream's
// last message is not a relay's): Run returns it instead of retrying.
var ErrSinkRefused = errors.New("relay: the sink refused the relay")

// FeedError is an answer of the feed the relay cannot go past by itself:
// 401 (seckilld refused the admin token), 404 (no such campaign, or no
// seckilld under FeedURL: a wrong path, servesSeckill), 410
// CURSOR_COMPACTED (records the relay had not read are gone), 409
// CURSOR_DIVERGED (seckilld was restored to an earlier point: an operator
// runs Reanchor), 400 (BAD_CURSOR, or
// CAMPAIGN_FEED_TOO_WIDE: the campaign has more SKUs than its feed serves;
// relay each SKU's feed instead), and 414 or 431 (the request was too
// large for the server). A retry would be refused again. It says the
// client's refusal in the operator's terms; errors.As and errors.Is find
// the refusal too (e.g. errors.Is(err, client.ErrCursorDiverged)).
type FeedError struct {
	// Status is the HTTP status.
	Status int
	// Refusal is the answer: its reason (Code), the server's message
	// (Detail), and the positions a 410 or 409 names.
	Refusal *client.Error
	// what says, in the operator's terms, what the feed refused.
	what string
}

// Error renders "relay: <what was refused>: <status> <status text>: <reason>: <the server's message>".
func (e *FeedError) Error() string {
	r := e.Refusal
	s := fmt.Sprintf("relay: %s: %d %s: ", e.what, e.Status, http.StatusText(e.Status))
	if r.Code != http.StatusText(e.Status) { // a JSON error body: its reason
		s += r.Code + ": "
	}
	s += r.Detail
	switch {
	case r.FirstIndex > 0:
		s += fmt.Sprintf(" (first_index %d)", r.FirstIndex)
	case r.ForkIndex > 0 && r.History == "": // a log that kept the stream's history (an older copy)
		s += fmt.Sprintf(" (fork_index %d)", r.ForkIndex)
	case r.ForkIndex > 0:
		s += fmt.Sprintf(" (fork_index %d, history %s)", r.ForkIndex, r.History)
	}
	return s
}

// Is makes every FeedError an ErrFeed.
func (e *FeedError) Is(target error) bool { return target == ErrFeed }

// Unwrap returns the client's refusal.
func (e *FeedError) Unwrap() error { return e.Refusal }

// feedRefusal returns the *FeedError of a refusal of the feed of cfg, nil
// for an error a retry may get past.
func feedRefusal(ctx context.Context, err error, cfg *Config) error {
	var e *client.Error
	if !errors.As(err, &e) {
		return nil
	}
	var what string
	switch e.Status {
	case http.StatusUnauthorized:
		what = "seckilld refused the admin token (--admin-token)"
	case http.StatusNotFound:
		what = fmt.Sprintf("seckilld has no campaign %q (--campaign)", cfg.CampaignID)
		if !servesSeckill(ctx, cfg) {
			base := strings.TrimRight(cfg.FeedURL, "/")
			what = fmt.Sprintf("the feed URL answered 404 for GET %s/admin/campaigns/%s/events, and no seckilld answers %s/healthz: a wrong path? "+
				"--feed is the base URL of seckilld or seckill-router, such as http://127.0.0.1:8080 (behind a gateway, with its path prefix), "+
				"under which the relay reads /admin/campaigns/<campaign>/events", base, cfg.CampaignID, base)
		}
	case http.StatusGone:
		// The relay reads past the records it leaves out and records that
		// (Sink.Advance): a 410 is records after its position that it
		// never read, one of which may be of a type it relays.
		what = fmt.Sprintf("the feed no longer holds records of SKU %q after the stream's position (its log starts at record %d): "+
			"snapshots truncated them before the relay read them, and the stream would lack any of the types it relays among them; "+
			"keep records for the relay longer (seckilld's --feed-retain-records or --feed-retain-age), "+
			"or consume this campaign from the feed (seckill-orders --feed takes such a SKU from the export)", e.SKUID, e.FirstIndex)
	case http.StatusConflict:
		what = "the feed refused the cursor the stream resumes from"
		if errors.Is(err, client.ErrCursorDiverged) {
			what += " (seckilld was restored to an earlier point: run seckill-relay reanchor with the relay's flags, then start the relay again)"
		}
	case http.StatusBadRequest:
		what = "the feed refused the request"
	case http.StatusRequestURITooLong, http.StatusRequestHeaderFieldsTooLarge:
		what = "the feed's server refused a request too large for it"
	default:
		return nil
	}
	return &FeedError{Status: e.Status, Refusal: e, what: what}
}

// servesSeckill reports whether cfg.FeedURL is the base URL of a
// seckilld or a seckill-router: its /healthz answers 200, as theirs do.
// It tells a 404 of the feed for a campaign the server does not have from
// one of a URL under which no seckill serves (a wrong path).
func servesSeckill(ctx context.Context, cfg *Config) bool {
	ctx, cancel := context.WithTimeout(ctx, healthzTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(cfg.FeedURL, "/")+"/healthz", nil)
	if err != nil {
		return false
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// healthzTimeout bounds servesSeckill's request.
const healthzTimeout = 5 * time.Second

// Run relays until ctx is done (a batch being published is first stored
// and acknowledged, within 30 s; it then logs "relay: stopped" with what
// it did and returns ctx.Err()) or the feed refuses the relay (a
// *FeedError, errors.Is ErrFeed), no longer holds the first records of a
// SKU the sink holds nothing of (a *GapError, errors.Is ErrCompacted), or
// the sink refuses for good (an error wrapping ErrSinkRefused). Any other error (the feed unreachable,
// a publish that failed) is logged, and the relay resumes from the sink
// after RetryAfter.
func Run(ctx context.Context, cfg Config, sink Sink) error {
	cfg.fill()
	c, err := client.New(client.Options{BaseURL: cfg.FeedURL, AdminToken: cfg.AdminToken, HTTPClient: cfg.HTTPClient})
	if err != nil {
		return err
	}
	var p progress
	for {
		err := relayOnce(ctx, c, &cfg, sink, &p)
		if ctx.Err() != nil {
			cfg.Logger.Info("relay: stopped", "campaign", cfg.CampaignID, "cursor", p.cursor, "relayed", p.relayed)
			return ctx.Err()
		}
		if errors.Is(err, ErrFeed) || errors.Is(err, ErrSinkRefused) || errors.Is(err, ErrCompacted) {
			return err
		}
		cfg.Logger.Warn("relay: resuming from the sink after an error", "err", err, "after", cfg.RetryAfter)
		select {
		case <-time.After(cfg.RetryAfter):
		case <-ctx.Done():
			cfg.Logger.Info("relay: stopped", "campaign", cfg.CampaignID, "cursor", p.cursor, "relayed", p.relayed)
			return ctx.Err()
		}
	}
}

// progress is what a Run did: where the sink says the relay stands as far
// as the relay knows (resumed from, published or advanced since), and the
// events it published.
type progress struct {
	cursor  string
	relayed int
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

// relayOnce resumes from the sink and relays pages until an error,
// keeping p up to date.
func relayOnce(ctx context.Context, c *client.Client, cfg *Config, sink Sink, p *progress) error {
	cursor, err := sink.Resume(ctx)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	p.cursor = cursor
	err = checkHeld(ctx, c, sink)
	if refused := feedRefusal(ctx, err, cfg); refused != nil {
		return refused
	}
	if err != nil {
		return fmt.Errorf("checking the sink against the feed: %w", err)
	}
	cfg.Logger.Info("relay: resuming", "campaign", cfg.CampaignID, "cursor", cursor)
	starts := newStartChecker(cfg.Types, feedOwns(c, cfg.CampaignID))
	// unsaid is the feed's cursor past the last message stored, over
	// pages without a message, that the sink was not given yet: given at
	// most every advanceEvery, and when the relay stops (a stop loses
	// none of it).
	var unsaid string
	var said time.Time
	defer func() {
		if unsaid != "" {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishBound)
			defer cancel()
			if sink.Advance(actx, unsaid) == nil {
				p.cursor = unsaid
			}
		}
	}()
	for opened := false; ; {
		page, err := c.Feed(ctx, client.FeedRequest{CampaignID: cfg.CampaignID, After: cursor, Limit: cfg.Limit, Wait: cfg.Wait, Types: cfg.Types})
		if refused := feedRefusal(ctx, err, cfg); refused != nil {
			return refused
		}
		if err != nil {
			return fmt.Errorf("feed: %w", err)
		}
		msgs, err := messages(ctx, page, cursor, starts)
		if err != nil {
			return err
		}
		if !opened {
			if err := sink.Open(ctx); err != nil {
				return fmt.Errorf("open: %w", err)
			}
			opened = true
		}
		switch {
		case len(msgs) > 0:
			// A stop lets the batch in flight be stored and acknowledged
			// (within publishBound), so that the stop's log line says what
			// the sink holds: a message stored whose ack was not awaited
			// would be missing from it. The last message carries the
			// page's next cursor, past any progress not given yet.
			unsaid = ""
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishBound)
			err := sink.Publish(pctx, msgs)
			cancel()
			if err != nil {
				return fmt.Errorf("publish: %w", err)
			}
			p.cursor, p.relayed = msgs[len(msgs)-1].Cursor, p.relayed+len(msgs)
		case page.NextCursor != cursor:
			unsaid = page.NextCursor
			if time.Since(said) >= advanceEvery {
				// A progress the sink did not take costs a re-read (or a
				// 410 once those records are truncated) at the next start,
				// not the relay: it goes on, and tries again later. One
				// another relay changed since Resume is re-read first
				// (ErrSinkMoved).
				err := sink.Advance(ctx, unsaid)
				if errors.Is(err, ErrSinkMoved) {
					return fmt.Errorf("advance: %w", err)
				}
				if err != nil {
					cfg.Logger.Warn("relay: the sink did not record the progress past records left out", "err", err, "cursor", unsaid)
				} else {
					p.cursor, unsaid = unsaid, ""
				}
				said = time.Now()
			}
		}
		cursor = page.NextCursor
	}
}

// messages turns a page into messages, each with the campaign cursor as
// of it: the cursor before the page, advanced event by event, and for the
// last one the page's own next cursor (every record up to it was sent in
// the page or left out by the types: a relay resuming there misses
// nothing, and past the records left out, which snapshots may truncate).
// The feed's cursor holds one position per SKU, and so does a page's
// last message. The others hold the positions of the cursor before the
// page, and of a SKU whose history forked (a restore) in the page, its
// new history's too: its position before the fork is dropped when starts
// knows its SKU (it met an event of that history, or asked the feed whose
// the position is), else it stays until the page's last message. A SKU whose first records the
// feed no longer holds is a *GapError (starts).
func messages(ctx context.Context, page *client.FeedPage, cursor string, starts *startChecker) ([]Message, error) {
	positions, err := feed.ParseCampaignCursor(cursor)
	if err != nil {
		return nil, err
	}
	msgs := make([]Message, 0, len(page.Events))
	for _, h := range page.Events {
		parts := strings.Split(h.Source, "/") // /seckill/{campaign}/{sku}
		if len(parts) != 4 || h.ID == "" || h.Type == "" {
			return nil, fmt.Errorf("feed: event without id, type or source /seckill/{campaign}/{sku}: %s", h.Raw)
		}
		skuID := parts[3]
		if err := starts.check(ctx, positions, skuID, h.ID, h.SeckillIndex); err != nil {
			return nil, err
		}
		history, _, _ := strings.Cut(h.ID, "-")
		if _, known := positions[history]; !known {
			// The SKU's history forked: its position before the fork is
			// passed.
			for old, sku := range starts.owner {
				if sku == skuID && old != history {
					delete(positions, old)
				}
			}
		}
		positions[history] = h.ID // ParseCampaignCursor keys positions by history
		msgs = append(msgs, Message{ID: h.ID, Type: h.Type, SKUID: skuID, Index: h.SeckillIndex,
			Cursor: feed.CampaignCursor(positions), Event: h.Raw})
	}
	if n := len(msgs); n > 0 && page.NextCursor != "" {
		msgs[n-1].Cursor = page.NextCursor
	}
	return msgs, nil
}
