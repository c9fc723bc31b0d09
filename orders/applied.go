package orders

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/feed"
)

// Check checks, for each position of cursor, that the feed holds the last
// event this service applied of that position's history
// (client.CheckApplied): a seckilld started on an older copy of its data
// dir takes the cursor once the copy recorded past it, with other records
// up to it. A mismatch is a *Diverged (Run stops on it, Reanchor settles
// it), as the feed's own 409 is; the feed's other refusals (refused: a
// wrong admin token) wrap ErrPosition as Next's do, so that Run stops on
// them rather than retrying for ever. A position of a history the service
// applied no event of (taken from the export) has nothing to check.
func (f *FeedSource) Check(ctx context.Context, store *Store, cursor string) error {
	positions, err := feed.ParseCampaignCursor(cursor)
	if err != nil {
		return fmt.Errorf("%w: cursor %q: %v", ErrPosition, cursor, err)
	}
	for history, id := range positions {
		_, at, _ := strings.Cut(id, "-")
		index, err := strconv.ParseInt(at, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: cursor %q: %v", ErrPosition, cursor, err)
		}
		a, ok, err := store.applied(ctx, f.CampaignID, history, index)
		if err != nil || !ok {
			if err != nil {
				return err
			}
			continue
		}
		err = f.Client.CheckApplied(ctx, a)
		if d, diverged := f.asDiverged(err); diverged {
			return d
		}
		if refused(err) {
			return fmt.Errorf("%w: checking the events applied of SKU %s against the feed: %w", ErrPosition, a.SKUID, err)
		}
		if err != nil {
			return fmt.Errorf("checking the events applied of SKU %s against the feed: %w", a.SKUID, err)
		}
	}
	return nil
}

// eventColumns are the columns of order_events an event is read back
// from.
const eventColumns = `source, id, type, coalesce(subject, ''), seckill_index, event_time, data::text`

// applied reads the events of history up to log index at (a cursor's
// position) as client.CheckApplied reads them; ok is false when there is
// none.
func (s *Store) applied(ctx context.Context, campaignID, history string, at int64) (client.Applied, bool, error) {
	last, ok, err := s.eventOf(ctx, `SELECT `+eventColumns+` FROM order_events
WHERE split_part(id, '-', 1) = $1 AND seckill_index <= $2 ORDER BY seckill_index DESC LIMIT 1`, history, at)
	if err != nil || !ok {
		return client.Applied{}, false, err
	}
	campaign, skuID, valid := SourceSKU(last.Source)
	if !valid || campaign != campaignID {
		return client.Applied{}, false, fmt.Errorf("%w: event %s of the cursor's history has source %q, not one of campaign %s's SKUs", ErrPosition, last.ID, last.Source, campaignID)
	}
	return client.Applied{CampaignID: campaignID, SKUID: skuID, Last: last, LastAt: last.SeckillIndex,
		From: func(ctx context.Context, p uint64) (client.Event, uint64, bool, error) {
			e, ok, err := s.eventOf(ctx, `SELECT `+eventColumns+` FROM order_events
WHERE split_part(id, '-', 1) = $1 AND seckill_index >= $2 ORDER BY seckill_index LIMIT 1`, history, int64(p))
			return e, e.SeckillIndex, ok, err
		}}, true, nil
}

// eventOf reads the event of query's one row (ok false: no row).
func (s *Store) eventOf(ctx context.Context, query string, args ...any) (client.Event, bool, error) {
	var e client.Event
	var index int64
	var data string
	err := s.pool.QueryRow(ctx, query, args...).Scan(&e.Source, &e.ID, &e.Type, &e.Subject, &index, &e.Time, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return e, false, nil
	}
	if err != nil {
		return e, false, fmt.Errorf("reading the events applied: %w", err)
	}
	e.SeckillIndex, e.Data = uint64(index), []byte(data)
	return e, true, nil
}
