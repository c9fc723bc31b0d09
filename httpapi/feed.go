package httpapi

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seckill/seckill/feed"
	"github.com/valyala/fasthttp"
)

// The event feed's routes: package feed reads the SKUs' logs, maps
// records to events and keeps the cursors; this file serves it over HTTP
// (query parameters, JSON pages, long polls, Server-Sent Events, and the
// status of each of its errors).

// feedMaxWait bounds a long poll (wait=).
const feedMaxWait = 60 * time.Second

// Reasons of the feed's error answers.
const (
	reasonBadCursor       = "BAD_CURSOR"
	reasonCursorCompacted = "CURSOR_COMPACTED"
	reasonCursorDiverged  = "CURSOR_DIVERGED"
	// reasonCampaignFeedTooWide answers the campaign feed of a campaign
	// with more SKUs than feed.CampaignFeedMaxSKUs.
	reasonCampaignFeedTooWide = "CAMPAIGN_FEED_TOO_WIDE"
)

// feedError is the body of 409 and 410 answers.
type feedError struct {
	Error      string `json:"error"`
	Detail     string `json:"detail,omitempty"`
	FirstIndex uint64 `json:"first_index,omitempty"`
	ForkIndex  uint64 `json:"fork_index,omitempty"`
	History    string `json:"history,omitempty"`
	// SKUID names the SKU of the campaign feed whose cursor failed.
	SKUID string `json:"sku_id,omitempty"`
}

// feedReply answers an error of the feed (route names the route in the
// log of the server's own errors). The engine's errors behind it (a page's
// reservation look-ups, an export's state) are a read's (readError): a
// busy SKU is QUEUE_FULL with its Retry-After, as on every route, and a
// look-up that outlasted its time READ_TIMEOUT, since a read changed
// nothing.
func (s *Server) feedReply(route string, err error) reply {
	var (
		bad       *feed.BadCursorError
		compacted *feed.CompactedError
		diverged  *feed.DivergedError
		tooWide   *feed.TooWideError
		lookup    *feed.LookupError
		state     *feed.StateError
	)
	switch {
	case errors.Is(err, feed.ErrUnknownSKU), errors.Is(err, feed.ErrUnknownCampaign):
		return errorReply(reasonNotFound, err.Error())
	case errors.Is(err, feed.ErrNotOpen), errors.Is(err, feed.ErrLogClosed):
		return errorReply(ReasonUnavailable, err.Error())
	case errors.As(err, &bad):
		return errorReply(reasonBadCursor, boundDetail(bad.Detail)) // it may quote the cursor sent
	case errors.As(err, &compacted):
		return reasonReply(reasonCursorCompacted, feedError{
			Error: reasonCursorCompacted,
			Detail: fmt.Sprintf("records before %d were removed after a snapshot; resynchronise from GET /admin/campaigns/%s/skus/%s/reservations and continue after its index",
				compacted.FirstIndex, compacted.CampaignID, compacted.SKUID),
			FirstIndex: compacted.FirstIndex, SKUID: compacted.SKUID,
		})
	case errors.As(err, &diverged):
		body := feedError{Error: reasonCursorDiverged,
			Detail:    "the log was restored to an earlier point; resynchronise from the export and continue after fork_index",
			ForkIndex: diverged.ForkIndex, History: diverged.History, SKUID: diverged.SKUID}
		if diverged.BeyondDurable {
			body.Detail = diverged.Error()
		}
		return reasonReply(reasonCursorDiverged, body)
	case errors.As(err, &tooWide):
		return errorReply(reasonCampaignFeedTooWide, fmt.Sprintf(
			"campaign %s has %d SKUs: its feed's cursor would exceed %d bytes, more than a request may carry (at most %d SKUs); read each SKU's feed, GET /admin/campaigns/%s/skus/{sku_id}/events",
			tooWide.CampaignID, tooWide.SKUs, feed.CampaignCursorMaxBytes, feed.CampaignFeedMaxSKUs, tooWide.CampaignID))
	case errors.As(err, &lookup):
		return s.readError(route, lookup.Err)
	case errors.As(err, &state):
		return s.readError(route, state.Err)
	}
	s.log.Error("feed", "route", route, "err", err)
	return errorReply(reasonInternal, "")
}

// appendFeedPage appends a SKU feed's page as JSON:
// {"events":[...],"next_cursor":"...","first_index":N,"durable_index":N}.
// The events are copied as they are: encoding/json would scan every byte
// of each again (it compacts RawMessage), which costs more than the rest
// of the page.
func appendFeedPage(b []byte, p *feed.Page) []byte {
	b = appendEvents(b, p.Events)
	b = append(b, `,"next_cursor":`...)
	b = strconv.AppendQuote(b, p.NextCursor)
	b = append(b, `,"first_index":`...)
	b = strconv.AppendUint(b, p.FirstIndex, 10)
	b = append(b, `,"durable_index":`...)
	b = strconv.AppendUint(b, p.DurableIndex, 10)
	return append(b, '}')
}

// appendEvents appends `{"events":[e1,e2,...]` (no closing brace).
func appendEvents(b []byte, events []*feed.Encoded) []byte {
	b = append(b, `{"events":[`...)
	for i, e := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e.JSON()...)
	}
	return append(b, ']')
}

// pageBuffers are the buffers pages are rendered into before fasthttp
// copies them into its own (pooled) body buffer.
var pageBuffers = sync.Pool{New: func() any { return new([]byte) }}

// writeJSONPage answers 200 with a page rendered by appendJSON: no
// allocation once the pooled buffers have grown to a page.
func writeJSONPage(ctx *fasthttp.RequestCtx, appendJSON func([]byte) []byte) string {
	buf := pageBuffers.Get().(*[]byte)
	*buf = appendJSON((*buf)[:0])
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.SetBody(*buf)
	pageBuffers.Put(buf)
	return outcomeOK
}

// handleFeed is GET /admin/campaigns/{c}/skus/{s}/events: one page of the
// SKU's events after the cursor (after=, else Last-Event-ID), as JSON
// (long poll with wait=), or a Server-Sent Events stream with Accept:
// text/event-stream.
func (s *Server) handleFeed(ctx *fasthttp.RequestCtx) string {
	p, failure := s.parseFeedParams(ctx)
	if failure != nil {
		return write(ctx, *failure)
	}
	if s.feed == nil {
		return write(ctx, errorReply(reasonNotFound, "this engine serves no event feed"))
	}
	campaignID, _ := ctx.UserValue("campaign_id").(string)
	skuID, _ := ctx.UserValue("sku_id").(string)
	r, err := s.feed.Open(campaignID, skuID, feedCursor(ctx), p.params)
	if err != nil {
		return write(ctx, s.feedReply("admin_feed", err))
	}
	if wantsStream(ctx) {
		return s.streamEvents(ctx, r.Cursor(), func(deadline time.Time) ([]feed.StreamEvent, string, error) {
			page, err := r.Wait(s.feeds, deadline)
			if err != nil {
				return nil, "", err
			}
			events := make([]feed.StreamEvent, len(page.Events))
			for i, e := range page.Events {
				events[i] = feed.StreamEvent{Cursor: e.ID(), Event: e}
			}
			return events, page.NextCursor, nil
		})
	}
	page, err := r.Wait(s.feeds, time.Now().Add(p.wait))
	if err != nil {
		return write(ctx, s.feedReply("admin_feed", err))
	}
	return writeJSONPage(ctx, func(b []byte) []byte { return appendFeedPage(b, page) })
}

// feedCursor is a feed request's cursor: after=, else Last-Event-ID; on a
// stream, Last-Event-ID first. An EventSource opened with ?after=C
// reconnects to the same URL, after=C included, with the last id it got
// as Last-Event-ID: resumed after C, the stream would send every event
// since C again at each reconnect, and a 410 once C is compacted.
func feedCursor(ctx *fasthttp.RequestCtx) string {
	lastID := ctx.Request.Header.Peek("Last-Event-ID")
	if len(lastID) > 0 && wantsStream(ctx) {
		return string(lastID)
	}
	if cursor := ctx.QueryArgs().Peek("after"); len(cursor) > 0 {
		return string(cursor)
	}
	return string(lastID)
}

// wantsStream reports whether a feed request asks for Server-Sent Events.
func wantsStream(ctx *fasthttp.RequestCtx) bool {
	return strings.Contains(string(ctx.Request.Header.Peek("Accept")), "text/event-stream")
}

// feedParams are the query parameters of both feed routes.
type feedParams struct {
	params feed.Params
	wait   time.Duration
}

// parseFeedParams reads limit=, wait= and types=.
func (s *Server) parseFeedParams(ctx *fasthttp.RequestCtx) (feedParams, *reply) {
	fail := func(detail string) (feedParams, *reply) {
		r := errorReply(reasonBadRequest, detail)
		return feedParams{}, &r
	}
	p := feedParams{params: feed.Params{Limit: feed.MaxPage, LookupTimeout: s.cfg.RequestTimeout, Relist: s.cfg.FeedHeartbeat}}
	args := ctx.QueryArgs()
	if v := args.Peek("limit"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 || n > feed.MaxPage {
			return fail(fmt.Sprintf("limit must be 1..%d", feed.MaxPage))
		}
		p.params.Limit = n
	}
	if v := args.Peek("wait"); len(v) > 0 {
		d, err := parseWait(string(v))
		if err != nil {
			return fail(err.Error())
		}
		p.wait = d
	}
	if v := args.Peek("types"); len(v) > 0 {
		p.params.Types = map[string]bool{}
		for _, t := range strings.Split(string(v), ",") {
			if !feed.KnownEventType(t) {
				return fail("unknown event type " + quoteInput(t))
			}
			p.params.Types[t] = true
		}
	}
	return p, nil
}

// parseWait accepts a Go duration ("30s") or whole seconds ("30").
func parseWait(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(v)
		if nerr != nil {
			return 0, fmt.Errorf("wait %s: want a duration such as 30s", quoteInput(v))
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 || d > feedMaxWait {
		return 0, fmt.Errorf("wait must be 0..%s", feedMaxWait)
	}
	return d, nil
}

// streamEvents serves a feed as Server-Sent Events (WHATWG HTML, section 9.2):
// next waits until deadline for the next events; each goes out with its
// cursor as id: (so EventSource resumes with Last-Event-ID) and its type
// as event:. A ": ping" comment every Config.FeedHeartbeat keeps proxies
// open. fasthttp does not report a disconnect, so before each heartbeat
// the stream reads from its client, which sends nothing on an SSE
// connection: end of file means it closed, and the stream ends then,
// within one heartbeat (a client that vanished without closing is found
// by the write timeout). The connection closes with the stream. An error
// after the stream started (compaction, a closed log) is sent as an
// "error" event with the JSON error body, and ends the stream.
//
// next also returns the cursor after what it read, which moves past the
// records the types leave out as a page's next_cursor does; when it is
// past the last id sent (from: the cursor the stream started at), the
// stream sends it as an id: alone. An EventSource takes that as its last
// event id and dispatches no event (a message without data:), so a
// reconnect resumes past those records rather than reading them again,
// or meeting CURSOR_COMPACTED once snapshots truncated them.
func (s *Server) streamEvents(ctx *fasthttp.RequestCtx, from string, next func(deadline time.Time) ([]feed.StreamEvent, string, error)) string {
	conn := ctx.Conn()
	route, _ := ctx.UserValue(routeKey).(string)
	writeTimeout, heartbeat := s.cfg.WriteTimeout, s.cfg.FeedHeartbeat
	ctx.SetContentType("text/event-stream")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.SetConnectionClose() // nothing follows a stream: the heartbeat may read the connection
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		s.feedStreams.Add(1)
		defer s.feedStreams.Add(-1)
		w = StreamWriter(conn, w, writeTimeout)
		flush := func() bool { return w.Flush() == nil }
		w.WriteString("retry: 1000\n\n")
		if !flush() {
			return
		}
		lastID := from
		for s.feeds.Err() == nil {
			events, cursor, err := next(time.Now().Add(heartbeat))
			if err != nil {
				fmt.Fprintf(w, "event: error\ndata: %s\n\n", s.feedReply(route, err).body)
				flush()
				return
			}
			for _, e := range events {
				writeSSEEvent(w, e.Cursor, e.Event.Type(), e.Event.JSON())
				lastID = e.Cursor
			}
			if len(events) == 0 && clientClosed(conn) {
				return
			}
			switch {
			case cursor != "" && cursor != lastID: // past records left out
				w.WriteString("id: ")
				w.WriteString(cursor)
				w.WriteString("\n\n")
				lastID = cursor
			case len(events) == 0:
				w.WriteString(": ping\n\n")
			}
			if !flush() {
				return
			}
		}
	})
	return outcomeOK
}

// writeSSEEvent writes one event of a stream: its id: (the cursor), its
// event: (the type) and its data: (the JSON, one line).
func writeSSEEvent(w *bufio.Writer, id, typ string, data []byte) {
	w.WriteString("id: ")
	w.WriteString(id)
	w.WriteString("\nevent: ")
	w.WriteString(typ)
	w.WriteString("\ndata: ")
	w.Write(data)
	w.WriteString("\n\n")
}
