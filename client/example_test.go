package client_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/entrypass"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/httpapi"
)

// The examples run against a real seckilld (the engine and the HTTP
// service, in this process, on loopback, with a data dir of their own),
// started by TestMain.
var (
	seckilld   string // its base URL
	adminToken = "example-admin-token"
	passKey    *entrypass.Key
)

func TestMain(m *testing.M) {
	os.Exit(runWithServer(m))
}

func runWithServer(m *testing.M) int {
	dir, err := os.MkdirTemp("", "client-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	engine, err := actors.Open(actors.Config{DataDir: dir, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer engine.Close()
	passKey, err = entrypass.NewKey(1, []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		log.Fatal(err)
	}
	ring, err := entrypass.NewKeyRing(passKey)
	if err != nil {
		log.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: engine, Feed: feed.New(engine), Lotteries: engine, AdminToken: adminToken, Logger: quiet,
		EntryPasses: httpapi.EntryPassConfig{Keys: ring}})
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()
	seckilld = "http://" + ln.Addr().String()
	return m.Run()
}

// defineSale defines campaign id with one SKU of units units, open now.
func defineSale(c *client.Client, id string, units int64, passes bool) {
	now := time.Now()
	err := c.PutCampaign(context.Background(), client.Campaign{CampaignID: id, StartAt: now.Add(-time.Minute), EndAt: now.Add(time.Hour),
		PaymentWindow: 15 * time.Minute, ReleaseOnClose: true, EntryPassRequired: passes,
		SKUs: []client.CampaignSKU{{SKUID: "phone", SaleLimit: units}}})
	if err != nil {
		log.Fatal(err)
	}
}

// A buyer reserves, retries the same click, pays and reads the result.
func ExampleClient_Reserve() {
	c, err := client.New(client.Options{BaseURL: seckilld, AdminToken: adminToken})
	if err != nil {
		log.Fatal(err)
	}
	defineSale(c, "spring", 1, false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// The gateway keeps the request_id of a click for all its retries.
	click := client.ReserveRequest{CampaignID: "spring", SKUID: "phone", UserID: "alice", RequestID: "alice-click-1"}
	r, err := c.Reserve(ctx, click)
	if err != nil {
		log.Fatal(err)
	}
	again, _ := c.Reserve(ctx, click) // a retry: the same reservation, never a second one
	fmt.Println(r.State, r.TokenID, again.ReservationID == r.ReservationID)

	paid, err := c.Pay(ctx, r.ReservationID, client.Payment{PaymentID: "pay-1", Amount: 1999})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(paid.State)

	// The unit is gone: another buyer hears SOLD_OUT.
	_, err = c.Reserve(ctx, client.ReserveRequest{CampaignID: "spring", SKUID: "phone", UserID: "bob"})
	fmt.Println(errors.Is(err, client.ErrSoldOut))
	// Output:
	// PENDING_PAYMENT 1 true
	// PAID
	// true
}

// A reserve with an entry pass: the pass carries the request_id.
func ExampleClient_Reserve_entryPass() {
	c, err := client.New(client.Options{BaseURL: seckilld, AdminToken: adminToken})
	if err != nil {
		log.Fatal(err)
	}
	defineSale(c, "passes", 10, true)
	ctx := context.Background()
	now := time.Now()
	// The gateway mints (or seckilld's issuing route hands out) the pass.
	pass, minted, err := entrypass.Mint(passKey, entrypass.Claims{CampaignID: "passes", SKUID: "phone", UserID: "carol",
		NotBeforeMs: now.Add(-time.Minute).UnixMilli(), ExpiresAtMs: now.Add(time.Hour).UnixMilli()}, rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	r, err := c.Reserve(ctx, client.ReserveRequest{CampaignID: "passes", SKUID: "phone", UserID: "carol", EntryPass: pass})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.State, r.RequestID == minted.RequestID())

	_, err = c.Reserve(ctx, client.ReserveRequest{CampaignID: "passes", SKUID: "phone", UserID: "dave"})
	fmt.Println(errors.Is(err, client.ErrEntryPassRequired))
	// Output:
	// PENDING_PAYMENT true
	// true
}

// A gateway forwards its buyers in one request; each item has its answer.
func ExampleClient_ReserveBatch() {
	c, err := client.New(client.Options{BaseURL: seckilld, AdminToken: adminToken})
	if err != nil {
		log.Fatal(err)
	}
	defineSale(c, "batch", 2, false)
	results, err := c.ReserveBatch(context.Background(), "batch", "phone", []client.BatchItem{
		{UserID: "u1", RequestID: "r1"}, {UserID: "u2", RequestID: "r2"}, {UserID: "u3", RequestID: "r3"}, {UserID: "u1", RequestID: "r4"}}) // u1 again: one purchase per user
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range results {
		if r.Err != nil {
			var e *client.Error
			errors.As(r.Err, &e)
			fmt.Println(r.RequestID, e.Status, e.Code)
			continue
		}
		fmt.Println(r.RequestID, r.Reservation.State)
	}
	// Output:
	// r1 PENDING_PAYMENT
	// r2 PENDING_PAYMENT
	// r3 409 SOLD_OUT
	// r4 409 ALREADY_PURCHASED
}

// What became of a click whose answer was lost: the lookup by request_id.
func ExampleClient_Lookup() {
	c, err := client.New(client.Options{BaseURL: seckilld, AdminToken: adminToken})
	if err != nil {
		log.Fatal(err)
	}
	defineSale(c, "lookup", 5, false)
	ctx := context.Background()
	if _, err := c.Reserve(ctx, client.ReserveRequest{CampaignID: "lookup", SKUID: "phone", UserID: "erin", RequestID: "erin-1"}); err != nil {
		log.Fatal(err)
	}
	o, err := c.Lookup(ctx, "lookup", "phone", "erin-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(o.Outcome, o.Reservation.UserID, o.Reservation.State)
	_, err = c.Lookup(ctx, "lookup", "phone", "never-sent")
	fmt.Println(errors.Is(err, client.ErrNotFound))
	// Output:
	// ACCEPTED erin PENDING_PAYMENT
	// true
}

// The payment system's callback: repeated by payment_id it is one payment;
// the same payment_id with another amount is refused; a payment that comes
// after the reservation closed never revives it (the money is for refund).
func ExampleClient_Pay() {
	c, err := client.New(client.Options{BaseURL: seckilld, AdminToken: adminToken})
	if err != nil {
		log.Fatal(err)
	}
	defineSale(c, "pay", 5, false)
	ctx := context.Background()
	r, err := c.Reserve(ctx, client.ReserveRequest{CampaignID: "pay", SKUID: "phone", UserID: "hana"})
	if err != nil {
		log.Fatal(err)
	}
	paid, err := c.Pay(ctx, r.ReservationID, client.Payment{PaymentID: "pay-hana", Amount: 1999})
	if err != nil {
		log.Fatal(err)
	}
	again, err := c.Pay(ctx, r.ReservationID, client.Payment{PaymentID: "pay-hana", Amount: 1999}) // the callback delivered twice
	fmt.Println(paid.State, again.State, err == nil)
	_, err = c.Pay(ctx, r.ReservationID, client.Payment{PaymentID: "pay-hana", Amount: 1})
	fmt.Println(errors.Is(err, client.ErrPaymentIDReused))

	late, err := c.Reserve(ctx, client.ReserveRequest{CampaignID: "pay", SKUID: "phone", UserID: "ivan"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Cancel(ctx, late.ReservationID); err != nil {
		log.Fatal(err)
	}
	_, err = c.Pay(ctx, late.ReservationID, client.Payment{PaymentID: "pay-ivan", Amount: 1999})
	fmt.Println(errors.Is(err, client.ErrRefundRequired))
	got, err := c.Reservation(ctx, late.ReservationID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.State)
	// Output:
	// PAID PAID true
	// true
	// true
	// CLOSED
}

// A buyer cancels; the status shows the close and its reason.
func ExampleClient_Cancel() {
	c, err := client.New(client.Options{BaseURL: seckilld, AdminToken: adminToken})
	if err != nil {
		log.Fatal(err)
	}
	defineSale(c, "cancel", 5, false)
	ctx := context.Background()
	r, err := c.Reserve(ctx, client.ReserveRequest{CampaignID: "cancel", SKUID: "phone", UserID: "frank"})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Cancel(ctx, r.ReservationID); err != nil {
		log.Fatal(err)
	}
	got, err := c.Reservation(ctx, r.ReservationID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.State, got.ClosedReason, got.UserID)
	// Output: CLOSED CANCELLED frank
}

// A consumer reads the campaign's feed page by page, saving the cursor
// after each page (a real one applies each event idempotently by id).
func ExampleClient_Feed() {
	c, err := client.New(client.Options{BaseURL: seckilld, AdminToken: adminToken})
	if err != nil {
		log.Fatal(err)
	}
	defineSale(c, "feed", 5, false)
	ctx := context.Background()
	r, _ := c.Reserve(ctx, client.ReserveRequest{CampaignID: "feed", SKUID: "phone", UserID: "gina"})
	c.Pay(ctx, r.ReservationID, client.Payment{PaymentID: "p-gina", Amount: 500})

	cursor := ""
	for {
		page, err := c.Feed(ctx, client.FeedRequest{CampaignID: "feed", After: cursor, Limit: 2})
		if err != nil {
			log.Fatal(err)
		}
		for _, e := range page.Events {
			d, isReservation, _ := e.Reservation()
			fmt.Println(e.Type, isReservation && d.UserID == "gina")
		}
		if len(page.Events) == 0 {
			break
		}
		cursor = page.NextCursor // save it (with the page's effects)
	}
	// Output:
	// seckill.sku.defined false
	// seckill.reservation.created true
	// seckill.reservation.paid true
}

// A consumer follows the feed as Server-Sent Events, resuming after the
// last event it handled if the stream drops.
func ExampleClient_Stream() {
	c, err := client.New(client.Options{BaseURL: seckilld, AdminToken: adminToken})
	if err != nil {
		log.Fatal(err)
	}
	defineSale(c, "stream", 5, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		r, _ := c.Reserve(ctx, client.ReserveRequest{CampaignID: "stream", SKUID: "phone", UserID: "hank"})
		c.Cancel(ctx, r.ReservationID)
	}()
	done := errors.New("done")
	err = c.Stream(ctx, client.FeedRequest{CampaignID: "stream", SKUID: "phone"}, func(e client.Event, cursor string) error {
		d, _, _ := e.Reservation()
		fmt.Println(strings.TrimSpace(e.Type + " " + d.Reason))
		if e.Type == client.TypeReservationClosed {
			return done
		}
		return nil
	})
	fmt.Println(err == done)
	// Output:
	// seckill.sku.defined
	// seckill.reservation.created
	// seckill.reservation.closed CANCELLED
	// true
}
