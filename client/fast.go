package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"
)

// fastAttempt is attempt over Options.FastHTTP: pooled request and
// response (the answer's body lent from it: answer.release), the URI
// built in a stack buffer, the attempt's deadline computed instead of a
// derived context.
func (c *Client) fastAttempt(ctx context.Context, base *url.URL, r *request) (answer, error) {
	if err := ctx.Err(); err != nil {
		return answer{}, err
	}
	deadline := time.Now().Add(c.attemptTimeout + r.extra)
	ctxDeadline := false // the attempt ends at the context's deadline
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, ctxDeadline = d, true
	}
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	lent := false
	defer func() {
		if !lent {
			fasthttp.ReleaseResponse(resp)
		}
	}()
	req.URI().DisablePathNormalizing = true // the path is escaped already: sent as built
	var buf [256]byte
	uri := append(append(append(append(buf[:0], base.Scheme...), "://"...), base.Host...), r.path...)
	req.SetRequestURIBytes(uri)
	req.Header.SetMethod(r.method)
	req.Header.DisableNormalizing() // the headers go as written, as net/http sends them
	for k, vs := range r.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if r.body != nil {
		req.SetBodyRaw(r.body) // r.body outlives the attempt
	}
	c.setHeaders(r, req.Header.Set)
	resp.SkipBody = r.method == http.MethodHead
	if err := c.fast.DoDeadline(req, resp, deadline); err != nil {
		if ctxDeadline && errors.Is(err, fasthttp.ErrTimeout) {
			// The context's timer may not have fired yet: its error, as
			// net/http gives it.
			return answer{}, fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
		}
		return answer{}, err
	}
	// A refusal's body is lent to do, which reads it at once; a success's
	// only when the caller asked to borrow it.
	a := answer{status: resp.StatusCode(), body: resp.Body()}
	if lent = r.borrow || a.status < 200 || a.status >= 300; lent {
		a.resp = resp
	} else {
		a.body = append([]byte(nil), a.body...)
	}
	if v := resp.Header.Peek("Retry-After"); len(v) > 0 {
		a.retryAfter = parseRetryAfter(string(v))
	}
	if a.status == http.StatusMisdirectedRequest {
		a.location = string(resp.Header.Peek("Location"))
	}
	return a, nil
}
