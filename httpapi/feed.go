package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/history"
	"github.com/seckill/seckill/wal"
	"github.com/valyala/fasthttp"
)

// Limits of the event feed.
const (
	// feedMaxLimit bounds the events of one page (limit=).
	feedMaxLimit = 1000
	// feedMaxWait bounds a long poll (wait=).
	feedMaxWait = 60 * time.Second
)

// Reasons of the feed's error answers.
const (
	reasonBadCursor       = "BAD_CURSOR"
	reasonCursorCompacted = "CURSOR_COMPACTED"
	reasonCursorDiverged  = "CURSOR_DIVERGED"
)

// FeedSource is what the event feed needs from the engine beside Engine:
// *actors.Engine has it. A Server whose engine lacks it answers the feed's
// route 404.
type FeedSource interface {
	// FeedLog returns the SKU's open log and folder (actors.Engine.FeedLog).
	FeedLog(campaignID, skuID string) (log *wal.Log, dir string, ok bool)
	// Reservations returns views of the reservations with these sequence
	// numbers (actors.Engine.Reservations).
	Reservations(ctx context.Context, campaignID, skuID string, seqs []uint32) ([]sku.View, error)
	// DurableState rebuilds the SKU's state as of a durable index, off
	// the actor (actors.Engine.DurableState): the export's source.
	DurableState(campaignID, skuID string) (m *sku.Machine, asOf uint64, err error)
}

// feedPage is the JSON answer of the feed:
// {"events":[...],"next_cursor":"...","first_index":N,"durable_index":N}.
type feedPage struct {
	events       []*encodedEvent // CloudEvents, encoded once per SKU and record
	NextCursor   string
	FirstIndex   uint64
	DurableIndex uint64
}

// appendJSON appends the page as JSON to b. The events are copied as they
// are: encoding/json would scan every byte of each again (it compacts
// RawMessage), which costs more than the rest of the page.
func (p *feedPage) appendJSON(b []byte) []byte {
	b = appendEvents(b, p.events)
	b = append(b, `,"next_cursor":`...)
	b = strconv.AppendQuote(b, p.NextCursor)
	b = append(b, `,"first_index":`...)
	b = strconv.AppendUint(b, p.FirstIndex, 10)
	b = append(b, `,"durable_index":`...)
	b = strconv.AppendUint(b, p.DurableIndex, 10)
	return append(b, '}')
}

// appendEvents appends `{"events":[e1,e2,...]` (no closing brace).
func appendEvents(b []byte, events []*encodedEvent) []byte {
	b = append(b, `{"events":[`...)
	for i, e := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e.json...)
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

// feedRequest is a parsed feed request.
type feedRequest struct {
	campaignID, skuID string
	source            FeedSource
	log               *wal.Log
	def               sku.Definition
	chain             history.Chain
	from              uint64 // the first index to send
	fromStart         bool   // no cursor: from follows the start of the retained log
	limit             int
	wait              time.Duration
	types             map[string]bool // nil: the default types
}

// handleFeed is GET /admin/campaigns/{c}/skus/{s}/events: one page of the
// SKU's events after the cursor, as JSON (long poll with wait=), or a
// Server-Sent Events stream with Accept: text/event-stream.
func (s *Server) handleFeed(ctx *fasthttp.RequestCtx) string {
	req, failure := s.parseFeed(ctx)
	if failure != nil {
		return write(ctx, *failure)
	}
	if strings.Contains(string(ctx.Request.Header.Peek("Accept")), "text/event-stream") {
		return s.streamFeed(ctx, req)
	}
	page, failure := s.waitPage(req, time.Now().Add(req.wait))
	if failure != nil {
		return write(ctx, *failure)
	}
	return writeJSONPage(ctx, page.appendJSON)
}

// feedParams are the query parameters of both feed routes.
type feedParams struct {
	limit int
	wait  time.Duration
	types map[string]bool // nil: the default types
}

// parseFeed checks the SKU, the cursor (after=, else Last-Event-ID) and
// the parameters.
func (s *Server) parseFeed(ctx *fasthttp.RequestCtx) (*feedRequest, *reply) {
	p, failure := parseFeedParams(ctx)
	if failure != nil {
		return nil, failure
	}
	campaignID, _ := ctx.UserValue("campaign_id").(string)
	skuID, _ := ctx.UserValue("sku_id").(string)
	cursor := string(ctx.QueryArgs().Peek("after"))
	if cursor == "" {
		cursor = string(ctx.Request.Header.Peek("Last-Event-ID"))
	}
	return s.openFeed(campaignID, skuID, cursor, p)
}

// parseFeedParams reads limit=, wait= and types=.
func parseFeedParams(ctx *fasthttp.RequestCtx) (feedParams, *reply) {
	fail := func(detail string) (feedParams, *reply) {
		r := errorReply(fasthttp.StatusBadRequest, reasonBadRequest, detail)
		return feedParams{}, &r
	}
	p := feedParams{limit: feedMaxLimit}
	args := ctx.QueryArgs()
	if v := args.Peek("limit"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 || n > feedMaxLimit {
			return fail(fmt.Sprintf("limit must be 1..%d", feedMaxLimit))
		}
		p.limit = n
	}
	if v := args.Peek("wait"); len(v) > 0 {
		d, err := parseWait(string(v))
		if err != nil {
			return fail(err.Error())
		}
		p.wait = d
	}
	if v := args.Peek("types"); len(v) > 0 {
		p.types = map[string]bool{}
		for _, t := range strings.Split(string(v), ",") {
			if !knownEventType(t) {
				return fail("unknown event type " + strconv.Quote(t))
			}
			p.types[t] = true
		}
	}
	return p, nil
}

// openFeed opens the feed of one SKU after cursor ("" for the start of
// the retained log).
func (s *Server) openFeed(campaignID, skuID, cursor string, p feedParams) (*feedRequest, *reply) {
	fail := func(status int, reason, detail string) (*feedRequest, *reply) {
		r := errorReply(status, reason, detail)
		return nil, &r
	}
	req := &feedRequest{campaignID: campaignID, skuID: skuID, limit: p.limit, wait: p.wait, types: p.types}
	source, ok := s.engine.(FeedSource)
	if !ok {
		return fail(fasthttp.StatusNotFound, reasonNotFound, "this engine serves no event feed")
	}
	req.source = source
	st, known := s.engine.SKUStats(campaignID, skuID)
	if !known {
		return fail(fasthttp.StatusNotFound, reasonNotFound, "unknown SKU")
	}
	log, dir, ok := source.FeedLog(campaignID, skuID)
	if !ok {
		return fail(fasthttp.StatusServiceUnavailable, reasonUnavailable, "the SKU's log is not open (recovering)")
	}
	req.log, req.def = log, st.Definition
	chain, err := s.feedChains.load(dir, log, req.def.IDKey)
	if err != nil {
		s.log.Error("feed: reading the history chain", "dir", dir, "err", err)
		return fail(fasthttp.StatusInternalServerError, reasonInternal, "")
	}
	req.chain = chain
	req.from, req.fromStart = max(log.FirstIndex(), 1), true
	if cursor == "" {
		return req, nil
	}
	if failure := req.seek(cursor); failure != nil {
		return nil, failure
	}
	return req, nil
}

// seek moves an opened feed past cursor (an event id of its SKU).
func (req *feedRequest) seek(cursor string) *reply {
	fail := func(status int, reason, detail string) *reply {
		r := errorReply(status, reason, detail)
		return &r
	}
	h, index, err := parseCursor(cursor)
	if err != nil {
		return fail(fasthttp.StatusBadRequest, reasonBadCursor, err.Error())
	}
	forkIndex, err := req.chain.Check(h, index)
	switch {
	case errors.Is(err, history.ErrUnknown):
		return fail(fasthttp.StatusBadRequest, reasonBadCursor, "the cursor is not one of this SKU's")
	case errors.Is(err, history.ErrDiverged):
		r := jsonReply(fasthttp.StatusConflict, reasonCursorDiverged, feedError{
			Error:     reasonCursorDiverged,
			Detail:    "the log was restored to an earlier point; resynchronise from the export and continue after fork_index",
			ForkIndex: forkIndex, History: req.chain.At(forkIndex + 1), SKUID: req.skuID,
		})
		return &r
	}
	if durable := req.log.DurableIndex(); index > durable {
		r := jsonReply(fasthttp.StatusConflict, reasonCursorDiverged, feedError{
			Error:     reasonCursorDiverged,
			Detail:    fmt.Sprintf("the cursor is beyond the log's durable index %d: this log is an older copy", durable),
			ForkIndex: durable, SKUID: req.skuID,
		})
		return &r
	}
	req.from, req.fromStart = index+1, false
	return nil
}

// parseCursor splits "<history>-<index>".
func parseCursor(cursor string) (string, uint64, error) {
	h, idx, ok := strings.Cut(cursor, "-")
	if !ok || len(h) != 16 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", 0, fmt.Errorf("malformed cursor %q: want <16 hex digits>-<index>", cursor)
	}
	index, err := strconv.ParseUint(idx, 10, 64)
	if err != nil || index == 0 {
		return "", 0, fmt.Errorf("malformed cursor %q: bad index", cursor)
	}
	return h, index, nil
}

// parseWait accepts a Go duration ("30s") or whole seconds ("30").
func parseWait(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(v)
		if nerr != nil {
			return 0, fmt.Errorf("wait %q: want a duration such as 30s", v)
		}
		d = time.Duration(n) * time.Second
	}
	if d < 0 || d > feedMaxWait {
		return 0, fmt.Errorf("wait must be 0..%s", feedMaxWait)
	}
	return d, nil
}

// knownEventType reports whether t is one of the feed's event types.
func knownEventType(t string) bool {
	for rt := 1; rt < 256; rt++ {
		if eventType(sku.RecordType(rt)) == t {
			return true
		}
	}
	return false
}

// wanted reports whether an event of type t goes to this consumer.
func (req *feedRequest) wanted(t string) bool {
	if req.types != nil {
		return req.types[t]
	}
	return t != eventRequestRejected
}

// waitPage reads the next page, waiting until deadline for a durable
// record after the cursor.
func (s *Server) waitPage(req *feedRequest, deadline time.Time) (*feedPage, *reply) {
	for {
		page, failure := s.readPage(req)
		if failure != nil || page.NextCursor != "" {
			return page, failure
		}
		wait := time.Until(deadline)
		if wait <= 0 || s.feeds.Err() != nil { // shutting down: answer what there is
			page.NextCursor = req.cursorBefore()
			return page, nil
		}
		s.waitDurable(req.log.DurableAfter(req.from-1), wait)
	}
}

// waitDurable waits for durable (a log's DurableAfter channel, closed by
// its flusher once per group commit and shared by every reader of the
// SKU), for wait, or for shutdown. An idle reader costs one timer and
// nothing else until one of them fires.
func (s *Server) waitDurable(durable <-chan struct{}, wait time.Duration) {
	s.feedMetrics.waiting.Add(1)
	defer s.feedMetrics.waiting.Add(-1)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-durable:
		s.feedMetrics.woke(wokeByRecord)
	case <-timer.C:
		s.feedMetrics.woke(wokeByDeadline)
	case <-s.feeds.Done():
		s.feedMetrics.woke(wokeByShutdown)
	}
}

// cursorBefore is the cursor of the record before req.from: where the
// consumer stands ("" before the first record of a log).
func (req *feedRequest) cursorBefore() string {
	if req.from <= 1 {
		return ""
	}
	return eventID(req.chain.At(req.from-1), req.from-1)
}

// readPage reads up to req.limit durable records from req.from and maps
// them to events; NextCursor is "" when there was no record. It advances
// req.from. The SKU's event cache answers when it holds the records (a
// consumer at the tail behind another); else one reader at a time reads
// the log and fills the cache (readLog), and the others then find it
// filled.
func (s *Server) readPage(req *feedRequest) (*feedPage, *reply) {
	if req.from > req.log.DurableIndex() && req.log.Err() == nil {
		// Nothing new (a waiting reader's wake-up, a heartbeat): no cache,
		// no lock but the log's (a failed or closed log takes readLog's
		// answer).
		return &feedPage{FirstIndex: req.log.FirstIndex(), DurableIndex: req.log.DurableIndex()}, nil
	}
	cache := s.eventCaches.of(req.campaignID, req.skuID, req.chain.At(math.MaxUint64))
	if page, ok := req.pageFromCache(cache); ok {
		return page, nil
	}
	cache.fill.Lock()
	defer cache.fill.Unlock()
	if page, ok := req.pageFromCache(cache); ok {
		return page, nil
	}
	return s.readLog(req, cache)
}

// pageFromCache serves the next page from the cache alone, when it holds
// every record of it. It answers only for records at or after the log's
// first index (a compacted cursor gets its 410 from readLog) and through
// the durable index read before it.
func (req *feedRequest) pageFromCache(cache *eventCache) (*feedPage, bool) {
	durable := req.log.DurableIndex()
	if req.from > durable || req.from < req.log.FirstIndex() {
		return nil, false
	}
	to := min(durable, req.from+uint64(req.limit)-1)
	events, ok := cache.appendRange(make([]*encodedEvent, 0, min(to-req.from+1, 64)), req.from, to, req.wanted)
	if !ok {
		return nil, false
	}
	page := &feedPage{events: events, FirstIndex: req.log.FirstIndex(), DurableIndex: durable}
	req.from, req.fromStart = to+1, false
	page.NextCursor = req.cursorBefore()
	return page, true
}

// readLog reads the next page from the log, maps and encodes the records
// the cache lacks as it reads them, and caches them (the records of types
// this reader does not want unencoded: their place only). The events of
// records that need their reservation's view (needsReservation) are
// encoded after the read, with the page's views looked up in one batch.
func (s *Server) readLog(req *feedRequest, cache *eventCache) (*feedPage, *reply) {
	type pending struct {
		at    int // in page.events
		index uint64
		rec   sku.Record
	}
	var (
		waiting []pending
		ids     *sku.ReservationIDs // made for the first record to encode
		events  = make([]*encodedEvent, 0, min(req.limit, 64))
		scratch []byte // an event is encoded here, then copied at its size
	)
	encode := func(rec sku.Record, index uint64, view sku.View) (*encodedEvent, error) {
		if ids == nil {
			ids = sku.NewReservationIDs(req.def)
		}
		ce := newEvent(rec, index, eventID(req.chain.At(index), index), req.def, ids, view)
		var err error
		if scratch, err = ce.appendJSON(scratch[:0]); err != nil {
			return nil, fmt.Errorf("encoding the event of record %d: %w", index, err)
		}
		e := &encodedEvent{index: index, id: ce.ID, typ: ce.Type, json: bytes.Clone(scratch)}
		cache.put(e)
		return e, nil
	}
	next, err := req.log.ReadDurable(req.from, req.limit, func(index uint64, typ byte, payload []byte) error {
		t := sku.RecordType(typ)
		et := eventType(t)
		if !req.wanted(et) { // advances the cursor only
			if _, ok := cache.get(index); !ok {
				cache.put(&encodedEvent{index: index, id: eventID(req.chain.At(index), index), typ: et})
			}
			return nil
		}
		if e, ok := cache.get(index); ok && e.json != nil {
			events = append(events, e)
			return nil
		}
		rec, err := sku.DecodeRecord(t, payload)
		if err != nil {
			return fmt.Errorf("record %d: %w", index, err)
		}
		if needsReservation(t) {
			waiting = append(waiting, pending{at: len(events), index: index, rec: rec})
			events = append(events, nil)
			return nil
		}
		e, err := encode(rec, index, sku.View{})
		events = append(events, e)
		return err
	})
	page := &feedPage{FirstIndex: req.log.FirstIndex(), DurableIndex: req.log.DurableIndex()}
	switch {
	case errors.Is(err, wal.ErrCompacted):
		var compacted *wal.CompactedError
		if errors.As(err, &compacted) {
			page.FirstIndex = max(page.FirstIndex, compacted.First)
			if req.fromStart && compacted.First > req.from {
				// A truncation overtook a consumer without a cursor: it
				// starts at the retained log, wherever that is now.
				req.from = compacted.First
				return s.readLog(req, cache)
			}
		}
		r := jsonReply(fasthttp.StatusGone, reasonCursorCompacted, feedError{
			Error: reasonCursorCompacted,
			Detail: fmt.Sprintf("records before %d were removed after a snapshot; resynchronise from GET /admin/campaigns/%s/skus/%s/reservations and continue after its index",
				page.FirstIndex, req.campaignID, req.skuID),
			FirstIndex: page.FirstIndex, SKUID: req.skuID,
		})
		return nil, &r
	case errors.Is(err, wal.ErrClosed), errors.Is(err, wal.ErrFailed):
		r := errorReply(fasthttp.StatusServiceUnavailable, reasonUnavailable, "the SKU's log closed; retry")
		return nil, &r
	case err != nil:
		s.log.Error("feed: reading the log", "campaign", req.campaignID, "sku", req.skuID, "err", err)
		r := errorReply(fasthttp.StatusInternalServerError, reasonInternal, "")
		return nil, &r
	}
	if next == req.from {
		return page, nil // no record
	}
	if len(waiting) > 0 {
		views, failure := s.reservationsOf(req, func(yield func(sku.Record)) {
			for _, p := range waiting {
				yield(p.rec)
			}
		})
		if failure != nil {
			return nil, failure
		}
		for _, p := range waiting {
			e, err := encode(p.rec, p.index, views[p.rec.Seq])
			if err != nil {
				s.log.Error("feed: encoding an event", "campaign", req.campaignID, "sku", req.skuID, "err", err)
				r := errorReply(fasthttp.StatusInternalServerError, reasonInternal, "")
				return nil, &r
			}
			events[p.at] = e
		}
	}
	page.events = events
	req.from, req.fromStart = next, false
	page.NextCursor = req.cursorBefore()
	return page, nil
}

// reservationsOf looks up the reservations the records' events need, in
// one batch for the page.
func (s *Server) reservationsOf(req *feedRequest, records func(yield func(sku.Record))) (map[uint32]sku.View, *reply) {
	var seqs []uint32
	seen := map[uint32]bool{}
	records(func(r sku.Record) {
		if needsReservation(r.Type) && !seen[r.Seq] {
			seen[r.Seq] = true
			seqs = append(seqs, r.Seq)
		}
	})
	views := make(map[uint32]sku.View, len(seqs))
	if len(seqs) == 0 {
		return views, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	found, err := req.source.Reservations(ctx, req.campaignID, req.skuID, seqs)
	if err != nil {
		f := classify(err)
		r := errorReply(f.status, f.reason, "looking up the page's reservations")
		return nil, &r
	}
	for i, seq := range seqs {
		views[seq] = found[i]
	}
	return views, nil
}

// feedSSEEvent is one event of a stream and the id: it goes out with (its
// cursor: the event's id on a SKU's feed, the campaign cursor as of it on
// a campaign's).
type feedSSEEvent struct {
	id string
	e  *encodedEvent
}

// streamFeed serves a SKU's feed as Server-Sent Events (streamEvents).
func (s *Server) streamFeed(ctx *fasthttp.RequestCtx, req *feedRequest) string {
	return s.streamEvents(ctx, func(deadline time.Time) ([]feedSSEEvent, *reply) {
		page, failure := s.waitPage(req, deadline)
		if failure != nil {
			return nil, failure
		}
		events := make([]feedSSEEvent, len(page.events))
		for i, e := range page.events {
			events[i] = feedSSEEvent{id: e.id, e: e}
		}
		return events, nil
	})
}

// streamEvents serves a feed as Server-Sent Events (WHATWG HTML §9.2):
// next waits until deadline for the next events; each goes out with its
// id: (its cursor, so EventSource resumes with Last-Event-ID) and its type
// as event:. A ": ping" comment every Config.FeedHeartbeat keeps proxies
// open. fasthttp does not report a disconnect, so before each heartbeat
// the stream reads from its client, which sends nothing on an SSE
// connection: end of file means it closed, and the stream ends then,
// within one heartbeat (a client that vanished without closing is found
// by the write timeout). The connection closes with the stream. An error
// after the stream started (compaction, a closed log) is sent as an
// "error" event with the JSON error body, and ends the stream.
func (s *Server) streamEvents(ctx *fasthttp.RequestCtx, next func(deadline time.Time) ([]feedSSEEvent, *reply)) string {
	conn := ctx.Conn()
	writeTimeout, heartbeat := s.cfg.WriteTimeout, s.cfg.FeedHeartbeat
	ctx.SetContentType("text/event-stream")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.SetConnectionClose() // nothing follows a stream: the heartbeat may read the connection
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		s.feedMetrics.streams.Add(1)
		defer s.feedMetrics.streams.Add(-1)
		flush := func() bool {
			conn.SetWriteDeadline(time.Now().Add(writeTimeout))
			return w.Flush() == nil
		}
		w.WriteString("retry: 1000\n\n")
		if !flush() {
			return
		}
		for s.feeds.Err() == nil {
			events, failure := next(time.Now().Add(heartbeat))
			if failure != nil {
				fmt.Fprintf(w, "event: error\ndata: %s\n\n", failure.body)
				flush()
				return
			}
			for _, e := range events {
				writeSSEEvent(w, e.id, e.e.typ, e.e.json)
			}
			if len(events) == 0 {
				if clientClosed(conn) {
					return
				}
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

// ensure *actors.Engine serves the feed.
var _ FeedSource = (*actors.Engine)(nil)
