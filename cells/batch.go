package cells

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/seckill/seckill/actors/sku"
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
// the item's position in the batch.
type BatchPart struct {
	Cell string
	Body []byte
	At   []int
}

// BatchSplit is a batch reserve split by cell: the parts in the order of
// their first item, and the batch's item count.
type BatchSplit struct {
	Parts []BatchPart
	Items int
}

// ErrBatchEnvelope: the body is not a batch envelope the router can
// split; the router then sends it whole to one cell, which answers it
// (400 with the reason).
var ErrBatchEnvelope = errors.New("cells: not a batch envelope")

// SplitBatch splits a batch reserve body of SKU (campaignID, skuID) by
// the cells of m. It refuses (ErrBatchEnvelope) a body that is not one
// object holding just "items", an array of at most maxItems.
func SplitBatch(m *Map, campaignID, skuID string, body []byte, maxItems int) (BatchSplit, error) {
	var p fastjson.Parser
	v, err := p.ParseBytes(body)
	if err != nil {
		return BatchSplit{}, ErrBatchEnvelope
	}
	obj, err := v.Object()
	if err != nil || obj.Len() != 1 {
		return BatchSplit{}, ErrBatchEnvelope
	}
	items, err := obj.Get("items").Array()
	if err != nil || len(items) == 0 || len(items) > maxItems {
		return BatchSplit{}, ErrBatchEnvelope
	}
	byCell := map[string]int{} // cell -> index in Parts
	var split BatchSplit
	split.Items = len(items)
	for i, it := range items {
		cell := m.Cells[0]
		if user := it.GetStringBytes("user_id"); sku.ValidID(string(user)) {
			cell = m.CellOf(campaignID, skuID, string(user))
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
	}
	for k := range split.Parts {
		split.Parts[k].Body = append(split.Parts[k].Body, "]}"...)
	}
	return split, nil
}

// PartAnswer is a cell's answer to its sub-batch: the HTTP status and
// body, or Err when the cell did not answer.
type PartAnswer struct {
	Status int
	Body   []byte
	Err    error
}

// JoinBatch builds the batch's answer body from the cells' answers
// (answers[k] is Parts[k]'s), its results in the items' order. A cell's
// 200 {"results": [...]} gives its items their results; any other answer
// is each of its items' result ({"status": S, "body": B}), and a cell
// that did not answer gives its items 503 CELL_UNAVAILABLE with
// retry_after 1. The answer's status is 200, as a single node's.
func JoinBatch(split BatchSplit, answers []PartAnswer) []byte {
	results := make([][]byte, split.Items)
	var p fastjson.Parser
	for k, part := range split.Parts {
		a := answers[k]
		var got []*fastjson.Value
		if a.Err == nil && a.Status == 200 {
			if v, err := p.ParseBytes(a.Body); err == nil {
				if rs, err := v.Get("results").Array(); err == nil && len(rs) == len(part.At) {
					got = rs
				}
			}
		}
		for j, at := range part.At {
			switch {
			case got != nil:
				results[at] = got[j].MarshalTo(nil)
			case a.Err != nil:
				detail := strconv.Quote(fmt.Sprintf("cell %s: %v", part.Cell, a.Err))
				results[at] = []byte(`{"status":503,"retry_after":1,"body":{"error":"CELL_UNAVAILABLE","detail":` + detail + `}}`)
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

// partResult is an item's result when its cell answered the sub-batch
// with something else than its results: that answer.
func partResult(cell string, a PartAnswer) []byte {
	body := bytes.TrimSpace(a.Body)
	if fastjson.ValidateBytes(body) != nil || len(body) == 0 {
		body = []byte(`{"error":"CELL_ANSWER","detail":` + strconv.Quote(fmt.Sprintf("cell %s answered %d without a JSON body", cell, a.Status)) + `}`)
	}
	return append([]byte(`{"status":`+strconv.Itoa(a.Status)+`,"body":`), append(body, '}')...)
}
