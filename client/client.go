package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/paysig"
	"github.com/valyala/fasthttp"
)

// Defaults of Options.
const (
	DefaultMaxAttempts    = 6
	DefaultAttemptTimeout = 10 * time.Second
	// DefaultMaxConnsPerHost is the keep-alive pool per server.
	DefaultMaxConnsPerHost = 256
	// maxRedirects bounds the 421s followed in one call.
	maxRedirects = 3
	// maxBody bounds an answer read into memory (the refund list and the
	// feed's pages are the largest).
	maxBody = 64 << 20
	// backoff bounds the wait when the server gave no Retry-After.
	backoffFirst = 50 * time.Millisecond
	backoffMax   = 2 * time.Second
)

// Options configures a Client.
type Options struct {
	// BaseURL is the server's address: seckilld, or seckill-router in
	// front of cells (http://127.0.0.1:8080).
	BaseURL string
	// AdminToken is sent as a bearer token on admin routes (the feed, the
	// export, campaigns, audits).
	AdminToken string
	// PaymentSecret, when set, signs payment bodies (X-Signature, package
	// paysig), as seckilld's --payment-secret expects.
	PaymentSecret string
	// Cells maps cell ids to base URLs: a 421 WRONG_CELL is sent again to
	// the cell it names, and a reservation id that names a cell goes to it.
	// Without it, the client follows only a 421 that carries a Location.
	Cells map[string]string
	// HTTPClient, when set, sends the requests (its Timeout should be 0:
	// contexts and AttemptTimeout bound the calls). Default: a client with
	// keep-alive connections, DefaultMaxConnsPerHost per server.
	HTTPClient *http.Client
	// FastHTTP, when set, sends every request but the feed's SSE stream
	// (Stream, read by net/http as it comes) over fasthttp: a few
	// allocations per reserve instead of net/http's tens, what a load
	// generator wants. Each attempt then ends at its deadline (the
	// context's, or AttemptTimeout), but a context cancelled without a
	// deadline does not abort an attempt in flight (fasthttp has no
	// cancel): the next attempt is not sent. Its MaxResponseBodySize
	// bounds an answer (net/http's are read up to 64 MiB).
	FastHTTP *fasthttp.Client
	// MaxAttempts bounds the attempts of one call (default
	// DefaultMaxAttempts); the context's deadline bounds them too.
	MaxAttempts int
	// AttemptTimeout bounds one attempt (default DefaultAttemptTimeout);
	// a feed long poll gets its wait on top.
	AttemptTimeout time.Duration
}

// Client calls one seckill service. It is safe for concurrent use.
type Client struct {
	base           *url.URL
	adminToken     string
	paymentSecret  []byte
	cells          map[string]*url.URL
	hc             *http.Client
	fast           *fasthttp.Client // nil: net/http
	bearer         string           // "Bearer " + the admin token
	maxAttempts    int
	attemptTimeout time.Duration
}

// New checks the options and returns a client; it does not connect.
func New(o Options) (*Client, error) {
	base, err := parseBase(o.BaseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{base: base, adminToken: o.AdminToken, paymentSecret: []byte(o.PaymentSecret), hc: o.HTTPClient, fast: o.FastHTTP,
		bearer: "Bearer " + o.AdminToken, maxAttempts: o.MaxAttempts, attemptTimeout: o.AttemptTimeout, cells: map[string]*url.URL{}}
	for id, raw := range o.Cells {
		u, err := parseBase(raw)
		if err != nil {
			return nil, fmt.Errorf("cell %s: %w", id, err)
		}
		c.cells[id] = u
	}
	if c.hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 0
		t.MaxIdleConnsPerHost = DefaultMaxConnsPerHost
		t.MaxConnsPerHost = DefaultMaxConnsPerHost
		t.IdleConnTimeout = 90 * time.Second
		c.hc = &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if c.maxAttempts <= 0 {
		c.maxAttempts = DefaultMaxAttempts
	}
	if c.attemptTimeout <= 0 {
		c.attemptTimeout = DefaultAttemptTimeout
	}
	return c, nil
}

// CheckBaseURL reports whether raw is a base URL a Client takes (its
// error says what to give): a tool that calls seckilld without a Client
// checks its flag by the same rule before it contacts anything.
func CheckBaseURL(raw string) error {
	_, err := parseBase(raw)
	return err
}

// parseBase reads a base URL: http or https, a host, no query.
func parseBase(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	switch {
	case err != nil: // "127.0.0.1:8080": a host and port without the scheme
		return nil, fmt.Errorf("client: base URL %q: give http://host:port (%w)", raw, err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return nil, fmt.Errorf("client: base URL %q: give http://host:port", raw)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return nil, fmt.Errorf("client: base URL %q: no query, fragment or credentials", raw)
	}
	return u, nil
}

// CloseIdleConnections closes the kept-alive connections not in use.
func (c *Client) CloseIdleConnections() {
	c.hc.CloseIdleConnections()
	if c.fast != nil {
		c.fast.CloseIdleConnections()
	}
}

// request is one call: every attempt sends the same method, path and body.
type request struct {
	method string
	path   string // escaped path and query, from the base
	body   []byte
	admin  bool
	sign   bool
	// base, when set, is where the call goes first (a reservation's cell).
	base   *url.URL
	accept string
	header http.Header
	// extra is added to the attempt timeout (a long poll's wait).
	extra time.Duration
	// resolve, when set, settles a 504 RESULT_UNKNOWN (called with
	// resolveArg): done (the call ends with settled, or with err), or not
	// done (the same request is sent again). A function with an argument
	// rather than a closure: a reserve allocates none.
	resolve    resolver
	resolveArg string
	// borrow, over fasthttp, lends a 2xx answer's body from the pooled
	// response instead of copying it: the caller decodes it, then calls
	// the answer's release.
	borrow bool
	// stream, when set, takes a 2xx response's open body instead of do
	// reading it (the SSE stream).
	stream func(resp *http.Response) error
}

// resolver settles a 504 RESULT_UNKNOWN: see request.resolve.
type resolver func(c *Client, ctx context.Context, unknown *Error, arg string) (done bool, settled *Reservation, err error)

// answer is a read response: its status, body, and the headers the
// rules read; or the reservation a 504 was settled to.
type answer struct {
	settled    *Reservation
	resp       *fasthttp.Response // the body's owner, when borrowed
	status     int
	body       []byte
	retryAfter time.Duration // Retry-After (0: absent or unreadable)
	location   string        // Location, of a 421
}

// do sends r with the buyer's rules: retries with the same body, after
// Retry-After or a backoff, within MaxAttempts and ctx; 421 followed; 504
// resolved by r.resolve when set. A non-2xx final answer is an *Error.
func (c *Client) do(ctx context.Context, r request) (answer, error) {
	base := r.base
	if base == nil {
		base = c.base
	}
	redirects := 0
	var last error
	for attempt := 1; ; attempt++ {
		a, err := c.attempt(ctx, base, &r)
		var e *Error // a non-2xx answer's
		if err == nil && (a.status < 200 || a.status >= 300) {
			e = decodeError(a)
			a.release()
		}
		var wait time.Duration
		switch {
		case err != nil && a.status != 0:
			return a, err // a stream that started: its reader's end is the caller's
		case err != nil:
			if ctx.Err() != nil {
				return answer{}, fmt.Errorf("%w (last: %v)", ctx.Err(), err)
			}
			last = err
		case a.status >= 200 && a.status < 300:
			return a, nil
		case a.status == http.StatusMisdirectedRequest:
			next := c.follow(base, a.location, e)
			if next != nil && redirects < maxRedirects {
				base, redirects = next, redirects+1
				attempt-- // a redirect is not a failed attempt
				continue
			}
			if next != nil || e.RetryAfter == 0 {
				return answer{status: a.status}, e
			}
			// A replica that knows no primary yet (a failover in
			// progress) applied nothing and asks to be asked again.
			last, wait = e, e.RetryAfter
		default:
			if !e.retryable() {
				return answer{status: a.status}, e
			}
			if e.Status == http.StatusGatewayTimeout && r.resolve != nil {
				if done, settled, err := r.resolve(c, ctx, e, r.resolveArg); done {
					return answer{settled: settled}, err
				}
			}
			last, wait = e, e.RetryAfter
		}
		if attempt >= c.maxAttempts {
			return answer{}, last
		}
		if wait == 0 {
			wait = backoff(attempt)
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return answer{}, last // the server's answer, not a deadline error: it says why
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			// The caller gave up: the context's error, and the server's
			// answer still readable with errors.As.
			return answer{}, fmt.Errorf("%w (last: %w)", ctx.Err(), last)
		}
	}
}

// backoff is the wait before attempt+1 without a Retry-After: doubling
// from backoffFirst to backoffMax, with full jitter on its upper half.
func backoff(attempt int) time.Duration {
	d := min(backoffFirst<<min(attempt-1, 10), backoffMax)
	return d/2 + rand.N(d/2+1)
}

// setHeaders sets the headers every attempt of r carries beyond
// r.header, through either transport's set: the body's type, Accept, the
// admin token, the payment signature.
func (c *Client) setHeaders(r *request, set func(key, value string)) {
	if r.body != nil {
		set("Content-Type", "application/json")
	}
	if r.accept != "" {
		set("Accept", r.accept)
	}
	if r.admin && c.adminToken != "" {
		set("Authorization", c.bearer)
	}
	if r.sign && len(c.paymentSecret) > 0 {
		set(paysig.Header, paysig.Sign(c.paymentSecret, r.body))
	}
}

// attempt sends r once to base and reads the answer.
func (c *Client) attempt(ctx context.Context, base *url.URL, r *request) (answer, error) {
	if c.fast != nil && r.stream == nil {
		return c.fastAttempt(ctx, base, r)
	}
	actx, cancel := context.WithTimeout(ctx, c.attemptTimeout+r.extra)
	defer cancel()
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(actx, r.method, base.String()+r.path, body)
	if err != nil {
		return answer{}, err
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	c.setHeaders(r, req.Header.Set)
	resp, err := c.hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	if r.stream != nil && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		defer resp.Body.Close()
		return answer{status: resp.StatusCode}, r.stream(resp)
	}
	// Read to the end so that the connection goes back to the pool.
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	if err != nil {
		return answer{}, err
	}
	a := answer{status: resp.StatusCode, body: b, retryAfter: parseRetryAfter(resp.Header.Get("Retry-After"))}
	if a.status == http.StatusMisdirectedRequest {
		a.location = resp.Header.Get("Location")
	}
	return a, nil
}

// decodeError reads a non-2xx answer's error body (errorBody).
func decodeError(a answer) *Error {
	e := &Error{Status: a.status, RetryAfter: a.retryAfter}
	if readError(a.body, e) != nil || e.Code == "" {
		*e = Error{Status: a.status, RetryAfter: a.retryAfter, Code: http.StatusText(a.status),
			Detail: strings.TrimSpace(string(a.body[:min(len(a.body), 200)]))}
	}
	return e
}

// parseRetryAfter reads Retry-After in seconds (an HTTP date, garbage or
// more than an hour: 0, the backoff then applies).
func parseRetryAfter(v string) time.Duration {
	s, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || s < 0 || s > 3600 {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}

// follow returns where a 421 sends the call: its Location, else the cell a
// WRONG_CELL names (Options.Cells); nil when it cannot be followed.
func (c *Client) follow(from *url.URL, loc string, e *Error) *url.URL {
	if loc != "" {
		if u, err := from.Parse(loc); err == nil && u.Host != "" {
			return &url.URL{Scheme: u.Scheme, Host: u.Host}
		}
	}
	if e.Code == "WRONG_CELL" {
		return c.cells[WrongCell(e)]
	}
	return nil
}

// WrongCell returns the cell a 421 WRONG_CELL names ("" for any other
// error): the user's cell, where the call must go.
func WrongCell(err error) string {
	var e *Error
	if !errors.As(err, &e) || e.Code != "WRONG_CELL" {
		return ""
	}
	// seckilld's detail: "...: user U of C/S is cell ID's".
	i := strings.LastIndex(e.Detail, " is cell ")
	if i < 0 {
		return ""
	}
	return strings.TrimSuffix(e.Detail[i+len(" is cell "):], "'s")
}

// cellOf returns the base URL of the cell a reservation id names (nil:
// not celled, or a cell Options.Cells does not list).
func (c *Client) cellOf(reservationID string) *url.URL {
	parts := strings.Split(reservationID, "~")
	if len(parts) != 5 {
		return nil
	}
	return c.cells[parts[2]]
}

// pathSKU is the escaped path of a SKU's public routes, and rest after
// it (one allocation).
func pathSKU(campaignID, skuID, rest string) string {
	return "/v1/campaigns/" + url.PathEscape(campaignID) + "/skus/" + url.PathEscape(skuID) + rest
}

// pathAdminSKU is the escaped path of a SKU's admin routes.
func pathAdminSKU(campaignID, skuID string) string {
	return "/admin/campaigns/" + url.PathEscape(campaignID) + "/skus/" + url.PathEscape(skuID)
}

// release gives a borrowed body back to its pool.
func (a *answer) release() {
	if a.resp != nil {
		fasthttp.ReleaseResponse(a.resp)
		a.resp, a.body = nil, nil
	}
}

// decodeReservation reads a reservation answer (and releases it).
func decodeReservation(a answer, what string) (*Reservation, error) {
	defer a.release()
	if a.settled != nil {
		return a.settled, nil
	}
	r := new(Reservation)
	if err := r.UnmarshalJSON(a.body); err != nil {
		return nil, fmt.Errorf("seckill: %s: undecodable answer %d: %w", what, a.status, err)
	}
	return r, nil
}

// decode reads a JSON answer into v.
func decode(a answer, v any, what string) error {
	if err := json.Unmarshal(a.body, v); err != nil {
		return fmt.Errorf("seckill: %s: undecodable answer %d: %w", what, a.status, err)
	}
	return nil
}

// BaseURL returns the server's address the client was made with.
func (c *Client) BaseURL() string { return c.base.String() }
