package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/nats-io/nats.go"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/relay"
)

// reanchor is "seckill-orders reanchor": after seckilld was restored to an
// earlier point (the service stopped on 409 CURSOR_DIVERGED), it keeps the
// orders the abandoned records touched apart, prints each, and moves the
// service's cursor onto the restored feed (orders.FeedSource.Reanchor); with
// --nats and --stream, a consumer of a relay's stream past the relay's
// seckill.relay.reanchored messages (orders.JetStreamSource.Reanchor).
// Run it with the service stopped, then start the service again.
func reanchor(ctx context.Context, args []string, usageOut, stdout io.Writer) error {
	fs := flag.NewFlagSet("seckill-orders reanchor", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	database := fs.String("database", "", "PostgreSQL URL of the orders (required)")
	feed := fs.String("feed", "", "seckilld's base URL, the restored one (required; for a cell, that cell's address)")
	token := fs.String("admin-token", "", "seckilld's admin bearer token (required)")
	campaign := fs.String("campaign", "", "the service's campaign (required)")
	cell := fs.String("cell", "", "for a cell of a cluster (--etcd), the cell whose feed diverged")
	natsURL := fs.String("nats", "", "for a consumer of a relay's stream: the NATS server URL (with --stream)")
	stream := fs.String("stream", "", "for a consumer of a relay's stream: the stream the service stopped on (as its message names it, a cell's <stream>_<cell>)")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	switch {
	case *database == "" || *feed == "" || *token == "" || *campaign == "" || fs.NArg() > 0:
		return fmt.Errorf("%w: reanchor needs --database, --feed, --admin-token and --campaign", errUsage)
	case !sku.ValidID(*campaign):
		return fmt.Errorf("%w: --campaign %q: %s", errUsage, *campaign, sku.IDRule)
	case *cell != "" && !sku.ValidID(*cell):
		return fmt.Errorf("%w: --cell %q: %s", errUsage, *cell, sku.IDRule)
	case (*natsURL == "") != (*stream == ""):
		return fmt.Errorf("%w: --nats and --stream go together", errUsage)
	case *stream != "" && *cell != "":
		return fmt.Errorf("%w: --stream names a cell's stream itself (<stream>_<cell>): no --cell with it", errUsage)
	case *stream != "" && relay.CheckStreamName(*stream) != nil:
		return fmt.Errorf("%w: --stream: %v", errUsage, relay.CheckStreamName(*stream))
	}
	c, err := client.New(client.Options{BaseURL: *feed, AdminToken: *token})
	if err != nil {
		return fmt.Errorf("%w: --feed: %v", errUsage, err)
	}
	pool, err := newPool(ctx, *database)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := orders.Migrate(ctx, pool); err != nil {
		return err
	}
	src := &orders.FeedSource{Client: c, CampaignID: *campaign, Cell: *cell}
	consumer := src.Name()
	var done []orders.Reanchored
	if *stream == "" {
		done, err = src.Reanchor(ctx, orders.NewStore(pool), consumer)
	} else {
		nc, cerr := nats.Connect(*natsURL, nats.Name("seckill-orders reanchor "+*stream))
		if cerr != nil {
			return fmt.Errorf("connecting to %s: %w", *natsURL, cerr)
		}
		defer nc.Close()
		js := &orders.JetStreamSource{Conn: nc, Stream: *stream}
		consumer = js.Name()
		done, err = js.Reanchor(ctx, orders.NewStore(pool), consumer, src)
	}
	for _, r := range done {
		printReanchored(stdout, r)
	}
	if err == nil && len(done) == 0 {
		fmt.Fprintf(stdout, "nothing diverged at the saved cursor of %s\n", consumer)
	}
	return err
}

// printReanchored prints what re-anchoring one SKU did: the SKU's line,
// then a line per order and refund row set apart.
func printReanchored(w io.Writer, r orders.Reanchored) {
	history := "history " + r.History
	if r.History == "" {
		history = "an older copy of the log"
	}
	fmt.Fprintf(w, "SKU %s: restored after record %d (%s); %d abandoned events and %d orders set apart (order_reanchors id %d); "+
		"taken from the export as of record %d\n", r.SKUID, r.ForkIndex, history, r.Events, len(r.Orders), r.ID, r.AsOfIndex)
	for _, o := range r.Orders {
		fmt.Fprintf(w, "  %s\n", o)
	}
	for _, rf := range r.Refunds {
		refunded := "not refunded"
		if rf.Refunded {
			refunded = "refunded"
		}
		fmt.Fprintf(w, "  %s %s payment %s amount %d (%s)\n", orders.RefundNotInSeckill, rf.ReservationID, rf.PaymentID, rf.Amount, refunded)
	}
}
