package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi/jsonkeys"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// The batch reserve is for gateways that forward admitted
// buyers in batches and pay HTTP once per batch, as Redis pipelining and
// Kafka producers do:
//
//	POST /v1/campaigns/{c}/skus/{s}/reservations:batch
//	{"items": [{"request_id": "...", "user_id": "...", "entry_pass": "..."}, ...]}   1 to MaxBatchItems items
//
//	200 {"results": [{"status": 202, "body": {...}}, {"status": 409, "body": {"error": "SOLD_OUT"}},
//	                 {"status": 429, "retry_after": 1, "body": {"error": "QUEUE_FULL"}}, ...]}
//
// Each result is what POST .../reservations would have answered the item
// alone (its status and its body, byte for byte), in the items' order. An
// item goes through the same layers as a single reserve (its ids, the
// lottery refusal, its entry pass, the answer cache, the fast paths on
// the SKU's published durable stats, a permit), and the items that reach
// the engine go to the SKU's inbox as one call (actors.Engine.ReserveBatch,
// each item with its pass's holder): decided in order in one round,
// durable before the answer. A bad item fails alone (400 in its result,
// an entry-pass refusal 403, a lottery SKU's items 409 LOTTERY_SALE); a
// bad envelope (not one object with just "items", no item, too many) fails
// the whole request with 400, an unknown SKU with 404.
//
// What differs from the same items sent one by one: the fast paths read
// the SKU's stats once per batch, so items after the last unit in the
// same batch reach the engine and get its answer, as single reserves
// racing the last unit do: a recorded SOLD_OUT (final for the request_id,
// where the fast path's is not), or ALREADY_PURCHASED for a user who holds
// a unit (the fast path says SOLD_OUT first); the per-user flight is not
// joined (the engine orders a user's items and answers a second purchase
// ALREADY_PURCHASED); and the batch takes one permit per item that
// reaches the engine: the items beyond the SKU's free permits are
// answered 429 QUEUE_FULL or THROTTLED, as single reserves beyond them would be.

// MaxBatchItems bounds the items of one batch reserve.
const MaxBatchItems = actors.MaxBatchItems

// DefaultMaxBatchBodySize caps the body of a batch reserve (bytes): 512
// KiB, the limit docs/api.md gives, which holds 1,000 items of the longest
// ids with room for an entry pass each (over 500 bytes an item).
const DefaultMaxBatchBodySize = 512 << 10

// batchSuffix ends the path of the batch route.
const batchSuffix = "/reservations:batch"

// isBatchPath reports whether a request URI names the batch route (for
// its body limit, decided before the body is read).
func isBatchPath(uri []byte) bool {
	if q := bytes.IndexByte(uri, '?'); q >= 0 {
		uri = uri[:q]
	}
	return bytes.HasSuffix(uri, []byte(batchSuffix))
}

var batchParsers fastjson.ParserPool

// parseBatchEnvelope decodes {"items": [...]} and returns each item's raw
// JSON, to be decoded alone (parseReserveBody): a bad item fails only
// itself. The envelope follows the reserve body's key rules (exact, none
// unknown or repeated).
func parseBatchEnvelope(body []byte) ([][]byte, error) {
	if len(bytes.Trim(body, jsonSpace)) == 0 {
		return nil, errEmptyBody
	}
	p := batchParsers.Get()
	defer batchParsers.Put(p)
	v, err := p.ParseBytes(body)
	if err != nil {
		return nil, fastjsonError(body)
	}
	obj, err := v.Object()
	if err != nil {
		return nil, errNotObject
	}
	var items []*fastjson.Value
	seen := false
	obj.Visit(func(key []byte, val *fastjson.Value) {
		if err != nil {
			return
		}
		if string(key) != "items" {
			err = errors.New(keyDetail(&jsonkeys.Error{Key: string(key)}))
			return
		}
		if seen {
			err = errors.New(keyDetail(&jsonkeys.Error{Key: string(key), Repeated: true}))
			return
		}
		seen = true
		if items, err = val.Array(); err != nil {
			err = &fieldError{field: "items", want: "an array"}
		}
	})
	switch {
	case err != nil:
		return nil, err
	case !seen:
		return nil, missingField("items")
	case len(items) == 0:
		return nil, fmt.Errorf("items: must hold 1 to %d reserves", MaxBatchItems)
	case len(items) > MaxBatchItems:
		return nil, fmt.Errorf("items: %d reserves, at most %d in one batch", len(items), MaxBatchItems)
	}
	raw := make([][]byte, len(items))
	for i, it := range items {
		raw[i] = it.MarshalTo(nil)
	}
	return raw, nil
}

// handleReserveBatch is POST /v1/campaigns/{c}/skus/{s}/reservations:batch.
func (s *Server) handleReserveBatch(ctx *fasthttp.RequestCtx) string {
	start := time.Now()
	campaignID, skuID, ok := pathSKU(ctx)
	if !ok {
		s.rejected(layerValidation)
		return write(ctx, errorReply(reasonNotFound, "no such SKU"))
	}
	raw, err := parseBatchEnvelope(ctx.PostBody())
	if err != nil {
		s.rejected(layerValidation)
		return write(ctx, bodyError(err))
	}
	st, known := s.engine.SKUStats(campaignID, skuID)
	if !known {
		s.rejected(layerValidation)
		return write(ctx, errorReply(reasonNotFound, "no such SKU"))
	}
	reps := s.reserveBatch(campaignID, skuID, st, raw)
	s.countBatch(campaignID, skuID, reps, time.Since(start))
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType("application/json")
	ctx.SetBody(appendBatchResults(nil, reps))
	return outcomeOK
}

// countBatch counts each item's answer in the SKU's ingress counters (the
// dashboard's), as timedReserve counts a single reserve's; each item's
// latency is its batch's, took (from routing to the answers).
func (s *Server) countBatch(campaignID, skuID string, reps []reply, took time.Duration) {
	c := s.ingress.of(campaignID, skuID)
	if c == nil {
		return
	}
	for _, rep := range reps {
		c.count(rep.outcome, rep.status, took)
	}
}

// batchItem is one item on its way through the ingress layers: its body,
// and what its entry pass gave (the request_id to use and the holder).
type batchItem struct {
	req            reserveRequest
	pass           passed
	rkey           dedupKey
	retryOfUnknown bool
}

// reserveBatch answers each raw item as the single reserve would, sending
// the items no layer answered to the engine as one batch. st is the SKU's
// published stats, read once for the batch (the SKU is known).
func (s *Server) reserveBatch(campaignID, skuID string, st actors.Stats, raw [][]byte) []reply {
	reps := make([]reply, len(raw))
	items := make([]batchItem, len(raw))
	var pending []int // the items for the engine, in order
	now := s.cfg.Clock()
	for i, body := range raw {
		rep, done := s.batchItemIngress(campaignID, skuID, body, &st, now, &items[i])
		if done {
			reps[i] = rep
			continue
		}
		pending = append(pending, i)
	}
	if len(pending) == 0 {
		return reps
	}
	// One permit per item for the engine, as many as admission allows:
	// the items beyond them are refused, as single reserves beyond them
	// would be.
	g := s.gates.get(campaignID, skuID)
	d := s.limits.decide(&st, g)
	granted, refusal := g.admitN(int64(len(pending)), d)
	defer g.releaseN(granted)
	for _, i := range pending[granted:] {
		reps[i] = s.busy(refusal, d)
	}
	pending = pending[:granted]
	if len(pending) == 0 {
		return reps
	}
	batch := make([]actors.ReserveItem, len(pending))
	for j, i := range pending {
		it := &items[i]
		batch[j] = actors.ReserveItem{RequestID: it.pass.requestID, UserID: it.req.UserID, Holder: it.pass.holder}
	}
	results, err := s.engine.ReserveBatch(s.deadlines.get(), campaignID, skuID, batch)
	for j, i := range pending {
		r := actors.ItemResult{Err: err}
		if err == nil {
			r = results[j]
		}
		reps[i] = s.batchItemReply(campaignID, skuID, &st, &items[i], r)
	}
	return reps
}

// batchItemIngress runs one item through the layers before the engine,
// in handleReserve's order: decoding, the ids, the user's cell, the
// lottery refusal, the entry pass (checkEntryPass on the SKU's published definition), the
// answer cache and the fast paths on the SKU's stats st. done reports
// that rep answers the item; otherwise it goes to the engine, it filled.
func (s *Server) batchItemIngress(campaignID, skuID string, body []byte, st *actors.Stats,
	now time.Time, it *batchItem) (rep reply, done bool) {
	var d reserveDecoder
	defer d.release()
	req, err := d.decode(body)
	if err != nil {
		s.rejected(layerValidation)
		return bodyError(err), true
	}
	if rep, bad := s.checkBatchItem(req); bad {
		s.rejected(layerValidation)
		return rep, true
	}
	if rep, refused := s.checkCell(campaignID, skuID, req.UserID); refused {
		return rep, true
	}
	if st.Definition.Lottery != nil {
		s.rejected(layerValidation)
		return replyLotterySale, true
	}
	p, rep, ok := s.checkEntryPassAt(st.Definition, campaignID, skuID, req.RequestID, req.UserID, req.EntryPass, now)
	if !ok {
		return rep, true
	}
	req.EntryPass = nil // a view into parser's buffer, checked now
	it.req, it.pass, it.rkey = req, p, requestKey(campaignID, skuID, p.requestID)
	if a, ok := s.answers.get(it.rkey); ok {
		if a.userID != req.UserID {
			s.rejected(layerDedup)
			return replyRequestIDReused, true
		}
		if !a.unknown {
			s.rejected(layerDedup)
			return a.rep, true
		}
		it.retryOfUnknown = true
	}
	v := s.limits.precheck(st, now, it.retryOfUnknown)
	if v.gateRefusal() && s.engine.MayKnowRequest(campaignID, skuID, p.requestID) { // as Server.lead
		v = s.limits.precheck(st, now, true)
	}
	return s.fastRefusal(v, st, now)
}

// checkBatchItem validates a decoded item's ids as handleReserve
// validates a single reserve's body (request_id may be left out when the
// item carries an entry pass): bad reports rep, its 400. The pass itself
// is checked next, by checkEntryPass (batchItemIngress).
func (s *Server) checkBatchItem(req reserveRequest) (rep reply, bad bool) {
	for _, msg := range []string{checkRequestID(req.RequestID, len(req.EntryPass) > 0), checkID("user_id", req.UserID)} {
		if msg != "" {
			return errorReply(reasonBadRequest, msg), true
		}
	}
	return reply{}, false
}

// batchItemReply encodes the engine's answer to one item, and keeps in
// the answer cache what Server.lead keeps for a single reserve.
func (s *Server) batchItemReply(campaignID, skuID string, st *actors.Stats, it *batchItem, r actors.ItemResult) reply {
	if r.Err != nil {
		f := classify(r.Err)
		if f.unknown {
			s.answers.markUnknown(it.rkey, it.req.UserID)
			return s.resultUnknown(LookupURL(campaignID, skuID, it.pass.requestID))
		}
		if f.reason == reasonInternal {
			s.log.Error("batch reserve failed", "campaign_id", campaignID, "sku_id", skuID, "err", r.Err)
		}
		return s.failureReply(f, r.Err)
	}
	rep, cache := s.reserveReply(&r.Result)
	if r.Result.Outcome == sku.OutcomeSoldOut && st.Definition.Cell != "" {
		rep, cache = s.soldOutReply(*st), false // a cell's SOLD_OUT is never final (cell.go)
	}
	if cache {
		s.answers.putFinal(it.rkey, it.req.UserID, rep)
	}
	return rep
}

// appendBatchResults appends the batch answer: {"results": [...]}, each
// result the status and the body of one item's reply, and for a 429 its
// Retry-After in seconds ("retry_after").
func appendBatchResults(dst []byte, reps []reply) []byte {
	dst = append(dst, `{"results":[`...)
	for i, rep := range reps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"status":`...)
		dst = strconv.AppendInt(dst, int64(rep.status), 10)
		if rep.retryAfter != "" {
			dst = append(dst, `,"retry_after":`...)
			dst = append(dst, rep.retryAfter...)
		}
		dst = append(dst, `,"body":`...)
		dst = rep.appendBody(dst)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}
