package httpapi_test

import (
	"strconv"
	"testing"

	"github.com/valyala/fasthttp"
)

// The answer to a reserve of a sold-out SKU, the flood's, allocates
// nothing on the server: a new request_id and user_id each time, through
// the handler and the real engine.
func TestSoldOutAnswerAllocatesNothing(t *testing.T) {
	handler := pathServer(t, 1, false)
	var ctx fasthttp.RequestCtx
	reserveOnce(t, handler, &ctx, nil, -1, fasthttp.StatusAccepted)
	body := make([]byte, 0, 64)
	n := 0
	allocs := testing.AllocsPerRun(500, func() {
		n++
		body = append(body[:0], `{"request_id":"r`...)
		body = strconv.AppendInt(body, int64(n), 10)
		body = append(body, `","user_id":"u`...)
		body = strconv.AppendInt(body, int64(n), 10)
		body = append(body, `"}`...)
		ctx.Response.Reset()
		ctx.Request.SetBody(body)
		handler(&ctx)
		if ctx.Response.StatusCode() != fasthttp.StatusConflict {
			t.Fatalf("reserve %d: %d %s, want 409 SOLD_OUT", n, ctx.Response.StatusCode(), ctx.Response.Body())
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per sold-out answer, want 0", allocs)
	}
}
