package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/relay"
)

// Reanchor re-anchors consumer of the stream past the relay's
// relay.TypeReanchored messages that follow its saved cursor (the relay
// stores one per SKU restored to an earlier point: seckill-relay
// reanchor), in one transaction per SKU: what the SKU's abandoned
// messages (before the marker, past its fork index) touched is set apart
// as for the feed (settle), the SKU is taken from the restored seckilld's
// export (seckill: the FeedSource of its campaign), and the cursor moves
// to the marker with a floor at the export's position, below which the
// SKU's messages after the marker (the restored log's, re-read by the
// export) are skipped. It returns what it did (none: the next message is
// not a marker). Run it with the service stopped.
func (s *JetStreamSource) Reanchor(ctx context.Context, store *Store, consumer string, seckill *FeedSource) ([]Reanchored, error) {
	js, err := jetstream.New(s.Conn)
	if err != nil {
		return nil, err
	}
	var done []Reanchored
	for range reanchorRounds {
		cursor, err := store.Cursor(ctx, consumer)
		if err != nil {
			return done, err
		}
		after, created, floors, err := parseStreamCursor(cursor)
		if err != nil {
			return done, err
		}
		stream, err := js.Stream(ctx, s.Stream)
		if err != nil {
			return done, fmt.Errorf("stream %s: %w", s.Stream, err)
		}
		at := stream.CachedInfo().Created.UnixNano()
		if created != 0 && created != at {
			return done, fmt.Errorf("%w: stream %s is not the one the cursor %q counts the messages of (created at another time)", ErrPosition, s.Stream, cursor)
		}
		m, err := stream.GetMsg(ctx, after+1)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return done, nil
		}
		if err != nil {
			return done, fmt.Errorf("stream %s message %d: %w", s.Stream, after+1, err)
		}
		var e client.Event
		if json.Unmarshal(m.Data, &e) != nil || e.Type != relay.TypeReanchored {
			return done, nil
		}
		var d *Diverged
		if err := s.diverged(e, m.Sequence); !errors.As(err, &d) {
			return done, err
		}
		if d.CampaignID != seckill.CampaignID {
			return done, fmt.Errorf("%w: stream %s message %d re-anchors campaign %s, not %s", ErrPosition, s.Stream, m.Sequence, d.CampaignID, seckill.CampaignID)
		}
		x, err := seckill.export(ctx, d.SKUID)
		if err != nil {
			return done, err
		}
		history, _, _ := strings.Cut(x.end.NextCursor, "-")
		floors[history] = x.end.NextCursor
		r := Reanchored{SKUID: d.SKUID, ForkIndex: d.ForkIndex, History: d.History, AsOfIndex: x.end.AsOfIndex,
			Cursor: formatStreamCursor(m.Sequence, at, floors)}
		if err := settle(ctx, store, consumer, cursor, d, x, &r); err != nil {
			return done, fmt.Errorf("re-anchoring SKU %s: %w", d.SKUID, err)
		}
		done = append(done, r)
	}
	return done, fmt.Errorf("orders: stream %s still holds a %s after %d SKUs were re-anchored", s.Stream, relay.TypeReanchored, reanchorRounds)
}
