package feed

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
)

// CampaignPage is one page of a campaign's feed.
type CampaignPage struct {
	// Parts are what each SKU gave the page, in SKU id order.
	Parts []CampaignPart
	// NextCursor is the campaign cursor after the page (CampaignCursor).
	NextCursor string
}

// CampaignPart is what one SKU gave a campaign page: its events and its
// cursor after them.
type CampaignPart struct {
	SKUID  string
	Events []*Encoded
	Next   string
}

// StreamEvent is an event with the cursor it is resumed from: its own id
// on a SKU's feed, the campaign cursor as of it on a campaign's.
type StreamEvent struct {
	Cursor string
	Event  *Encoded
}

// StreamEvents returns the page's events with the campaign cursor as of
// each, from before, the positions before the page (CampaignReader.
// Positions, taken before Wait).
func (p *CampaignPage) StreamEvents(before map[string]string) []StreamEvent {
	positions := maps.Clone(before)
	var events []StreamEvent
	for _, part := range p.Parts {
		for _, e := range part.Events {
			positions[part.SKUID] = e.id
			events = append(events, StreamEvent{Cursor: CampaignCursor(positions), Event: e})
		}
		positions[part.SKUID] = part.Next
	}
	return events
}

// CampaignReader reads the feeds of a campaign's SKUs merged into one. A
// page takes from each SKU, in SKU id order, up to its share of the limit
// (limit / SKUs, rounded up), so a busy SKU cannot starve the others;
// events of one SKU keep their log order, events of different SKUs have no
// order between them. The SKUs are listed again when one is defined
// (Feed.SKUDefined) and every Params.Relist; a SKU added is read from the
// start of its retained log. It is not safe for concurrent use.
type CampaignReader struct {
	f          *Feed
	campaignID string
	p          Params
	readers    []*Reader         // by SKU id
	positions  map[string]string // SKU id -> the id of its last event read
	listed     uint64            // definitions' generation when listed
	defined    <-chan struct{}   // closed at the next SKU definition
	listedAt   time.Time
}

// OpenCampaign opens the feeds of the campaign's SKUs and moves each past
// its position in cursor (either version of ParseCampaignCursor): the
// position's history names its SKU. Errors: ErrUnknownCampaign,
// *TooWideError, *BadCursorError, and those of Open.
func (f *Feed) OpenCampaign(campaignID, cursor string, p Params) (*CampaignReader, error) {
	byHistory, err := ParseCampaignCursor(cursor)
	if err != nil {
		return nil, &BadCursorError{Detail: err.Error()}
	}
	c := &CampaignReader{f: f, campaignID: campaignID, p: p.filled(), positions: map[string]string{}}
	if err := c.list(); err != nil {
		return nil, err
	}
	if len(c.readers) == 0 {
		return nil, ErrUnknownCampaign
	}
	owner := map[string]*Reader{} // every history of every SKU
	for _, r := range c.readers {
		owner[r.chain.Root] = r
		for _, fork := range append(slices.Clone(r.chain.Forks), r.chain.Abandoned...) {
			owner[fork.History] = r
		}
	}
	for h, id := range byHistory {
		r, ok := owner[h]
		if !ok {
			return nil, &BadCursorError{Detail: "the cursor holds a position of history " + h + ", none of the campaign's SKUs'"}
		}
		if old, ok := c.positions[r.skuID]; ok { // a stale position of a consumer's cursor
			if indexOf(old) > indexOf(id) {
				continue
			}
		}
		c.positions[r.skuID] = id
	}
	for _, r := range c.readers {
		if id, ok := c.positions[r.skuID]; ok {
			if err := r.seek(id); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// Positions returns a copy of the consumer's position in each SKU.
func (c *CampaignReader) Positions() map[string]string { return maps.Clone(c.positions) }

// list opens the feed of every SKU of the campaign that c does not read
// yet, from the start of its retained log, and remembers the definitions'
// generation it listed.
func (c *CampaignReader) list() error {
	c.listed, c.defined = c.f.definitions.current()
	c.listedAt = time.Now()
	ids := c.f.src.CampaignSKUs(c.campaignID)
	if len(ids) > CampaignFeedMaxSKUs {
		return &TooWideError{CampaignID: c.campaignID, SKUs: len(ids)}
	}
	for _, id := range ids {
		i, found := slices.BinarySearchFunc(c.readers, id, func(r *Reader, id string) int { return strings.Compare(r.skuID, id) })
		if found {
			continue
		}
		r, err := c.f.Open(c.campaignID, id, "", c.p)
		if err != nil {
			return err
		}
		c.readers = slices.Insert(c.readers, i, r)
	}
	return nil
}

// Wait reads one page from the SKUs' feeds, waiting until deadline (or
// until ctx is done) for a durable record in any of them, and moves the
// positions past it. It first lists the campaign's SKUs again when one was
// defined since, or Params.Relist ago (a stream calls it once per
// heartbeat). Errors: those of Reader.Wait (naming the SKU), *TooWideError.
func (c *CampaignReader) Wait(ctx context.Context, deadline time.Time) (*CampaignPage, error) {
	limit := c.p.Limit
	for {
		if generation, _ := c.f.definitions.current(); generation != c.listed || time.Since(c.listedAt) >= c.p.Relist {
			if err := c.list(); err != nil {
				return nil, err
			}
		}
		share := (limit + len(c.readers) - 1) / len(c.readers)
		page := &CampaignPage{}
		moved, taken := false, 0
		for _, r := range c.readers {
			r.p.Limit = min(share, limit-taken)
			if r.p.Limit <= 0 {
				break
			}
			p, err := r.read()
			if err != nil {
				return nil, err
			}
			if p.NextCursor != "" {
				moved = true
				c.positions[r.skuID] = p.NextCursor
				page.Parts = append(page.Parts, CampaignPart{SKUID: r.skuID, Events: p.Events, Next: p.NextCursor})
				taken += len(p.Events)
			}
		}
		page.NextCursor = CampaignCursor(c.positions)
		if len(page.NextCursor) > CampaignCursorMaxBytes { // an index beyond 2^35
			return nil, &TooWideError{CampaignID: c.campaignID, SKUs: len(c.readers)}
		}
		wait := time.Until(deadline)
		if moved || wait <= 0 || ctx.Err() != nil {
			return page, nil
		}
		c.waitAnyDurable(ctx, wait)
	}
}

// waitAnyDurable waits for any SKU's next group commit (one channel each,
// no goroutine), for a SKU definition, for wait, or for ctx.
func (c *CampaignReader) waitAnyDurable(ctx context.Context, wait time.Duration) {
	c.f.waiting.Add(1)
	defer c.f.waiting.Add(-1)
	cases := make([]reflect.SelectCase, 0, len(c.readers)+3)
	for _, r := range c.readers {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(r.log.DurableAfter(r.from - 1))})
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c.defined)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	switch chosen, _, _ := reflect.Select(cases); chosen - len(c.readers) {
	case 0:
		c.f.woke(WokeByDefinition)
	case 1:
		c.f.woke(WokeByDeadline)
	case 2:
		c.f.woke(WokeByShutdown)
	default: // one of the SKUs' channels
		c.f.woke(WokeByRecord)
	}
}

// definitions counts the SKU definitions the feed was told of and wakes
// the campaign readers waiting at each (a channel closed and replaced).
type definitions struct {
	mu         sync.Mutex
	generation uint64
	next       chan struct{}
}

// current returns the generation and the channel its next change closes.
func (d *definitions) current() (uint64, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.next == nil {
		d.next = make(chan struct{})
	}
	return d.generation, d.next
}

// changed starts the next generation and wakes the waiting readers.
func (d *definitions) changed() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.generation++
	if d.next != nil {
		close(d.next)
		d.next = nil
	}
}
