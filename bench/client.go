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

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/entrypass"
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
	// PaymentSecret, when set, signs payment bodies (package paysig).
	PaymentSecret string
	// MaxConns bounds the connections to the server (default 512).
	MaxConns int
	// Timeout bounds each request (default DefaultRequestTimeout).
	Timeout time.Duration
	// EntryPasses, when set, makes every reserve carry an entry pass the
	// client mints with the ring's signing key.
	EntryPasses *entrypass.KeyRing
}

// Client is the load tool's view of the seckilld HTTP API: package
// client over fasthttp, with one attempt per call (the tool keeps its
// own resend policy: the driver's, the lottery's loops), and the
// tool's control plane for celled SKUs.
type Client struct {
	api         *client.Client
	entryPasses *entrypass.KeyRing
	// cells, when set (Config.Cells), takes the campaign's definition,
	// the audit and the refund list: the target is a seckill-router.
	cells *cellControl
}

// NewClient checks the options and returns a client. It does not connect.
func NewClient(options ClientOptions) (*Client, error) {
	if err := CheckTarget(options.Target); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if options.MaxConns <= 0 {
		options.MaxConns = 512
	}
	if options.Timeout <= 0 {
		options.Timeout = DefaultRequestTimeout
	}
	api, err := client.New(client.Options{
		BaseURL: strings.TrimRight(options.Target, "/"), AdminToken: options.AdminToken, PaymentSecret: options.PaymentSecret,
		MaxAttempts: 1, AttemptTimeout: options.Timeout,
		FastHTTP: &fasthttp.Client{
			DialDualStack:       true, // [::1] as well as 127.0.0.1
			MaxConnsPerHost:     options.MaxConns,
			MaxConnWaitTimeout:  options.Timeout,
			MaxIdleConnDuration: 30 * time.Second,
			// No ReadTimeout or WriteTimeout: every attempt carries its
			// own deadline, which bounds the dial, the write and the read
			// alike.
			MaxResponseBodySize:      maxResponseBody,
			NoDefaultUserAgentHeader: true,
			DisablePathNormalizing:   true,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return &Client{api: api, entryPasses: options.EntryPasses}, nil
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
func (c *Client) CloseIdle() { c.api.CloseIdleConnections() }

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
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout), errors.Is(err, context.DeadlineExceeded):
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

// status splits a call's error: the refusal's HTTP status and reason, or
// the error of a call that got no answer (a TransportError).
func status(err error) (int, string, error) {
	var e *client.Error
	switch {
	case err == nil:
		return 200, "", nil
	case errors.As(err, &e):
		return e.Status, e.Code, nil
	}
	return 0, "", transportError(err)
}

// PutCampaign defines (or redefines) a campaign through the admin API;
// with celled SKUs (Config.Cells) it publishes them in etcd instead.
func (c *Client) PutCampaign(ctx context.Context, spec CampaignSpec) error {
	if c.cells != nil {
		return c.cells.define(ctx, spec)
	}
	campaign, err := spec.campaign()
	if err == nil {
		err = c.api.PutCampaign(ctx, campaign)
	}
	if err != nil {
		return fmt.Errorf("put campaign %s: %w", spec.CampaignID, err)
	}
	return nil
}

// SKU returns a Reserver for one SKU of a campaign.
func (c *Client) SKU(campaignID, skuID string) *SKUReserver {
	return &SKUReserver{api: c.api, campaignID: campaignID, skuID: skuID,
		passes: newPassMinter(c.entryPasses, campaignID, skuID, time.Now())}
}

// Reservation reads one reservation; the int is the HTTP status.
func (c *Client) Reservation(ctx context.Context, reservationID string) (ReservationStatus, int, error) {
	r, err := c.api.Reservation(ctx, reservationID)
	code, reason, err := status(err)
	if err != nil || code != 200 {
		return ReservationStatus{Error: reason}, code, err
	}
	st := ReservationStatus{ReservationID: r.ReservationID, RequestID: r.RequestID, UserID: r.UserID, State: r.State,
		TokenID: strconv.FormatUint(uint64(r.TokenID), 10), ExpireAt: FormatTime(r.ExpireAt), ClosedReason: r.ClosedReason,
		RefundRequired: r.RefundRequired}
	if !r.PaidAt.IsZero() {
		st.PaidAt = FormatTime(r.PaidAt)
	}
	if !r.ClosedAt.IsZero() {
		st.ClosedAt = FormatTime(r.ClosedAt)
	}
	return st, code, nil
}

// Pay posts a payment, signed when a payment secret is set; the int is the
// HTTP status.
func (c *Client) Pay(ctx context.Context, reservationID string, payment PaymentRequest) (StateAnswer, int, error) {
	return stateAnswer(c.api.Pay(ctx, reservationID, client.Payment{PaymentID: payment.PaymentID, Amount: payment.Amount}))
}

// Cancel closes a reservation; the int is the HTTP status.
func (c *Client) Cancel(ctx context.Context, reservationID string) (StateAnswer, int, error) {
	return stateAnswer(c.api.Cancel(ctx, reservationID))
}

// stateAnswer is a payment's or a cancel's answer.
func stateAnswer(r *client.Reservation, err error) (StateAnswer, int, error) {
	code, reason, err := status(err)
	if err != nil || code != 200 {
		return StateAnswer{Error: reason}, code, err
	}
	return StateAnswer{State: r.State}, code, nil
}

// Audit reads the server's audit of one SKU; with celled SKUs, the
// cluster audit across etcd and every cell.
func (c *Client) Audit(ctx context.Context, campaignID, skuID string) (AuditReport, error) {
	if c.cells != nil {
		return c.cells.audit(ctx, campaignID, skuID)
	}
	a, err := c.api.Audit(ctx, campaignID, skuID)
	if err != nil {
		return AuditReport{}, fmt.Errorf("audit %s/%s: %w", campaignID, skuID, err)
	}
	report := AuditReport{SaleLimit: a.SaleLimit, Available: a.Available, Reserved: a.Reserved, Confirmed: a.Confirmed,
		InvariantOK: a.InvariantOK, States: a.States}
	for _, v := range a.Violations {
		b, _ := json.Marshal(v) // a string always marshals
		report.Violations = append(report.Violations, b)
	}
	return report, nil
}

// Refunds reads the reservation ids on a SKU's refund list; with celled
// SKUs, every cell's list.
func (c *Client) Refunds(ctx context.Context, campaignID, skuID string) ([]string, error) {
	if c.cells != nil {
		return c.cells.refunds(ctx, campaignID, skuID)
	}
	refunds, err := c.api.Refunds(ctx, campaignID, skuID)
	if err != nil {
		return nil, fmt.Errorf("refunds %s/%s: %w", campaignID, skuID, err)
	}
	ids := make([]string, len(refunds))
	for i, r := range refunds {
		ids[i] = r.ReservationID
	}
	return ids, nil
}
