package httpapi

import (
	"strconv"
	"time"

	"github.com/seckill/seckill/feed"
	"github.com/valyala/fasthttp"
)

// appendCampaignPage appends a campaign feed's page as JSON:
// {"events":[...],"next_cursor":"..."} (see appendFeedPage).
func appendCampaignPage(b []byte, p *feed.CampaignPage) []byte {
	b = append(b, `{"events":[`...)
	first := true
	for _, part := range p.Parts {
		for _, e := range part.Events {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, e.JSON()...)
		}
	}
	b = append(b, `],"next_cursor":`...)
	b = strconv.AppendQuote(b, p.NextCursor)
	return append(b, '}')
}

// handleCampaignFeed is GET /admin/campaigns/{c}/events: the feeds of the
// campaign's SKUs merged into one (feed.CampaignReader), with the
// parameters of the SKU feed, as a JSON page or, with Accept:
// text/event-stream, as Server-Sent Events whose id: is the campaign
// cursor as of each event (resumed with Last-Event-ID, or after=). A long
// poll waits for the first durable record of any of them, or for a SKU
// added to the campaign (read from the start of its log). Errors name the
// SKU (sku_id): a 410 or 409 of one SKU is resolved by its export, then
// the consumer sets that SKU's position in the cursor
// (feed.CampaignCursor) to the export's next_cursor. A campaign of more
// than feed.CampaignFeedMaxSKUs SKUs is refused: 400
// CAMPAIGN_FEED_TOO_WIDE.
func (s *Server) handleCampaignFeed(ctx *fasthttp.RequestCtx) string {
	campaignID, _ := ctx.UserValue("campaign_id").(string)
	p, failure := s.parseFeedParams(ctx)
	if failure != nil {
		return write(ctx, *failure)
	}
	if s.feed == nil {
		return write(ctx, errorReply(reasonNotFound, "this engine serves no event feed"))
	}
	c, err := s.feed.OpenCampaign(campaignID, feedCursor(ctx), p.params)
	if err != nil {
		return write(ctx, s.feedReply("admin_campaign_feed", err))
	}
	if wantsStream(ctx) {
		return s.streamEvents(ctx, feed.CampaignCursor(c.Positions()), func(deadline time.Time) ([]feed.StreamEvent, string, error) {
			before := c.Positions()
			page, err := c.Wait(s.feeds, deadline)
			if err != nil {
				return nil, "", err
			}
			return page.StreamEvents(before), page.NextCursor, nil
		})
	}
	page, err := c.Wait(s.feeds, time.Now().Add(p.wait))
	if err != nil {
		return write(ctx, s.feedReply("admin_campaign_feed", err))
	}
	return writeJSONPage(ctx, func(b []byte) []byte { return appendCampaignPage(b, page) })
}
