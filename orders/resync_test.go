package orders_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/orders/orderstest"
)

// An order taken from the export is the order its events build, field by
// field: a consumer that followed the feed from the start, one that stopped
// after the orders of some reservations were made and came back after the
// SKUs' logs were truncated past its cursor (those reservations paid,
// cancelled and released meanwhile: the export changes orders it holds),
// and one that started after the SKUs' first records were gone, both of
// them resynchronising each SKU from the export (as of a snapshot and the
// log after it) while payments, cancels and an operator's releases of
// earlier reservations land around that point, end with the same rows,
// the payment's amount (0 included) and whether a closed reservation's
// token went back on sale included; all reconcile clean, which compares
// those too.
func TestResyncedOrdersAreTheEventsOrders(t *testing.T) {
	// release_on_close false: a close keeps the token (token_released
	// false) until an operator releases it (RELEASED: true).
	s := newResyncScene(t, "same", false)
	c, engine, ctx, src := s.c, s.engine, context.Background(), s.src
	followed, returned, fresh, follower, stop := s.followed, s.returned, s.fresh, s.follower, s.stopReturned
	reserve := func(from, to int) []string { return s.reserve(t, from, to) }
	// act pays (an amount of its own, 0 now and then), cancels, cancels
	// and releases the token, or leaves the reservation pending.
	act := func(i int, id string) error {
		var err error
		switch i % 5 {
		case 0, 1:
			_, err = c.Pay(ctx, id, client.Payment{PaymentID: fmt.Sprint("p", i), Amount: int64(i%3) * int64(100+i)})
		case 2:
			_, err = c.Cancel(ctx, id)
		case 3:
			if _, err = c.Cancel(ctx, id); err == nil {
				_, err = engine.Release(ctx, id)
			}
		}
		if err != nil {
			return fmt.Errorf("buyer %d (%s): %w", i, id, err)
		}
		return nil
	}
	actAll := func(from int, ids []string) {
		t.Helper()
		for j, id := range ids {
			if err := act(from+j, id); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Orders of pending reservations, then the returning consumer stops,
	// and they are paid, cancelled and released without it.
	held := reserve(0, 40)
	orderstest.WaitClean(t, c, followed, "same")
	orderstest.WaitClean(t, c, returned, "same")
	stop()
	actAll(0, held)

	// The sale, in rounds the follower catches up with, until the SKUs'
	// logs are truncated past the returning consumer's cursor (and past
	// their first records).
	cursor := savedCursor(t, returned, src(0).Name())
	next := len(held)
	for deadline := time.Now().Add(2 * time.Minute); !truncatedPast(t, c, "same", cursor); next += 10 {
		if time.Now().After(deadline) {
			t.Fatal("the SKUs' logs were not truncated past the cursor within 2 minutes")
		}
		actAll(next, reserve(next, next+10))
		orderstest.WaitClean(t, c, followed, "same")
	}

	// Reservations made before the two consumers start, paid, cancelled
	// and released while they take the SKUs from the export.
	pending := reserve(next, next+40)
	orderstest.WaitClean(t, c, followed, "same")
	var wg sync.WaitGroup
	failed := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for j, id := range pending {
			if err := act(next+j, id); err != nil {
				failed <- err
				return
			}
		}
	}()
	back, _ := orderstest.Consume(t, returned, src(50))
	first, _ := orderstest.Consume(t, fresh, src(50))
	wg.Wait()
	select {
	case err := <-failed:
		t.Fatal(err)
	default:
	}

	orderstest.WaitClean(t, c, followed, "same")
	want := orderRows(t, followed)
	for _, db := range []struct {
		name, url string
		consumer  *prometheus.Registry
	}{{"returned", returned, back}, {"fresh", fresh, first}} {
		orderstest.WaitClean(t, c, db.url, "same")
		if n := value(t, db.consumer, "seckill_orders_resyncs_total"); n != float64(len(orderstest.SKUs)) {
			t.Fatalf("the %s consumer resynchronised %v times, want once per SKU", db.name, n)
		}
		got := orderRows(t, db.url)
		if !slices.Equal(want, got) {
			var diffs []string
			for i := range max(len(want), len(got)) {
				if w, g := at(want, i), at(got, i); w != g {
					diffs = append(diffs, "events: "+w+"\nexport: "+g)
				}
			}
			t.Fatalf("the %s consumer: %d of %d orders differ, first:\n%s", db.name, len(diffs), len(want), strings.Join(diffs[:min(len(diffs), 3)], "\n"))
		}
		// The rows compared hold what they are meant to compare.
		for _, q := range []string{
			`SELECT count(*) FROM orders WHERE state = 'PAID' AND amount = 0`,
			`SELECT count(*) FROM orders WHERE state = 'PAID' AND amount > 0`,
			`SELECT count(*) FROM orders WHERE state = 'CLOSED' AND token_released`,
			`SELECT count(*) FROM orders WHERE state = 'CLOSED' AND NOT token_released`,
		} {
			if count(t, db.url, q) == 0 {
				t.Errorf("the %s consumer: no order: %s", db.name, q)
			}
		}
	}
	if n := value(t, follower, "seckill_orders_resyncs_total"); n != 0 {
		t.Fatalf("the follower resynchronised %v times: its orders are not the events' alone", n)
	}
}

// savedCursor is consumer's cursor in the database at dbURL.
func savedCursor(t *testing.T, dbURL, consumer string) string {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	cursor, err := orders.NewStore(pool).Cursor(ctx, consumer)
	if err != nil || cursor == "" {
		t.Fatalf("the cursor of %s: %q, %v", consumer, cursor, err)
	}
	return cursor
}

// truncatedPast reports whether every SKU of the campaign's feed starts
// after the record following the campaign cursor's position of it.
func truncatedPast(t *testing.T, c *client.Client, campaignID, cursor string) bool {
	t.Helper()
	positions, err := feed.ParseCampaignCursor(cursor)
	if err != nil || len(positions) != len(orderstest.SKUs) {
		t.Fatalf("cursor %q: %v, %d positions", cursor, err, len(positions))
	}
	for _, s := range orderstest.SKUs {
		page, err := c.Feed(context.Background(), client.FeedRequest{CampaignID: campaignID, SKUID: s, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) == 0 {
			return false
		}
		history, _, _ := strings.Cut(page.Events[0].ID, "-")
		_, at, _ := strings.Cut(positions[history], "-")
		index, err := strconv.ParseUint(at, 10, 64)
		if err != nil {
			t.Fatalf("cursor %q holds no position of %s: %v", cursor, s, err)
		}
		if page.FirstIndex <= index+1 {
			return false
		}
	}
	return true
}

// orderRows reads every order's fields but the bookkeeping (last_event_id,
// updated_at), one line each, by reservation id.
func orderRows(t *testing.T, dbURL string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT reservation_id, campaign_id, sku_id, request_id, user_id, token_id, state, created_at, expire_at,
    paid_at, payment_id, amount, closed_at, close_reason, token_released FROM orders ORDER BY reservation_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		values, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%v", values))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func at(rows []string, i int) string {
	if i < len(rows) {
		return rows[i]
	}
	return "-"
}
