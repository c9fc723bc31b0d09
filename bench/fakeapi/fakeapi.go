// Package fakeapi is an in-memory stand-in for seckilld's HTTP API, used to
// test the load tool before (and besides) the real server. It follows the
// API contract with one mutex around all state: stock counters per SKU,
// reservations with payment windows, payments, cancels, refunds and the audit.
// It can misbehave on purpose (oversell, queue full, result unknown) so that
// tests can prove the tool catches it.
package fakeapi

import (
	"bytes"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seckill/seckill/httpapi/jsonkeys"
	"github.com/valyala/fasthttp"
)

// Options configures a fake server.
type Options struct {
	// Addr is the loopback address to listen on (default 127.0.0.1:0, a free port).
	Addr string
	// AdminToken, when set, is required as "Authorization: Bearer" on /admin.
	AdminToken string
	// PaymentSecret, when set, requires X-Signature = hex(HMAC-SHA256(secret, body)).
	PaymentSecret string
	// Oversell accepts reservations past the stock (a deliberate bug) while
	// the audit still claims the invariant holds.
	Oversell bool
	// QueueFullEvery answers every Nth reservation request 429 QUEUE_FULL
	// with Retry-After: 0, before looking at it (0: never).
	QueueFullEvery int
	// UnknownEvery answers every Nth new reservation 504 RESULT_UNKNOWN
	// although it was made (0: never); the same request_id again gets the 202.
	UnknownEvery int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Server is a running fake.
type Server struct {
	options  Options
	listener net.Listener
	http     *fasthttp.Server
	served   chan error

	mu           sync.Mutex
	campaigns    map[string]*campaign
	reservations map[string]*reservation
	byRequest    map[string]*reservation
	byUser       map[string]*reservation // campaign + user -> pending or paid reservation
	pending      expiryHeap
	nextID       int64
	reserveCalls int64
	newAccepts   int64
}

type campaign struct {
	id             string
	startAt        time.Time
	endAt          time.Time
	paymentWindow  time.Duration
	releaseOnClose bool
	skus           map[string]*sku
}

type sku struct {
	id           string
	saleLimit    int64
	available    int64
	reserved     int64
	confirmed    int64
	nextToken    int64
	freeTokens   []string
	reservations []*reservation
	refunds      []refund
}

type refund struct {
	ReservationID string `json:"reservation_id"`
	PaymentID     string `json:"payment_id"`
}

type reservation struct {
	id             string
	requestID      string
	userID         string
	campaign       *campaign
	sku            *sku
	state          string
	tokenID        string
	expireAt       time.Time
	paidAt         time.Time
	paymentID      string
	closedReason   string
	refundRequired bool
	acceptedBody   []byte
	heapIndex      int
}

// timeLayout is seckilld's format of every time in its answers: RFC 3339
// in UTC with milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// Reservation states.
const (
	statePending = "PENDING_PAYMENT"
	statePaid    = "PAID"
	stateClosed  = "CLOSED"
)

// Start listens on Options.Addr (a loopback address) and serves until Close.
func Start(options Options) (*Server, error) {
	if options.Now == nil {
		options.Now = time.Now
	}
	if options.Addr == "" {
		options.Addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(options.Addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("fakeapi: %s is not a loopback address", options.Addr)
	}
	listener, err := net.Listen("tcp", options.Addr)
	if err != nil {
		return nil, err
	}
	s := &Server{
		options:      options,
		listener:     listener,
		served:       make(chan error, 1),
		campaigns:    make(map[string]*campaign),
		reservations: make(map[string]*reservation),
		byRequest:    make(map[string]*reservation),
		byUser:       make(map[string]*reservation),
	}
	s.http = &fasthttp.Server{
		Handler:            s.handle,
		Name:               "fakeapi",
		ReadTimeout:        30 * time.Second,
		WriteTimeout:       30 * time.Second,
		IdleTimeout:        60 * time.Second,
		MaxRequestBodySize: 1 << 20,
	}
	go func() { s.served <- s.http.Serve(listener) }()
	return s, nil
}

// URL returns the base URL, e.g. http://127.0.0.1:41234.
func (s *Server) URL() string { return "http://" + s.listener.Addr().String() }

// Close stops the server.
func (s *Server) Close() error {
	err := s.http.Shutdown()
	if served := <-s.served; served != nil && err == nil {
		err = served
	}
	return err
}

// handle routes a request.
func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	parts := strings.Split(strings.Trim(string(ctx.Path()), "/"), "/")
	method := string(ctx.Method())
	switch {
	case len(parts) == 3 && parts[0] == "admin" && parts[1] == "campaigns" && method == "PUT":
		if s.authorized(ctx) {
			s.putCampaign(ctx, parts[2])
		}
	case len(parts) == 6 && parts[0] == "admin" && parts[1] == "campaigns" && parts[3] == "skus" && method == "GET":
		if !s.authorized(ctx) {
			return
		}
		switch parts[5] {
		case "audit":
			s.audit(ctx, parts[2], parts[4])
		case "refunds":
			s.refunds(ctx, parts[2], parts[4])
		default:
			writeError(ctx, 404, "NOT_FOUND")
		}
	case len(parts) == 6 && parts[0] == "v1" && parts[1] == "campaigns" && parts[3] == "skus" && parts[5] == "reservations" && method == "POST":
		s.reserve(ctx, parts[2], parts[4])
	case len(parts) == 3 && parts[0] == "v1" && parts[1] == "reservations" && method == "GET":
		s.status(ctx, parts[2])
	case len(parts) == 4 && parts[0] == "v1" && parts[1] == "reservations" && parts[3] == "payment" && method == "POST":
		s.pay(ctx, parts[2])
	case len(parts) == 4 && parts[0] == "v1" && parts[1] == "reservations" && parts[3] == "cancel" && method == "POST":
		s.cancel(ctx, parts[2])
	default:
		writeError(ctx, 404, "NOT_FOUND")
	}
}

func (s *Server) authorized(ctx *fasthttp.RequestCtx) bool {
	if s.options.AdminToken == "" || string(ctx.Request.Header.Peek("Authorization")) == "Bearer "+s.options.AdminToken {
		return true
	}
	writeError(ctx, 401, "UNAUTHORIZED")
	return false
}

// decodeStrict decodes one JSON object into v, refusing unknown fields,
// keys spelled otherwise than v's json tags or repeated (at every level),
// and data after it, as seckilld does.
func decodeStrict(body []byte, v any) error {
	if string(bytes.Trim(body, jsonSpace)) == "null" {
		return errors.New("a JSON object is expected") // encoding/json would take it
	}
	decoder := json.NewDecoder(bytes.NewReader(body))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(v); err != nil {
		return err
	}
	if _, err := decoder.Token(); err != io.EOF {
		return errors.New("data after the object")
	}
	return jsonkeys.Check(body, v)
}

// jsonSpace is JSON's whitespace (RFC 8259 §2), all a body may hold and
// still count as empty.
const jsonSpace = " \t\r\n"

func writeJSON(ctx *fasthttp.RequestCtx, status int, body []byte) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

func writeError(ctx *fasthttp.RequestCtx, status int, code string) {
	writeJSON(ctx, status, []byte(`{"error":"`+code+`"}`))
}

func mustJSON(value any) []byte {
	body, err := json.Marshal(value)
	if err != nil {
		panic(err) // only plain maps and structs are marshalled
	}
	return body
}

type campaignBody struct {
	CampaignID     string `json:"campaign_id"`
	StartAt        string `json:"start_at"`
	EndAt          string `json:"end_at"`
	PaymentWindow  string `json:"payment_window"`
	ReleaseOnClose bool   `json:"release_on_close"`
	SKUs           []struct {
		SKUID     string `json:"sku_id"`
		SaleLimit int64  `json:"sale_limit"`
	} `json:"skus"`
}

func (s *Server) putCampaign(ctx *fasthttp.RequestCtx, id string) {
	var body campaignBody
	if err := decodeStrict(ctx.PostBody(), &body); err != nil || body.CampaignID != id || len(body.SKUs) == 0 {
		writeError(ctx, 400, "BAD_REQUEST")
		return
	}
	startAt, err1 := time.Parse(time.RFC3339Nano, body.StartAt)
	endAt, err2 := time.Parse(time.RFC3339Nano, body.EndAt)
	window, err3 := time.ParseDuration(body.PaymentWindow)
	if err := errors.Join(err1, err2, err3); err != nil || !endAt.After(startAt) || window <= 0 {
		writeError(ctx, 400, "BAD_REQUEST")
		return
	}
	c := &campaign{id: id, startAt: startAt, endAt: endAt, paymentWindow: window, releaseOnClose: body.ReleaseOnClose, skus: map[string]*sku{}}
	for _, spec := range body.SKUs {
		if spec.SKUID == "" || spec.SaleLimit < 0 {
			writeError(ctx, 400, "BAD_REQUEST")
			return
		}
		c.skus[spec.SKUID] = &sku{id: spec.SKUID, saleLimit: spec.SaleLimit, available: spec.SaleLimit}
	}
	s.mu.Lock()
	_, existed := s.campaigns[id]
	if !existed {
		s.campaigns[id] = c
	}
	s.mu.Unlock()
	if existed {
		writeJSON(ctx, 200, []byte(`{"campaign_id":"`+id+`"}`))
		return
	}
	writeJSON(ctx, 201, []byte(`{"campaign_id":"`+id+`"}`))
}

func (s *Server) reserve(ctx *fasthttp.RequestCtx, campaignID, skuID string) {
	var body struct {
		RequestID string `json:"request_id"`
		UserID    string `json:"user_id"`
	}
	if err := decodeStrict(ctx.PostBody(), &body); err != nil || body.RequestID == "" || body.UserID == "" {
		writeError(ctx, 400, "BAD_REQUEST")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserveCalls++
	if every := int64(s.options.QueueFullEvery); every > 0 && s.reserveCalls%every == 0 {
		ctx.Response.Header.Set("Retry-After", "0")
		writeError(ctx, 429, "QUEUE_FULL")
		return
	}
	now := s.options.Now()
	s.expireLocked(now)
	c, ok := s.campaigns[campaignID]
	if !ok || c.skus[skuID] == nil {
		writeError(ctx, 404, "NOT_FOUND")
		return
	}
	item := c.skus[skuID]
	if existing, ok := s.byRequest[body.RequestID]; ok {
		if existing.userID != body.UserID || existing.campaign != c || existing.sku != item {
			writeError(ctx, 422, "REQUEST_ID_REUSED")
			return
		}
		writeJSON(ctx, 202, existing.acceptedBody)
		return
	}
	switch {
	case now.Before(c.startAt):
		writeError(ctx, 403, "NOT_STARTED")
		return
	case !now.Before(c.endAt):
		writeError(ctx, 403, "ENDED")
		return
	}
	if holder, ok := s.byUser[campaignID+"\x00"+body.UserID]; ok && holder.state != stateClosed {
		writeJSON(ctx, 409, mustJSON(map[string]string{"error": "ALREADY_PURCHASED", "reservation_id": holder.id}))
		return
	}
	if item.available <= 0 && !s.options.Oversell {
		writeError(ctx, 409, "SOLD_OUT")
		return
	}
	r := s.newReservationLocked(c, item, body.RequestID, body.UserID, now)
	s.newAccepts++
	if every := int64(s.options.UnknownEvery); every > 0 && s.newAccepts%every == 0 {
		writeJSON(ctx, 504, mustJSON(map[string]string{"error": "RESULT_UNKNOWN", "status_url": "/v1/reservations/" + r.id}))
		return
	}
	writeJSON(ctx, 202, r.acceptedBody)
}

// newReservationLocked takes a unit and a token for a new reservation.
func (s *Server) newReservationLocked(c *campaign, item *sku, requestID, userID string, now time.Time) *reservation {
	s.nextID++
	item.available--
	item.reserved++
	var token string
	if n := len(item.freeTokens); n > 0 {
		token = item.freeTokens[n-1]
		item.freeTokens = item.freeTokens[:n-1]
	} else {
		item.nextToken++
		token = item.id + "-t" + strconv.FormatInt(item.nextToken, 10)
	}
	r := &reservation{
		id:        "r" + strconv.FormatInt(s.nextID, 10),
		requestID: requestID,
		userID:    userID,
		campaign:  c,
		sku:       item,
		state:     statePending,
		tokenID:   token,
		expireAt:  now.Add(c.paymentWindow),
	}
	r.acceptedBody = mustJSON(map[string]string{
		"reservation_id": r.id,
		"request_id":     requestID,
		"state":          statePending,
		"token_id":       token,
		"expire_at":      r.expireAt.UTC().Format(timeLayout),
		"status_url":     "/v1/reservations/" + r.id,
	})
	s.reservations[r.id] = r
	s.byRequest[requestID] = r
	s.byUser[c.id+"\x00"+userID] = r
	item.reservations = append(item.reservations, r)
	heap.Push(&s.pending, r)
	return r
}

// expireLocked closes every pending reservation whose window has passed.
func (s *Server) expireLocked(now time.Time) {
	for s.pending.Len() > 0 && !s.pending[0].expireAt.After(now) {
		r := heap.Pop(&s.pending).(*reservation)
		if r.state == statePending {
			s.closeLocked(r, "expired")
		}
	}
}

// closeLocked moves a pending reservation to CLOSED and releases its unit.
func (s *Server) closeLocked(r *reservation, reason string) {
	r.state = stateClosed
	r.closedReason = reason
	r.sku.reserved--
	if r.campaign.releaseOnClose {
		r.sku.available++
		r.sku.freeTokens = append(r.sku.freeTokens, r.tokenID)
	} else {
		r.sku.saleLimit--
	}
	if r.heapIndex >= 0 && r.heapIndex < s.pending.Len() && s.pending[r.heapIndex] == r {
		heap.Remove(&s.pending, r.heapIndex)
	}
}

// reservationLocked expires what is due at now and returns reservation
// id, or answers 404 and returns nil. s.mu is held.
func (s *Server) reservationLocked(ctx *fasthttp.RequestCtx, now time.Time, id string) *reservation {
	s.expireLocked(now)
	r, ok := s.reservations[id]
	if !ok {
		writeError(ctx, 404, "NOT_FOUND")
		return nil
	}
	return r
}

func (s *Server) status(ctx *fasthttp.RequestCtx, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reservationLocked(ctx, s.options.Now(), id)
	if r == nil {
		return
	}
	body := map[string]any{
		"reservation_id": r.id,
		"request_id":     r.requestID,
		"user_id":        r.userID,
		"state":          r.state,
		"token_id":       r.tokenID,
		"expire_at":      r.expireAt.UTC().Format(timeLayout),
	}
	if !r.paidAt.IsZero() {
		body["paid_at"] = r.paidAt.UTC().Format(timeLayout)
	}
	if r.closedReason != "" {
		body["closed_reason"] = r.closedReason
	}
	if r.refundRequired {
		body["refund_required"] = true
	}
	writeJSON(ctx, 200, mustJSON(body))
}

// paymentBody is the body of a payment, as seckilld reads it.
type paymentBody struct {
	PaymentID     string  `json:"payment_id"`
	Amount        *int64  `json:"amount"`
	ReservationID *string `json:"reservation_id"` // given (even ""): must be the path's
}

// pay follows seckilld's checks of a payment, in its order: the signature
// (401), the body (400: unknown fields, no payment_id, a negative amount),
// a reservation_id naming another reservation (400 RESERVATION_MISMATCH),
// and a signed body without reservation_id (401).
func (s *Server) pay(ctx *fasthttp.RequestCtx, id string) {
	signed := s.options.PaymentSecret != ""
	if signed && string(ctx.Request.Header.Peek("X-Signature")) != signature(s.options.PaymentSecret, ctx.PostBody()) {
		writeError(ctx, 401, "UNAUTHORIZED")
		return
	}
	var body paymentBody
	if err := decodeStrict(ctx.PostBody(), &body); err != nil || body.PaymentID == "" || (body.Amount != nil && *body.Amount < 0) {
		writeError(ctx, 400, "BAD_REQUEST")
		return
	}
	switch {
	case body.ReservationID != nil && *body.ReservationID != id:
		writeError(ctx, 400, "RESERVATION_MISMATCH")
		return
	case signed && body.ReservationID == nil:
		writeError(ctx, 401, "UNAUTHORIZED")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.options.Now()
	r := s.reservationLocked(ctx, now, id)
	if r == nil {
		return
	}
	switch r.state {
	case statePending:
		r.state = statePaid
		r.paidAt = now
		r.paymentID = body.PaymentID
		r.sku.reserved--
		r.sku.confirmed++
		if r.heapIndex >= 0 && r.heapIndex < s.pending.Len() && s.pending[r.heapIndex] == r {
			heap.Remove(&s.pending, r.heapIndex)
		}
		writeJSON(ctx, 200, []byte(`{"state":"PAID"}`))
	case statePaid:
		if r.paymentID == body.PaymentID {
			writeJSON(ctx, 200, []byte(`{"state":"PAID"}`))
			return
		}
		// Like the engine: a second payment id is money to give back.
		r.recordRefund(body.PaymentID)
		writeError(ctx, 409, "PAYMENT_CONFLICT")
	default:
		r.recordRefund(body.PaymentID)
		writeError(ctx, 409, "REFUND_REQUIRED")
	}
}

// recordRefund records paymentID of r for refund, once per payment id.
func (r *reservation) recordRefund(paymentID string) {
	if !hasRefund(r.sku.refunds, r.id, paymentID) {
		r.refundRequired = true
		r.sku.refunds = append(r.sku.refunds, refund{ReservationID: r.id, PaymentID: paymentID})
	}
}

func hasRefund(refunds []refund, reservationID, paymentID string) bool {
	for _, r := range refunds {
		if r.ReservationID == reservationID && r.PaymentID == paymentID {
			return true
		}
	}
	return false
}

// cancel closes a pending reservation. Like seckilld, it takes no body
// but an empty one or {} (400 otherwise), and refuses a paid reservation
// (409 NOT_CLOSABLE).
func (s *Server) cancel(ctx *fasthttp.RequestCtx, id string) {
	if body := bytes.Trim(ctx.PostBody(), jsonSpace); len(body) > 0 && decodeStrict(body, &struct{}{}) != nil {
		writeError(ctx, 400, "BAD_REQUEST")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reservationLocked(ctx, s.options.Now(), id)
	if r == nil {
		return
	}
	switch r.state {
	case statePending:
		s.closeLocked(r, "cancelled")
		writeJSON(ctx, 200, []byte(`{"state":"CLOSED"}`))
	case stateClosed:
		writeJSON(ctx, 200, []byte(`{"state":"CLOSED"}`))
	default:
		writeError(ctx, 409, "NOT_CLOSABLE")
	}
}

func (s *Server) audit(ctx *fasthttp.RequestCtx, campaignID, skuID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(s.options.Now())
	c, ok := s.campaigns[campaignID]
	if !ok || c.skus[skuID] == nil {
		writeError(ctx, 404, "NOT_FOUND")
		return
	}
	item := c.skus[skuID]
	counts := map[string]int64{statePending: 0, statePaid: 0, stateClosed: 0}
	for _, r := range item.reservations {
		counts[r.state]++
	}
	violations := []string{}
	if !s.options.Oversell {
		if item.available+item.reserved+item.confirmed != item.saleLimit {
			violations = append(violations, fmt.Sprintf("available %d + reserved %d + confirmed %d != sale_limit %d", item.available, item.reserved, item.confirmed, item.saleLimit))
		}
		if item.available < 0 || item.reserved < 0 {
			violations = append(violations, "negative counter")
		}
		if counts[statePending] != item.reserved || counts[statePaid] != item.confirmed {
			violations = append(violations, "counters disagree with reservations")
		}
	}
	writeJSON(ctx, 200, mustJSON(map[string]any{
		"sale_limit":   item.saleLimit,
		"available":    item.available,
		"reserved":     item.reserved,
		"confirmed":    item.confirmed,
		"invariant_ok": len(violations) == 0,
		"violations":   violations,
		"counts":       counts,
	}))
}

func (s *Server) refunds(ctx *fasthttp.RequestCtx, campaignID, skuID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.campaigns[campaignID]
	if !ok || c.skus[skuID] == nil {
		writeError(ctx, 404, "NOT_FOUND")
		return
	}
	list := append([]refund{}, c.skus[skuID].refunds...)
	writeJSON(ctx, 200, mustJSON(list))
}

// expiryHeap orders pending reservations by expire_at.
type expiryHeap []*reservation

// Len is the number of pending reservations (heap.Interface).
func (h expiryHeap) Len() int { return len(h) }

// Less orders by expire_at (heap.Interface).
func (h expiryHeap) Less(i, j int) bool { return h[i].expireAt.Before(h[j].expireAt) }

// Swap swaps two entries and their indexes (heap.Interface).
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex = i
	h[j].heapIndex = j
}

// Push adds a reservation (heap.Interface).
func (h *expiryHeap) Push(x any) {
	r := x.(*reservation)
	r.heapIndex = len(*h)
	*h = append(*h, r)
}

// Pop removes the last reservation (heap.Interface).
func (h *expiryHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	r.heapIndex = -1
	return r
}
