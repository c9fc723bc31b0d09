package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/feed"
)

// TypeReanchored is the type of the message Reanchor stores in the sink
// for a SKU restored to an earlier point: the SKU's messages stored before
// it whose log index (seckillindex, Seckill-Index) is past its fork_index
// are of records the restore abandoned; the SKU's messages after it are
// the restored log's, from the record after fork_index on.
const TypeReanchored = "seckill.relay.reanchored"

// ReanchoredData is the data of a TypeReanchored message.
type ReanchoredData struct {
	CampaignID string `json:"campaign_id"`
	SKUID      string `json:"sku_id"`
	// ForkIndex is the last record the restored log shares with what the
	// sink holds; History the restored log's history after it (its
	// events' ids begin with it).
	ForkIndex uint64 `json:"fork_index"`
	History   string `json:"history"`
	// AbandonedAfter is the position the sink stood at in the SKU's log
	// (an event id) when the feed refused it.
	AbandonedAfter string `json:"abandoned_after"`
}

// OlderCopy reports whether the restored log kept the history the sink
// stood in: a seckilld started on an older copy of its data dir, whose
// events after ForkIndex re-use the abandoned events' ids.
func (d ReanchoredData) OlderCopy() bool { return strings.HasPrefix(d.AbandonedAfter, d.History+"-") }

// reanchorRounds bounds Reanchor's rounds: one per diverged SKU, of at
// most feed.CampaignFeedMaxSKUs.
const reanchorRounds = feed.CampaignFeedMaxSKUs + 1

// Reanchor moves a sink the feed refuses with 409 CURSOR_DIVERGED (its
// campaign's seckilld was restored to an earlier point, seckillctl
// restore --until-*) onto the restored log, SKU by SKU: for each SKU the
// feed names, it stores one TypeReanchored message whose cursor holds the
// SKU's position at the fork index in the restored history, so that the
// relay started again goes on with the restored log's records after it
// and every consumer of the sink can tell the abandoned messages from the
// new ones. It returns what it stored (none: the feed takes the sink's
// cursor). Run it with the relay stopped: a relay running beside it makes
// its store fail (a sink takes one writer) and it returns that error.
func Reanchor(ctx context.Context, cfg Config, sink Sink) ([]ReanchoredData, error) {
	cfg.fill()
	c, err := client.New(client.Options{BaseURL: cfg.FeedURL, AdminToken: cfg.AdminToken, HTTPClient: cfg.HTTPClient})
	if err != nil {
		return nil, err
	}
	var done []ReanchoredData
	for range reanchorRounds {
		cursor, err := sink.Resume(ctx)
		if err != nil {
			return done, fmt.Errorf("resume: %w", err)
		}
		_, err = c.Feed(ctx, client.FeedRequest{CampaignID: cfg.CampaignID, After: cursor, Limit: 1, Types: cfg.Types})
		if err == nil {
			// An older copy that recorded past the cursor takes it: the
			// messages the sink holds tell.
			err = checkHeld(ctx, c, sink)
		}
		var refusal *client.Error
		if !errors.Is(err, client.ErrCursorDiverged) || !errors.As(err, &refusal) || refusal.SKUID == "" {
			if refused := feedRefusal(ctx, err, &cfg); refused != nil {
				return done, refused
			}
			return done, err
		}
		d, msg, err := reanchored(ctx, c, &cfg, cursor, refusal)
		if err != nil {
			return done, err
		}
		if err := sink.Publish(ctx, []Message{msg}); err != nil {
			return done, fmt.Errorf("storing the re-anchoring of SKU %s: %w", d.SKUID, err)
		}
		done = append(done, d)
	}
	return done, fmt.Errorf("relay: the feed still refuses the sink's cursor after %d SKUs were re-anchored", reanchorRounds)
}

// reanchored builds the TypeReanchored message of the SKU the feed's 409
// names: the cursor without the SKU's position (the campaign cursor holds
// no SKU ids: the SKU's own feed refuses another SKU's position with 400
// BAD_CURSOR), and with the SKU's position at the fork index in the
// restored history (the history of the position, for a seckilld started
// on a copy older than the cursor, which kept it).
func reanchored(ctx context.Context, c *client.Client, cfg *Config, cursor string, refusal *client.Error) (ReanchoredData, Message, error) {
	d := ReanchoredData{CampaignID: cfg.CampaignID, SKUID: refusal.SKUID, ForkIndex: refusal.ForkIndex, History: refusal.History}
	positions, err := feed.ParseCampaignCursor(cursor)
	if err != nil {
		return d, Message{}, fmt.Errorf("%w: the sink's cursor %q: %v", ErrSinkRefused, cursor, err)
	}
	accepted := "" // the SKU's position the SKU's own feed takes
	for h, id := range positions {
		_, err := c.Feed(ctx, client.FeedRequest{CampaignID: cfg.CampaignID, SKUID: d.SKUID, After: id, Limit: 1})
		var e *client.Error
		switch {
		case errors.As(err, &e) && e.Code == "BAD_CURSOR": // another SKU's
			continue
		case errors.Is(err, client.ErrCursorDiverged):
			d.AbandonedAfter = id
		case err == nil:
			accepted = id
		case err != nil && !(errors.As(err, &e) && e.Status < http.StatusInternalServerError && e.Status != http.StatusTooManyRequests):
			return d, Message{}, fmt.Errorf("reading SKU %s's feed after %s: %w", d.SKUID, id, err)
		}
		delete(positions, h)
	}
	if d.AbandonedAfter == "" && refusal.History == "" {
		// An older copy that recorded past the cursor (client.CheckApplied)
		// takes the SKU's position: that position is the abandoned one.
		d.AbandonedAfter = accepted
	}
	if d.AbandonedAfter == "" {
		return d, Message{}, fmt.Errorf("relay: the feed refused SKU %s's position, and none of the cursor's positions is refused by the SKU's own feed: try again", d.SKUID)
	}
	if d.History == "" {
		d.History, _, _ = strings.Cut(d.AbandonedAfter, "-")
	}
	positions[d.History] = d.History + "-" + strconv.FormatUint(d.ForkIndex, 10)
	data, err := json.Marshal(d)
	if err != nil {
		return d, Message{}, err
	}
	id := "reanchor-" + d.AbandonedAfter
	event, err := json.Marshal(client.Event{SpecVersion: "1.0", ID: id, Source: "/seckill/" + d.CampaignID + "/" + d.SKUID,
		Type: TypeReanchored, Time: time.Now().UTC(), SeckillIndex: d.ForkIndex, Data: data})
	if err != nil {
		return d, Message{}, err
	}
	return d, Message{ID: id, Type: TypeReanchored, SKUID: d.SKUID, Index: d.ForkIndex, Cursor: feed.CampaignCursor(positions), Event: event}, nil
}
