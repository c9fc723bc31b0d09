package cells

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi"
)

// A batch reserve of a celled SKU (POST .../reservations:batch, the
// envelope {"items": [...]} of httpapi/batch.go) holds users of several
// cells. The router splits it: each item goes, in order, to its user's
// cell as one sub-batch per cell, sent at once; the cells' results are put
// back in the items' order, so the answer is what one node would have
// answered item by item. An item without a valid user_id goes with the
// map's first cell's sub-batch (any cell answers it 400 alike). This file
// is the pure part: splitting the body and joining the answers.

// BatchPart is one cell's sub-batch: its body and, for each of its items,
// the item's position in the batch and its request_id ("" when it has
// none: an entry pass gives it).
type BatchPart struct {
	Cell       string
	Body       []byte
	At         []int
	RequestIDs []string
}

// BatchSplit is a batch reserve of a SKU split by cell: the parts in the
// order of their first item, and the batch's item count.
type BatchSplit struct {
	CampaignID, SKUID string
	Parts             []BatchPart
	Items             int
}

// ErrBatchEnvelope: the body is not a batch envelope the router can
// split; the router then sends it whole to one cell, which answers it
// (400 with the reason).
var ErrBatchEnvelope = errors.New("cells: not a batch envelope")

// SplitBatch splits a batch reserve body of the published SKU p by the
// cells of its map (Published.CellOf). It refuses (ErrBatchEnvelope) a body that is not one
// object holding just "items", an array of at most maxItems.
func SplitBatch(p *Published, body []byte, maxItems int) (BatchSplit, error) {
	var parser fastjson.Parser
	v, err := parser.ParseBytes(body)
	if err != nil {
		return BatchSplit{}, ErrBatchEnvelope
	}
	obj, err := v.Object()
	if err != nil || obj.Len() != 1 {
		return BatchSplit{}, ErrBatchEnvelope
	}
	items := v.GetArray("items") // nil when the one key is not "items", or not an array
	if len(items) == 0 || len(items) > maxItems {
		return BatchSplit{}, ErrBatchEnvelope
	}
	byCell := map[string]int{} // cell -> index in Parts
	split := BatchSplit{CampaignID: p.Definition.CampaignID, SKUID: p.Definition.SKUID, Items: len(items)}
	for i, it := range items {
		cell := p.Map.Cells[0]
		if user := it.GetStringBytes("user_id"); sku.ValidID(string(user)) {
			cell = p.CellOf(string(user))
		}
		k, ok := byCell[cell]
		if !ok {
			k = len(split.Parts)
			byCell[cell] = k
			split.Parts = append(split.Parts, BatchPart{Cell: cell, Body: []byte(`{"items":[`)})
		}
		part := &split.Parts[k]
		if len(part.At) > 0 {
			part.Body = append(part.Body, ',')
		}
		part.Body = it.MarshalTo(part.Body)
		part.At = append(part.At, i)
		part.RequestIDs = append(part.RequestIDs, string(it.GetStringBytes("request_id")))
	}
	for k := range split.Parts {
		split.Parts[k].Body = append(split.Parts[k].Body, "]}"...)
	}
	return split, nil
}

// PartAnswer is a cell's answer to its sub-batch: the HTTP status and
// body, or Err when the cell did not answer, with Unknown when the
// sub-batch may have reached the cell all the same (anything but a failed
// connection: a cell paused or overloaded past the timeout may have
// decided its items).
type PartAnswer struct {
	Status  int
	Body    []byte
	Err     error
	Unknown bool
}

// JoinBatch builds the batch's answer body from the cells' answers
// (answers[k] is Parts[k]'s), its results in the items' order. A cell's
// 200 {"results": [...]} gives its items their results; any other answer
// is each of its items' result ({"status": S, "body": B}), and a cell
// that did not answer gives its items 504 RESULT_UNKNOWN with the status
// URL of each item's request_id when it may have received them
// (PartAnswer.Unknown), as one node answers a reserve it could not
// confirm, else 503 CELL_UNAVAILABLE with retry_after 1. The answer's
// status is 200, as a single node's.
func JoinBatch(split BatchSplit, answers []PartAnswer) []byte {
	results := make([][]byte, split.Items)
	var p fastjson.Parser
	for k, part := range split.Parts {
		a := answers[k]
		var got []*fastjson.Value
		if a.Err == nil && a.Status == 200 {
			if v, err := p.ParseBytes(a.Body); err == nil {
				if rs := v.GetArray("results"); len(rs) == len(part.At) { // nil without "results"
					got = rs
				}
			}
		}
		for j, at := range part.At {
			switch {
			case got != nil:
				results[at] = got[j].MarshalTo(nil)
			case a.Err != nil && a.Unknown:
				results[at] = unknownResult(split, part.Cell, part.RequestIDs[j], a.Err)
			case a.Err != nil:
				detail := strconv.Quote(fmt.Sprintf("cell %s: %v", part.Cell, a.Err))
				results[at] = []byte(`{"status":` + strconv.Itoa(httpapi.StatusOf(httpapi.ReasonCellUnavailable)) +
					`,"retry_after":` + httpapi.RetryAfterOf(httpapi.ReasonCellUnavailable) + `,"body":{"error":"` + httpapi.ReasonCellUnavailable + `","detail":` + detail + `}}`)
			default:
				results[at] = partResult(part.Cell, a)
			}
		}
	}
	out := []byte(`{"results":[`)
	for i, r := range results {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r...)
	}
	return append(out, "]}"...)
}

// unknownResult is the result of an item with request_id requestID that
// cell may have decided but did not answer (err).
func unknownResult(split BatchSplit, cell, requestID string, err error) []byte {
	url := ""
	if sku.ValidID(requestID) {
		url = httpapi.LookupURL(split.CampaignID, split.SKUID, requestID)
	}
	body := httpapi.ResultUnknownBody(url, UnansweredDetail(cell, err))
	return append([]byte(`{"status":`+strconv.Itoa(httpapi.StatusOf(httpapi.ReasonResultUnknown))+`,"body":`), append(body, '}')...)
}

// UnansweredDetail is the detail of a RESULT_UNKNOWN for a request that
// cell may have received and did not answer (err).
func UnansweredDetail(cell string, err error) string {
	return fmt.Sprintf("cell %s did not answer (%v): the request may have been applied; see status_url, or retry it with the same ids", cell, err)
}

// partResult is an item's result when its cell answered the sub-batch
// with something else than its results: that answer.
func partResult(cell string, a PartAnswer) []byte {
	body := bytes.TrimSpace(a.Body)
	if fastjson.ValidateBytes(body) != nil || len(body) == 0 {
		body = []byte(`{"error":"CELL_ANSWER","detail":` + strconv.Quote(fmt.Sprintf("cell %s answered %d without a JSON body", cell, a.Status)) + `}`)
	}
	return append([]byte(`{"status":`+strconv.Itoa(a.Status)+`,"body":`), append(body, '}')...)
}
