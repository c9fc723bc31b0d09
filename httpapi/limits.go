package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"net"

	"github.com/valyala/fasthttp"
)

// BodyLimits are the body limits of the API's routes, in bytes: a batch
// reserve's, an authorised campaign PUT's, and every other request's. The
// server and seckill-router (in front of the cells, with the defaults)
// decide a request's limit from its header alone, by Of, before the body
// is read.
type BodyLimits struct{ Request, Batch, Campaign int }

// DefaultBodyLimits are the limits of a server with the default Config.
var DefaultBodyLimits = BodyLimits{Request: DefaultMaxRequestBodySize, Batch: DefaultMaxBatchBodySize, Campaign: DefaultMaxCampaignBodySize}

// Of returns the body limit of the request whose header is h: Batch for
// POST …/reservations:batch, Campaign for PUT /admin/campaigns/{id} when
// admin(h) (its token may send a campaign that large), else Request.
func (l BodyLimits) Of(h *fasthttp.RequestHeader, admin func(*fasthttp.RequestHeader) bool) int {
	if h.IsPost() && isBatchPath(h.RequestURI()) {
		return l.Batch
	}
	if !h.IsPut() {
		return l.Request
	}
	const prefix = "/admin/campaigns/"
	path, _, _ := bytes.Cut(h.RequestURI(), []byte("?"))
	id, ok := bytes.CutPrefix(path, []byte(prefix))
	if !ok || len(id) == 0 || bytes.IndexByte(id, '/') >= 0 || !admin(h) {
		return l.Request
	}
	return l.Campaign
}

// RequestConfig is fasthttp's HeaderReceived of a front whose limits are
// l, with admin deciding the campaign PUT's (BodyLimits.Of).
func (l BodyLimits) RequestConfig(h *fasthttp.RequestHeader, admin func(*fasthttp.RequestHeader) bool) fasthttp.RequestConfig {
	if limit := l.Of(h, admin); limit != l.Request {
		return fasthttp.RequestConfig{MaxRequestBodySize: limit}
	}
	return fasthttp.RequestConfig{}
}

// ExpectContinue is the answer to "Expect: 100-continue" of a front (the
// server's and seckill-router's fasthttp ExpectHandler) whose body limit
// for the request is limit: a body whose Content-Length exceeds it is
// refused with 413 BODY_TOO_LARGE from the header alone, without inviting
// the body (RFC 9110, section 10.1.1); fasthttp then closes the
// connection. Anything else gets its 100 Continue. It returns the status.
func ExpectContinue(ctx *fasthttp.RequestCtx, limit int) int {
	if n := ctx.Request.Header.ContentLength(); n > limit {
		write(ctx, errorReply(reasonBodyTooLarge, fmt.Sprintf("request body larger than %d bytes", limit)))
		lingerAfterAnswer(ctx) // a client that did not wait for 100 Continue is sending the body
		return StatusOf(reasonBodyTooLarge)
	}
	return fasthttp.StatusContinue
}

// ParseError is the JSON answer to a request fasthttp could not read, as
// fasthttp's ErrorHandler (the server's and seckill-router's, each with
// fasthttp's SecureErrorLogMessage, which keeps the errors matched here
// unwrapped as well as the request's bytes out of the log): a body
// beyond limit (413 BODY_TOO_LARGE), a transfer coding other than chunked
// (501), an oversized header (431), a timeout (408), anything else (400).
// It returns the reason answered.
func ParseError(ctx *fasthttp.RequestCtx, err error, limit int) string {
	var small *fasthttp.ErrSmallBuffer
	var netErr net.Error
	if !(errors.As(err, &netErr) && netErr.Timeout()) {
		lingerAfterAnswer(ctx) // the rest of the request may be on its way (linger.go)
	}
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return write(ctx, errorReply(reasonBodyTooLarge, fmt.Sprintf("request body larger than %d bytes", limit)))
	case errors.Is(err, fasthttp.ErrUnsupportedTransferEncoding):
		// RFC 9112, section 6.1: a transfer coding the server does not
		// understand is 501; only chunked is.
		return write(ctx, errorReply(reasonNotImplemented, "only the chunked transfer coding is supported"))
	case errors.As(err, &small):
		return write(ctx, errorReply(reasonHeaderTooLarge, "request header too large"))
	case errors.As(err, &netErr) && netErr.Timeout():
		return write(ctx, errorReply(reasonRequestTimeout, "request not received in time"))
	}
	return write(ctx, errorReply(reasonBadRequest, "malformed HTTP request"))
}
