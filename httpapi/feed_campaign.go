package httpapi

import (
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// campaignPage is the JSON answer of the campaign feed:
// {"events":[...],"next_cursor":"..."}.
type campaignPage struct {
	parts      []campaignPart
	NextCursor string
}

// campaignPart is what one SKU gave a campaign page: its events and its
// cursor after them.
type campaignPart struct {
	skuID  string
	events []*encodedEvent
	next   string
}

// appendJSON appends the page as JSON to b (see feedPage.appendJSON).
func (p *campaignPage) appendJSON(b []byte) []byte {
	b = append(b, `{"events":[`...)
	first := true
	for _, part := range p.parts {
		for _, e := range part.events {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, e.json...)
		}
	}
	b = append(b, `],"next_cursor":`...)
	b = strconv.AppendQuote(b, p.NextCursor)
	return append(b, '}')
}

// sseEvents returns the page's events with the campaign cursor as of each
// (its SSE id:), from positions, the cursor's positions before the page.
func (p *campaignPage) sseEvents(positions map[string]string) []feedSSEEvent {
	var events []feedSSEEvent
	for _, part := range p.parts {
		for _, e := range part.events {
			positions[part.skuID] = e.id
			events = append(events, feedSSEEvent{id: CampaignCursor(positions), e: e})
		}
		positions[part.skuID] = part.next
	}
	return events
}

// campaignFeed is one request of a campaign's feed: the feeds of its
// SKUs, listed again when a SKU is defined (and at each stream heartbeat),
// and the consumer's position in each.
type campaignFeed struct {
	campaignID string
	params     feedParams
	feeds      []*feedRequest    // by SKU id
	positions  map[string]string // SKU id -> the id of its last event sent
	listed     uint64            // skuDefinitions' generation when listed
	defined    <-chan struct{}   // closed at the next SKU definition
	listedAt   time.Time
}

// handleCampaignFeed is GET /admin/campaigns/{c}/events: the feeds of the
// campaign's SKUs merged into one, with the parameters of the SKU feed,
// as a JSON page or, with Accept: text/event-stream, as Server-Sent Events
// whose id: is the campaign cursor as of each event (resumed with
// Last-Event-ID, or after=). A page takes from each SKU, in SKU id order,
// up to its share of limit (limit / SKUs, rounded up), so a busy SKU
// cannot starve the others; events of one SKU keep their log order,
// events of different SKUs have no order between them. A long poll waits
// for the first durable record of any of them, or for a SKU added to the
// campaign (read from the start of its log). Errors name the SKU
// (sku_id): a 410 or 409 of one SKU is resolved by its export, then the
// consumer sets that SKU's position in the cursor (CampaignCursor) to the
// export's next_cursor. A campaign of more than CampaignFeedMaxSKUs SKUs
// is refused: 400 CAMPAIGN_FEED_TOO_WIDE.
func (s *Server) handleCampaignFeed(ctx *fasthttp.RequestCtx) string {
	campaignID, _ := ctx.UserValue("campaign_id").(string)
	p, failure := parseFeedParams(ctx)
	if failure != nil {
		return write(ctx, *failure)
	}
	cursor := string(ctx.QueryArgs().Peek("after"))
	if cursor == "" {
		cursor = string(ctx.Request.Header.Peek("Last-Event-ID"))
	}
	cf, failure := s.openCampaignFeed(campaignID, cursor, p)
	if failure != nil {
		return write(ctx, *failure)
	}
	if strings.Contains(string(ctx.Request.Header.Peek("Accept")), "text/event-stream") {
		return s.streamEvents(ctx, func(deadline time.Time) ([]feedSSEEvent, *reply) {
			before := maps.Clone(cf.positions)
			page, failure := s.waitCampaignPage(cf, deadline)
			if failure != nil {
				return nil, failure
			}
			return page.sseEvents(before), nil
		})
	}
	page, failure := s.waitCampaignPage(cf, time.Now().Add(p.wait))
	if failure != nil {
		return write(ctx, *failure)
	}
	return writeJSONPage(ctx, page.appendJSON)
}

// openCampaignFeed opens the feeds of the campaign's SKUs and moves each
// past its position in cursor (either version of ParseCampaignCursor):
// the position's history names its SKU.
func (s *Server) openCampaignFeed(campaignID, cursor string, p feedParams) (*campaignFeed, *reply) {
	fail := func(status int, reason, detail string) (*campaignFeed, *reply) {
		r := errorReply(status, reason, detail)
		return nil, &r
	}
	byHistory, err := ParseCampaignCursor(cursor)
	if err != nil {
		return fail(fasthttp.StatusBadRequest, reasonBadCursor, err.Error())
	}
	cf := &campaignFeed{campaignID: campaignID, params: p, positions: map[string]string{}}
	if failure := s.listCampaignSKUs(cf); failure != nil {
		return nil, failure
	}
	if len(cf.feeds) == 0 {
		return fail(fasthttp.StatusNotFound, reasonNotFound, "unknown campaign")
	}
	owner := map[string]*feedRequest{} // every history of every SKU
	for _, req := range cf.feeds {
		owner[req.chain.Root] = req
		for _, f := range append(slices.Clone(req.chain.Forks), req.chain.Abandoned...) {
			owner[f.History] = req
		}
	}
	for h, id := range byHistory {
		req, ok := owner[h]
		if !ok {
			return fail(fasthttp.StatusBadRequest, reasonBadCursor, "the cursor holds a position of history "+h+", none of the campaign's SKUs'")
		}
		if old, ok := cf.positions[req.skuID]; ok { // a stale position of a consumer's cursor
			if _, oldIndex, _ := parseCursor(old); oldIndex > indexOf(id) {
				continue
			}
		}
		cf.positions[req.skuID] = id
	}
	for _, req := range cf.feeds {
		if id, ok := cf.positions[req.skuID]; ok {
			if failure := req.seek(id); failure != nil {
				return nil, failure
			}
		}
	}
	return cf, nil
}

// indexOf returns the index of a valid event id.
func indexOf(eventID string) uint64 {
	_, index, _ := parseCursor(eventID)
	return index
}

// listCampaignSKUs opens the feed of every SKU of the campaign that cf
// does not read yet, from the start of its retained log, and remembers
// the definitions' generation it listed.
func (s *Server) listCampaignSKUs(cf *campaignFeed) *reply {
	cf.listed, cf.defined = s.skuDefinitions.current()
	cf.listedAt = time.Now()
	var ids []string
	for _, st := range s.engine.AllStats() {
		if st.CampaignID == cf.campaignID {
			ids = append(ids, st.SKUID)
		}
	}
	if len(ids) > CampaignFeedMaxSKUs {
		r := campaignFeedTooWide(cf.campaignID, len(ids))
		return &r
	}
	for _, id := range ids {
		i, found := slices.BinarySearchFunc(cf.feeds, id, func(req *feedRequest, id string) int { return strings.Compare(req.skuID, id) })
		if found {
			continue
		}
		req, failure := s.openFeed(cf.campaignID, id, "", cf.params)
		if failure != nil {
			return failure
		}
		cf.feeds = slices.Insert(cf.feeds, i, req)
	}
	return nil
}

// waitCampaignPage reads one page from the SKUs' feeds, waiting until
// deadline for a durable record in any of them, and moves cf.positions
// past it. It first lists the campaign's SKUs again when one was defined
// since, or a heartbeat ago (a stream calls it once per heartbeat).
func (s *Server) waitCampaignPage(cf *campaignFeed, deadline time.Time) (*campaignPage, *reply) {
	limit := cf.params.limit
	for {
		if generation, _ := s.skuDefinitions.current(); generation != cf.listed || time.Since(cf.listedAt) >= s.cfg.FeedHeartbeat {
			if failure := s.listCampaignSKUs(cf); failure != nil {
				return nil, failure
			}
		}
		share := (limit + len(cf.feeds) - 1) / len(cf.feeds)
		page := &campaignPage{}
		moved, taken := false, 0
		for _, req := range cf.feeds {
			req.limit = min(share, limit-taken)
			if req.limit <= 0 {
				break
			}
			p, failure := s.readPage(req)
			if failure != nil {
				return nil, failure
			}
			if p.NextCursor != "" {
				moved = true
				cf.positions[req.skuID] = p.NextCursor
				page.parts = append(page.parts, campaignPart{skuID: req.skuID, events: p.events, next: p.NextCursor})
				taken += len(p.events)
			}
		}
		page.NextCursor = CampaignCursor(cf.positions)
		if len(page.NextCursor) > campaignCursorMaxBytes { // an index beyond 2^35
			r := campaignFeedTooWide(cf.campaignID, len(cf.feeds))
			return nil, &r
		}
		wait := time.Until(deadline)
		if moved || wait <= 0 || s.feeds.Err() != nil {
			return page, nil
		}
		s.waitAnyDurable(cf, wait)
	}
}

// waitAnyDurable waits for any SKU's next group commit (one channel each,
// no goroutine), for a SKU definition, for wait, or for shutdown.
func (s *Server) waitAnyDurable(cf *campaignFeed, wait time.Duration) {
	s.feedMetrics.waiting.Add(1)
	defer s.feedMetrics.waiting.Add(-1)
	cases := make([]reflect.SelectCase, 0, len(cf.feeds)+3)
	for _, req := range cf.feeds {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(req.log.DurableAfter(req.from - 1))})
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(cf.defined)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.feeds.Done())})
	switch chosen, _, _ := reflect.Select(cases); chosen - len(cf.feeds) {
	case 0:
		s.feedMetrics.woke(wokeByDefinition)
	case 1:
		s.feedMetrics.woke(wokeByDeadline)
	case 2:
		s.feedMetrics.woke(wokeByShutdown)
	default: // one of the SKUs' channels
		s.feedMetrics.woke(wokeByRecord)
	}
}

// skuDefinitions counts the SKU definitions this server made and wakes
// the campaign feeds waiting at each (a channel closed and replaced).
type skuDefinitions struct {
	mu         sync.Mutex
	generation uint64
	next       chan struct{}
}

// current returns the generation and the channel its next change closes.
func (d *skuDefinitions) current() (uint64, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.next == nil {
		d.next = make(chan struct{})
	}
	return d.generation, d.next
}

// changed starts the next generation and wakes the waiting feeds.
func (d *skuDefinitions) changed() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.generation++
	if d.next != nil {
		close(d.next)
		d.next = nil
	}
}
