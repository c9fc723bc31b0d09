package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
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

// CampaignCursor encodes the position of a campaign feed consumer: each
// SKU's feed cursor (the id of the last event it got, by SKU id) as
// base64url (no padding) of a JSON object. A SKU missing from it is read
// from the start of its retained log. Consumers may build one (a relay
// does, per event); the feed returns it as next_cursor.
func CampaignCursor(positions map[string]string) string {
	if len(positions) == 0 {
		return ""
	}
	b, _ := json.Marshal(positions) // a map of strings always encodes
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCampaignCursor decodes a CampaignCursor ("" is the empty position).
func ParseCampaignCursor(cursor string) (map[string]string, error) {
	positions := map[string]string{}
	if cursor == "" {
		return positions, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err == nil {
		err = json.Unmarshal(b, &positions)
	}
	if err != nil {
		return nil, fmt.Errorf("malformed campaign cursor: %v", err)
	}
	return positions, nil
}

// handleCampaignFeed is GET /admin/campaigns/{c}/events: the feeds of the
// campaign's SKUs merged into one, with the parameters of the SKU feed,
// as a JSON page or, with Accept: text/event-stream, as Server-Sent Events
// whose id: is the campaign cursor as of each event (resumed with
// Last-Event-ID, or after=). A page takes from each SKU, in SKU id order,
// up to its share of limit (limit / SKUs, rounded up), so a busy SKU
// cannot starve the others; events of one SKU keep their log order,
// events of different SKUs have no order between them. A long poll waits
// for the first durable record of any of them. Errors name the SKU
// (sku_id): a 410 or 409 of one SKU is resolved by its export, then the
// consumer sets that SKU's position in the cursor (CampaignCursor) to the
// export's next_cursor.
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
	positions, err := ParseCampaignCursor(cursor)
	if err != nil {
		return write(ctx, errorReply(fasthttp.StatusBadRequest, reasonBadCursor, err.Error()))
	}
	var skus []string
	for _, st := range s.engine.AllStats() {
		if st.CampaignID == campaignID {
			skus = append(skus, st.SKUID)
		}
	}
	if len(skus) == 0 {
		return write(ctx, errorReply(fasthttp.StatusNotFound, reasonNotFound, "unknown campaign"))
	}
	for id := range positions {
		if !slices.Contains(skus, id) {
			return write(ctx, errorReply(fasthttp.StatusBadRequest, reasonBadCursor, "the cursor names SKU "+id+", not one of the campaign's"))
		}
	}
	share := (p.limit + len(skus) - 1) / len(skus)
	feeds := make([]*feedRequest, len(skus))
	for i, id := range skus {
		q := p
		q.limit = share
		req, failure := s.openFeed(campaignID, id, positions[id], q)
		if failure != nil {
			return write(ctx, *failure)
		}
		feeds[i] = req
	}
	if strings.Contains(string(ctx.Request.Header.Peek("Accept")), "text/event-stream") {
		return s.streamEvents(ctx, func(deadline time.Time) ([]feedSSEEvent, *reply) {
			before := maps.Clone(positions)
			page, failure := s.waitCampaignPage(feeds, positions, p.limit, deadline)
			if failure != nil {
				return nil, failure
			}
			return page.sseEvents(before), nil
		})
	}
	page, failure := s.waitCampaignPage(feeds, positions, p.limit, time.Now().Add(p.wait))
	if failure != nil {
		return write(ctx, *failure)
	}
	return writeJSONPage(ctx, page.appendJSON)
}

// waitCampaignPage reads one page from the SKUs' feeds, waiting until
// deadline for a durable record in any of them, and moves positions past
// it.
func (s *Server) waitCampaignPage(feeds []*feedRequest, positions map[string]string, limit int, deadline time.Time) (*campaignPage, *reply) {
	for {
		page := &campaignPage{}
		moved, taken := false, 0
		for _, req := range feeds {
			share := req.limit
			req.limit = min(share, limit-taken)
			if req.limit <= 0 {
				req.limit = share
				break
			}
			p, failure := s.readPage(req)
			req.limit = share
			if failure != nil {
				return nil, failure
			}
			if p.NextCursor != "" {
				moved = true
				positions[req.skuID] = p.NextCursor
				page.parts = append(page.parts, campaignPart{skuID: req.skuID, events: p.events, next: p.NextCursor})
				taken += len(p.events)
			}
		}
		page.NextCursor = CampaignCursor(positions)
		wait := time.Until(deadline)
		if moved || wait <= 0 || s.feeds.Err() != nil {
			return page, nil
		}
		s.waitAnyDurable(feeds, wait)
	}
}

// waitAnyDurable waits for any SKU's next group commit (one channel each,
// no goroutine), for wait, or for shutdown.
func (s *Server) waitAnyDurable(feeds []*feedRequest, wait time.Duration) {
	s.feedGauges.waiting.Add(1)
	defer s.feedGauges.waiting.Add(-1)
	cases := make([]reflect.SelectCase, 0, len(feeds)+2)
	for _, req := range feeds {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(req.log.DurableAfter(req.from - 1))})
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.feeds.Done())})
	reflect.Select(cases)
}
