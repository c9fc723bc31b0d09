package relay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/seckill/seckill/client"
)

// Snapshots truncate a SKU's log, so the feed may no longer hold the first
// records of a SKU the stream holds nothing of (a relay started, or its
// stream emptied, after the truncation). The feed then starts that SKU at
// its first retained record, and a stream filled from there would lack the
// sales before it with nothing telling its consumers: the relay refuses
// instead, as it refuses a cursor the feed compacted (410). A consumer of
// the feed itself resynchronises such a SKU from its export; a stream
// cannot carry an export.

// ErrCompacted is what a *GapError is (errors.Is): Run stops on it.
var ErrCompacted = errors.New("relay: the feed no longer holds a SKU's first records")

// GapError names the SKU whose first records are gone from the feed before
// the stream held any of its events.
type GapError struct {
	SKUID string
	// FirstIndex is the log index of the SKU's first event the feed served.
	FirstIndex uint64
}

func (e *GapError) Error() string {
	return fmt.Sprintf("relay: the feed no longer holds the first records of SKU %q (its first event is record %d: "+
		"snapshots truncated its log before the stream held any of its events), so the stream would lack the sales before it; "+
		"relay a campaign before its logs are truncated (keep records for it with seckilld's --feed-retain-records or --feed-retain-age), "+
		"or consume this campaign from the feed (seckill-orders --feed takes such a SKU from the export)", e.SKUID, e.FirstIndex)
}

// Is makes every GapError an ErrCompacted.
func (e *GapError) Is(target error) bool { return target == ErrCompacted }

// startChecker tells, event by event, whether a SKU's events start where
// its log did. Its positions are the cursor's (history -> the id of its
// last event); owner maps the histories met to their SKUs, and owns asks
// the feed whether a position is a SKU's, for a position of the cursor the
// relay resumed from, which names no SKU until its next event.
type startChecker struct {
	// off: Config.Types chose the types relayed, so a SKU's first event
	// relayed may rightly be past its first record, whatever that record
	// is (the feed's default types leave out only REJECTED, which never
	// comes first: a SKU's log starts with its definition).
	off   bool
	owner map[string]string
	owns  ownsFunc
}

// ownsFunc reports whether position (an event id) is one of skuID's
// histories.
type ownsFunc func(ctx context.Context, skuID, position string) (bool, error)

func newStartChecker(types []string, owns ownsFunc) *startChecker {
	return &startChecker{off: len(types) > 0, owner: map[string]string{}, owns: owns}
}

// check is called for each event before it enters positions. A SKU the
// cursor holds no position of must start at record 1 (its definition). A
// history the cursor holds no position of may also continue a position of
// its SKU: a restore starts a new history after its fork index
// (seckillctl restore --until-*), and the SKU's position in the old one
// stands at or before it (records the types leave out pass unseen). So an
// event past record 1 is a gap unless a position is of its SKU: a
// position whose SKU the relay has not met (one of the cursor it resumed
// from) is asked of the feed (owns), so that a SKU added to the campaign
// while the relay was stopped, and truncated meanwhile, is a gap too.
func (c *startChecker) check(ctx context.Context, positions map[string]string, skuID, id string, index uint64) error {
	history, _, _ := strings.Cut(id, "-")
	if c.off || index == 1 {
		c.owner[history] = skuID
		return nil
	}
	if _, known := positions[history]; !known {
		if err := c.continues(ctx, positions, skuID, index); err != nil {
			return err
		}
	}
	c.owner[history] = skuID
	return nil
}

// continues returns nil when a position is skuID's, else a *GapError (or
// the error that kept the feed from telling).
func (c *startChecker) continues(ctx context.Context, positions map[string]string, skuID string, index uint64) error {
	var unknown []string
	for h, id := range positions {
		sku, met := c.owner[h]
		if sku == skuID {
			return nil
		}
		if !met {
			unknown = append(unknown, id)
		}
	}
	slices.Sort(unknown)
	for _, id := range unknown {
		owned, err := c.owns(ctx, skuID, id)
		if err != nil {
			return err
		}
		if owned {
			history, _, _ := strings.Cut(id, "-")
			c.owner[history] = skuID
			return nil
		}
	}
	return &GapError{SKUID: skuID, FirstIndex: index}
}

// feedOwns asks the SKU's own feed for one page after position: it
// refuses another SKU's position with 400 BAD_CURSOR, and takes (or
// refuses with 409 or 410) one of the SKU's histories.
func feedOwns(c *client.Client, campaignID string) ownsFunc {
	return func(ctx context.Context, skuID, position string) (bool, error) {
		_, err := c.Feed(ctx, client.FeedRequest{CampaignID: campaignID, SKUID: skuID, After: position, Limit: 1})
		var e *client.Error
		switch {
		case err == nil, errors.Is(err, client.ErrCursorDiverged), errors.Is(err, client.ErrCursorCompacted):
			return true, nil
		case errors.As(err, &e) && e.Code == "BAD_CURSOR":
			return false, nil
		}
		return false, fmt.Errorf("asking SKU %s's feed whether the cursor's position %s is its: %w", skuID, position, err)
	}
}
