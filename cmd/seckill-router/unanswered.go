package main

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/httpapi"
)

// A request the router forwarded and got no answer to may or may not
// have been applied by the cell: a cell paused past the timeout, or one
// that died after reading it, may have reserved. The router then answers
// as one node answers a command it could not confirm: 504 RESULT_UNKNOWN
// with the URL to look the result up at (a reserve's request_id, a
// reservation's status). 503 CELL_UNAVAILABLE (Retry-After 1) only says
// that nothing was delivered (the connection could not be made), or
// answers a read, which changes nothing.

// errNotDelivered: the router sent the request nowhere (a cell it has no
// address for).
var errNotDelivered = errors.New("the router has no address for it")

// delivered reports whether the cell may have received a request whose
// forward failed with err: only a failed connection, or a replica's
// refusal (errNotPrimary), proves it did not.
func delivered(err error) bool {
	var op *net.OpError
	switch {
	case errors.Is(err, errNotDelivered), errors.Is(err, errNotPrimary), errors.Is(err, fasthttp.ErrNoFreeConns), errors.Is(err, fasthttp.ErrDialTimeout):
		return false
	case errors.As(err, &op) && op.Op == "dial":
		return false
	}
	return true
}

// isRead reports whether a request only reads (GET, HEAD, OPTIONS).
func isRead(h *fasthttp.RequestHeader) bool {
	return h.IsGet() || h.IsHead() || h.IsOptions()
}

// unanswered answers a request forwarded to cell that got no answer (err).
func unanswered(ctx *fasthttp.RequestCtx, cell string, err error) {
	ctx.Response.Reset()
	ctx.SetContentType("application/json")
	if isRead(&ctx.Request.Header) || !delivered(err) {
		ctx.SetStatusCode(httpapi.StatusOf(httpapi.ReasonCellUnavailable))
		ctx.Response.Header.Set("Retry-After", httpapi.RetryAfterOf(httpapi.ReasonCellUnavailable))
		ctx.SetBodyString(fmt.Sprintf(`{"error":%q,"detail":"cell %s: %s"}`, httpapi.ReasonCellUnavailable, cell, strings.ReplaceAll(err.Error(), `"`, `'`)))
		return
	}
	ctx.SetStatusCode(httpapi.StatusOf(httpapi.ReasonResultUnknown))
	ctx.SetBody(httpapi.ResultUnknownBody(statusURL(string(ctx.Path()), ctx.PostBody()), cells.UnansweredDetail(cell, err)))
}

// statusURL is where the result of a command sent to path with body is
// looked up: a reserve's request_id lookup, a reservation's status; ""
// for other commands (and a reserve whose request_id its entry pass
// gives).
func statusURL(path string, body []byte) string {
	if campaignID, skuID, requestID, ok := reserveOf(path, body); ok {
		return httpapi.LookupURL(campaignID, skuID, requestID)
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[1] == "reservations" && (parts[0] == "v1" || parts[0] == "admin"):
		if _, _, _, _, err := sku.ParseReservationID(parts[2]); err == nil {
			return httpapi.ReservationURL(parts[2])
		}
	}
	return ""
}

// reserveOf reads a reserve sent to path with body: its campaign, SKU and
// request_id; ok is false for any other route, and for a reserve whose
// request_id its entry pass gives.
func reserveOf(path string, body []byte) (campaignID, skuID, requestID string, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) != 6 || parts[0] != "v1" || parts[1] != "campaigns" || parts[3] != "skus" || parts[5] != "reservations" {
		return "", "", "", false
	}
	requestID = fastjson.GetString(body, "request_id")
	return parts[2], parts[4], requestID, sku.ValidID(requestID)
}
