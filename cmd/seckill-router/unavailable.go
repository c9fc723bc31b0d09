package main

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/seckill/seckill/httpapi"
)

// A seckilld answers 503 UNAVAILABLE with Retry-After when it applied
// nothing and expects to answer soon: a primary that has just taken over
// while it defines its campaigns, a switchover's pause, a SKU recovering
// its log (docs/api.md: "nothing was done"). The buyer would only wait and
// send the same request again, so the router does that for it, on every
// route: the refusal proves the first attempt applied nothing, so the
// retry cannot apply a command twice, whatever its route. A request that
// got no answer may have been applied and is never retried (unanswered.go).
// The retry goes where the cell's requests go then (a new primary too),
// after the Retry-After the answer asked for, and only while the request
// has time left for it: otherwise the 503 and its Retry-After reach the
// buyer as the cell sent them, an honest "not yet".

// retryUnavailable reports whether resp is a 503 UNAVAILABLE to send again
// and after how long: when its Retry-After (in seconds) still leaves the
// retry at least half the router's timeout of the left time. A retry with
// less could run out on a slow primary and turn "nothing was done" into
// 504 RESULT_UNKNOWN.
func retryUnavailable(resp *fasthttp.Response, left, timeout time.Duration) (time.Duration, bool) {
	if resp.StatusCode() != fasthttp.StatusServiceUnavailable || fastjson.GetString(resp.Body(), "error") != httpapi.ReasonUnavailable {
		return 0, false
	}
	secs, err := strconv.Atoi(string(resp.Header.Peek("Retry-After")))
	if err != nil || secs < 0 {
		return 0, false
	}
	wait := time.Duration(secs) * time.Second
	return wait, left-wait >= timeout/2
}
