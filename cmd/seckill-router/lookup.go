package main

import (
	"fmt"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/httpapi"
)

// A request_id lookup (GET …/requests/{request_id}) names no user, so the
// router cannot send it to one cell. A request_id is unique per user's
// cell only: two users of two cells may each have used it (a cell catches
// REQUEST_ID_REUSED only between its own users). The first cell that knows
// it would then hand one user's reservation, whose id is enough to pay or
// cancel it, to the other. So every cell of the SKU is asked, and the
// lookup is answered only when every cell answered: by the one cell that
// holds the request_id, 404 when none does, and 422 REQUEST_ID_REUSED
// when two or more do (its user finds their own result by resending the
// reserve with the same request_id: that goes to the user's cell, which
// answers it again).

// lookup answers a request_id lookup from the answers of cells.
func (r *router) lookup(ctx *fasthttp.RequestCtx, cellIDs []string) {
	var holders []string
	var held *fasthttp.Response
	defer func() {
		if held != nil {
			fasthttp.ReleaseResponse(held)
		}
	}()
	for _, cell := range cellIDs {
		if !r.forward(ctx, cell) {
			return // a cell that did not answer may hold it: 503, ask again
		}
		switch ctx.Response.StatusCode() {
		case fasthttp.StatusNotFound:
		case fasthttp.StatusOK:
			holders = append(holders, cell)
			if held == nil {
				held = fasthttp.AcquireResponse()
				ctx.Response.CopyTo(held)
			}
		default:
			return // a cell that cannot tell (recovering, no primary): its answer
		}
	}
	switch len(holders) {
	case 0: // every cell's 404: the last one's answer is in ctx
	case 1:
		held.CopyTo(&ctx.Response)
	default:
		ctx.Response.Reset()
		ctx.SetContentType("application/json")
		reason := sku.OutcomeRequestIDReused.String()
		ctx.SetStatusCode(httpapi.StatusOf(reason))
		ctx.SetBodyString(fmt.Sprintf(`{"error":%q,"detail":"cells %s each hold this request_id, used by more than one user: resend the reserve with the same request_id and user_id to get its result"}`,
			reason, strings.Join(holders, ", ")))
	}
}
