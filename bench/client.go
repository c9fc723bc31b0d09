package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/entrypass"
	"github.com/seckill/seckill/httpapi"
)

// Client defaults.
const (
	// DefaultRequestTimeout bounds one HTTP request.
	DefaultRequestTimeout = 10 * time.Second
	// maxResponseBody bounds a response body; the API's answers are small,
	// but the refund list can be long.
	maxResponseBody = 64 << 20
)

// ClientOptions configures a Client.
type ClientOptions struct {
	// Target is the server's base URL, e.g. http://127.0.0.1:8080. Only
	// loopback hosts are accepted.
	Target string
	// AdminToken is sent as "Authorization: Bearer" on admin calls.
	AdminToken string
	// PaymentSecret, when set, signs payment bodies: X-Signature carries
	// hex(HMAC-SHA256(secret, body)).
	PaymentSecret string
	// MaxConns bounds the connections to the server (default 512).
	MaxConns int
	// Timeout bounds each request (default DefaultRequestTimeout).
	Timeout time.Duration
	// EntryPasses, when set, makes every reserve carry an entry pass the
	// client mints with the ring's signing key.
	EntryPasses *entrypass.KeyRing
}

// Client speaks the seckilld HTTP API over fasthttp.
type Client struct {
	hc            *fasthttp.HostClient
	host          string
	adminToken    string
	paymentSecret []byte
	timeout       time.Duration
	entryPasses   *entrypass.KeyRing
	// cells, when set (Config.Cells), takes the campaign's definition,
	// the audit and the refund list: the target is a seckill-router.
	cells *cellControl
}

// NewClient checks the options and returns a client. It does not connect.
func NewClient(options ClientOptions) (*Client, error) {
	if err := CheckTarget(options.Target); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	target, _ := url.Parse(options.Target) // checked: http, a loopback host and a port
	host := target.Host
	if options.MaxConns <= 0 {
		options.MaxConns = 512
	}
	if options.Timeout <= 0 {
		options.Timeout = DefaultRequestTimeout
	}
	return &Client{
		hc: &fasthttp.HostClient{
			Addr:                host,
			DialDualStack:       true, // [::1] as well as 127.0.0.1
			MaxConns:            options.MaxConns,
			MaxConnWaitTimeout:  options.Timeout,
			MaxIdleConnDuration: 30 * time.Second,
			// No ReadTimeout or WriteTimeout: every request carries its
			// own timeout (roundTrip), which bounds the dial, the write and
			// the read alike, and fasthttp would read the clock twice more
			// per request for each.
			MaxResponseBodySize:      maxResponseBody,
			NoDefaultUserAgentHeader: true,
			DisablePathNormalizing:   true,
		},
		host:          host,
		adminToken:    options.AdminToken,
		paymentSecret: []byte(options.PaymentSecret),
		timeout:       options.Timeout,
		entryPasses:   options.EntryPasses,
	}, nil
}

// CheckTarget reports whether target is a base URL the tool may use:
// http://HOST:PORT[/] with a loopback HOST (CheckLoopback) and a PORT in
// 1-65535. seckilld serves plain HTTP, so https is refused rather than
// failing at the first request.
func CheckTarget(target string) error {
	const example = "give a URL like http://127.0.0.1:8080"
	if !strings.Contains(target, "://") {
		return fmt.Errorf("target %q: %s", target, example)
	}
	u, err := url.Parse(target)
	switch {
	case err != nil:
		return fmt.Errorf("target %q: %s", target, example)
	case u.Scheme == "https":
		return fmt.Errorf("target %q: seckilld serves plain HTTP: %s", target, example)
	case u.Scheme != "http":
		return fmt.Errorf("target %q: scheme must be http: %s", target, example)
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("target %q: give the server's base URL only (no path, query or credentials)", target)
	}
	if n, err := strconv.Atoi(u.Port()); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("target %q: give a port in 1-65535: %s", target, example)
	}
	if err := CheckLoopback(u.Hostname()); err != nil {
		return fmt.Errorf("target %q: %w", target, err)
	}
	return nil
}

// CheckLoopback returns an error unless host is localhost or a loopback IP:
// load is only ever sent to this machine.
func CheckLoopback(host string) error {
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("host %q is not a loopback address (127.0.0.0/8, ::1, localhost)", host)
	}
	return nil
}

// CloseIdle closes idle connections.
func (c *Client) CloseIdle() { c.hc.CloseIdleConnections() }

// TransportError is a request that got no HTTP answer. Its text is a short,
// stable cause ("timeout", "connection refused") so that errors group well.
type TransportError struct {
	// Kind is the short cause.
	Kind string
	// Err is the underlying error.
	Err error
}

// Error returns the short cause.
func (e *TransportError) Error() string { return e.Kind }

// Unwrap returns the underlying error.
func (e *TransportError) Unwrap() error { return e.Err }

// transportError wraps err with a short cause.
func transportError(err error) error {
	kind := "transport: " + err.Error()
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout):
		kind = "timeout"
	case errors.Is(err, fasthttp.ErrNoFreeConns):
		kind = "no free connections"
	case errors.Is(err, syscall.ECONNREFUSED):
		kind = "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		kind = "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, fasthttp.ErrConnectionClosed):
		kind = "connection closed"
	}
	return &TransportError{Kind: kind, Err: err}
}

// exchange is one request and its answer.
type exchange struct {
	method  string
	path    string
	body    []byte
	admin   bool
	headers [][2]string
}

// answer is a copied HTTP answer.
type answer struct {
	status     int
	body       []byte
	retryAfter time.Duration
}

// do sends one request and copies the answer.
func (c *Client) do(ctx context.Context, ex exchange) (answer, error) {
	request := fasthttp.AcquireRequest()
	response := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(request)
	defer fasthttp.ReleaseResponse(response)
	request.Header.SetMethod(ex.method)
	request.SetRequestURI(ex.path)
	if ex.body != nil {
		request.Header.SetContentType("application/json")
		request.SetBodyRaw(ex.body)
	}
	if ex.admin && c.adminToken != "" {
		request.Header.Set("Authorization", "Bearer "+c.adminToken)
	}
	for _, header := range ex.headers {
		request.Header.Set(header[0], header[1])
	}
	if err := c.roundTrip(ctx, request, response); err != nil {
		return answer{}, err
	}
	return answer{status: response.StatusCode(), body: append([]byte(nil), response.Body()...), retryAfter: retryAfter(response)}, nil
}

// roundTrip sets the Host header, sends request and reads the answer into
// response, within the client's timeout and ctx's deadline.
func (c *Client) roundTrip(ctx context.Context, request *fasthttp.Request, response *fasthttp.Response) error {
	request.Header.SetHost(c.host)
	if err := ctx.Err(); err != nil {
		return err
	}
	timeout := c.timeout
	if deadline, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(deadline))
	}
	if err := c.hc.DoTimeout(request, response, timeout); err != nil {
		return transportError(err)
	}
	return nil
}

// retryAfter reads the Retry-After header of response (0 when absent).
func retryAfter(response *fasthttp.Response) time.Duration {
	if value := response.Header.Peek("Retry-After"); len(value) > 0 {
		return parseRetryAfter(string(value))
	}
	return 0
}

// parseRetryAfter reads Retry-After as (possibly fractional) seconds; an
// HTTP date or garbage gives 0, and the driver then uses its own backoff.
func parseRetryAfter(value string) time.Duration {
	seconds, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if err != nil || seconds < 0 || seconds > 3600 {
		return 0
	}
	return time.Duration(seconds * float64(time.Second))
}

// appendJSONString appends s as a JSON string literal.
func appendJSONString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b == '"' || b == '\\':
			dst = append(dst, '\\', b)
		case b < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
		default:
			dst = append(dst, b)
		}
	}
	return append(dst, '"')
}

// PutCampaign defines (or redefines) a campaign through the admin API;
// with celled SKUs (Config.Cells) it publishes them in etcd instead.
func (c *Client) PutCampaign(ctx context.Context, spec CampaignSpec) error {
	if c.cells != nil {
		return c.cells.define(ctx, spec)
	}
	body, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	got, err := c.do(ctx, exchange{method: "PUT", path: "/admin/campaigns/" + url.PathEscape(spec.CampaignID), body: body, admin: true})
	if err != nil {
		return fmt.Errorf("put campaign %s: %w", spec.CampaignID, err)
	}
	if got.status < 200 || got.status > 299 {
		return fmt.Errorf("put campaign %s: status %d: %s", spec.CampaignID, got.status, snippet(got.body))
	}
	return nil
}

// SKU returns a Reserver for one SKU of a campaign.
func (c *Client) SKU(campaignID, skuID string) *SKUReserver {
	return &SKUReserver{
		client: c,
		path:   "/v1/campaigns/" + url.PathEscape(campaignID) + "/skus/" + url.PathEscape(skuID) + "/reservations",
		passes: newPassMinter(c.entryPasses, campaignID, skuID, time.Now()),
	}
}

// SKUReserver is the HTTP Reserver of one SKU.
type SKUReserver struct {
	client *Client
	path   string
	passes *passMinter // nil: reserves without entry passes
}

// Reserve posts one reservation request and classifies the answer.
func (r *SKUReserver) Reserve(ctx context.Context, requestID, userID string) (Reply, error) {
	request := fasthttp.AcquireRequest()
	response := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(request)
	defer fasthttp.ReleaseResponse(response)
	request.Header.SetMethod(fasthttp.MethodPost)
	request.SetRequestURI(r.path)
	request.Header.SetContentType("application/json")
	var buffer [128 + entrypass.MaxTextLength]byte
	body := append(buffer[:0], `{"user_id":`...)
	body = appendJSONString(body, userID)
	if r.passes != nil {
		// The pass gives the request_id (its own, derived from ours).
		pass, err := r.passes.mint(requestID, userID)
		if err != nil {
			return Reply{}, err
		}
		body = append(body, `,"entry_pass":"`...)
		body = append(body, pass...)
		body = append(body, '"')
	} else {
		body = append(body, `,"request_id":`...)
		body = appendJSONString(body, requestID)
	}
	body = append(body, '}')
	request.SetBody(body) // copied into the request's pooled buffer
	if err := r.client.roundTrip(ctx, request, response); err != nil {
		return Reply{}, err
	}
	return reserveReply(response.StatusCode(), response.Body(), retryAfter(response)), nil
}

// reserveReply classifies a reservation answer. body is only read.
func reserveReply(status int, body []byte, retryAfter time.Duration) Reply {
	fields, parseErr := decodeReserveAnswer(body)
	outcome := ClassifyReserve(status, fields.errorCode)
	reply := Reply{Outcome: outcome, ReservationID: fields.reservationID, TokenID: fields.tokenID, RetryAfter: retryAfter}
	switch {
	case outcome == OutcomeAccepted && (parseErr != nil || fields.reservationID == ""):
		return Reply{Outcome: OutcomeError, Detail: "202 without a reservation_id"}
	case outcome == OutcomeError:
		reply.Detail = fmt.Sprintf("status %d %s", status, fields.errorCode)
	case outcome == OutcomeAccepted && fields.expireAt != "":
		reply.ExpireAt, _ = ParseTime(fields.expireAt) // zero when unreadable
	}
	return reply
}

// Reservation reads one reservation; the int is the HTTP status.
func (c *Client) Reservation(ctx context.Context, reservationID string) (ReservationStatus, int, error) {
	got, err := c.do(ctx, exchange{method: "GET", path: "/v1/reservations/" + url.PathEscape(reservationID)})
	if err != nil {
		return ReservationStatus{}, 0, err
	}
	var status ReservationStatus
	if len(got.body) > 0 {
		if err := json.Unmarshal(got.body, &status); err != nil {
			return ReservationStatus{}, got.status, fmt.Errorf("reservation %s: %w", reservationID, err)
		}
	}
	return status, got.status, nil
}

// Pay posts a payment, signed when a payment secret is set; the int is the
// HTTP status.
func (c *Client) Pay(ctx context.Context, reservationID string, payment PaymentRequest) (StateAnswer, int, error) {
	body, err := json.Marshal(payment)
	if err != nil {
		return StateAnswer{}, 0, err
	}
	ex := exchange{method: "POST", path: "/v1/reservations/" + url.PathEscape(reservationID) + "/payment", body: body}
	if len(c.paymentSecret) > 0 {
		ex.headers = append(ex.headers, [2]string{"X-Signature", httpapi.Sign(c.paymentSecret, body)})
	}
	return c.stateCall(ctx, ex)
}

// Cancel closes a reservation; the int is the HTTP status.
func (c *Client) Cancel(ctx context.Context, reservationID string) (StateAnswer, int, error) {
	return c.stateCall(ctx, exchange{method: "POST", path: "/v1/reservations/" + url.PathEscape(reservationID) + "/cancel", body: []byte("{}")})
}

func (c *Client) stateCall(ctx context.Context, ex exchange) (StateAnswer, int, error) {
	got, err := c.do(ctx, ex)
	if err != nil {
		return StateAnswer{}, 0, err
	}
	var state StateAnswer
	if len(got.body) > 0 {
		if err := json.Unmarshal(got.body, &state); err != nil {
			return StateAnswer{}, got.status, fmt.Errorf("%s %s: %w", ex.method, ex.path, err)
		}
	}
	return state, got.status, nil
}

// Audit reads the server's audit of one SKU; with celled SKUs, the
// cluster audit across etcd and every cell.
func (c *Client) Audit(ctx context.Context, campaignID, skuID string) (AuditReport, error) {
	if c.cells != nil {
		return c.cells.audit(ctx, campaignID, skuID)
	}
	path := "/admin/campaigns/" + url.PathEscape(campaignID) + "/skus/" + url.PathEscape(skuID) + "/audit"
	got, err := c.do(ctx, exchange{method: "GET", path: path, admin: true})
	if err != nil {
		return AuditReport{}, fmt.Errorf("audit %s/%s: %w", campaignID, skuID, err)
	}
	if got.status != 200 {
		return AuditReport{}, fmt.Errorf("audit %s/%s: status %d: %s", campaignID, skuID, got.status, snippet(got.body))
	}
	var report AuditReport
	if err := json.Unmarshal(got.body, &report); err != nil {
		return AuditReport{}, fmt.Errorf("audit %s/%s: %w", campaignID, skuID, err)
	}
	return report, nil
}

// Refunds reads the reservation ids on a SKU's refund list. The list may
// be a JSON array or an object holding one array; each entry is an object
// with a reservation_id, or a bare id string. With celled SKUs, every
// cell's list.
func (c *Client) Refunds(ctx context.Context, campaignID, skuID string) ([]string, error) {
	if c.cells != nil {
		return c.cells.refunds(ctx, campaignID, skuID)
	}
	path := "/admin/campaigns/" + url.PathEscape(campaignID) + "/skus/" + url.PathEscape(skuID) + "/refunds"
	got, err := c.do(ctx, exchange{method: "GET", path: path, admin: true})
	if err != nil {
		return nil, fmt.Errorf("refunds %s/%s: %w", campaignID, skuID, err)
	}
	if got.status != 200 {
		return nil, fmt.Errorf("refunds %s/%s: status %d: %s", campaignID, skuID, got.status, snippet(got.body))
	}
	return parseRefunds(got.body)
}

// parseRefunds reads the reservation ids of a refund list.
func parseRefunds(body []byte) ([]string, error) {
	var entries []json.RawMessage
	if err := json.Unmarshal(body, &entries); err != nil {
		var wrapper map[string]json.RawMessage
		if err := json.Unmarshal(body, &wrapper); err != nil {
			return nil, fmt.Errorf("refunds: %w", err)
		}
		for _, key := range []string{"refunds", "items", "reservations", "data"} {
			if raw, ok := wrapper[key]; ok {
				if err := json.Unmarshal(raw, &entries); err != nil {
					return nil, fmt.Errorf("refunds.%s: %w", key, err)
				}
				break
			}
		}
	}
	ids := make([]string, 0, len(entries))
	for _, entry := range entries {
		var id string
		if json.Unmarshal(entry, &id) == nil {
			ids = append(ids, id)
			continue
		}
		var object struct {
			ReservationID string `json:"reservation_id"`
		}
		if err := json.Unmarshal(entry, &object); err != nil {
			return nil, fmt.Errorf("refund entry: %w", err)
		}
		ids = append(ids, object.ReservationID)
	}
	return ids, nil
}

// snippet shortens a body for an error message.
func snippet(body []byte) string {
	const limit = 200
	if len(body) > limit {
		return string(body[:limit]) + "..."
	}
	return string(body)
}
