package orders_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/orders/orderstest"
)

// BenchmarkApply is the order service's PostgreSQL side alone: batches of
// 500 new events (a reservation.created and a paid for each of 250
// reservations) committed with their cursor, fsync on; events/s.
func BenchmarkApply(b *testing.B) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, orderstest.Database(b))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if _, err := orders.Migrate(ctx, pool); err != nil {
		b.Fatal(err)
	}
	store := orders.NewStore(pool)
	const batch = 500
	at := time.Now()
	seq := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		events := make([]client.Event, 0, batch)
		for len(events) < batch {
			seq++
			id := fmt.Sprintf("bench~sku~%d~0000000000000000", seq)
			data := client.ReservationData{CampaignID: "bench", SKUID: "sku", ReservationID: id, RequestID: fmt.Sprint("r", seq),
				UserID: fmt.Sprint("u", seq), TokenID: uint32(seq), CreatedAt: at, ExpireAt: at.Add(15 * time.Minute), PaymentID: "p", Amount: 1}
			raw, _ := json.Marshal(data)
			for _, typ := range []string{client.TypeReservationCreated, client.TypeReservationPaid} {
				events = append(events, client.Event{ID: fmt.Sprintf("0123456789abcdef-%d", len(events)+i*batch), Source: "/seckill/bench/sku",
					Type: typ, Subject: id, Time: at, SeckillIndex: uint64(len(events) + i*batch), Data: raw})
			}
		}
		if _, err := store.Apply(ctx, "bench", events, fmt.Sprint(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "events/s")
}
