package orders

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/ledger"
	"github.com/seckill/seckill/relay"
)

// Cells is a campaign sold by a cluster of cells (docs/cells.md): each
// cell logs its own share of a celled SKU (or, for a campaign defined
// locally on one cell, the whole of it) and serves its own feed, so the
// order service consumes each cell's campaign feed with a source of its
// own (FeedSource with Cell: its cursor is kept apart), or, with
// JetStream set, each cell's relay stream (relay.CellStream(Stream, cell):
// seckill-relay --cell fills it). The events of two cells never share a
// (source, id): a cell's history comes from its own reservation id key.
type Cells struct {
	Ledger     *ledger.Ledger
	CampaignID string
	// Client makes the client of a cell's base URL (the admin token set).
	Client func(baseURL string) (*client.Client, error)
	// JetStream, when set, is where each cell's events are read: the
	// stream relay.CellStream(Stream, cell), instead of the cell's feed
	// (Client is then unused, and a cell is consumed whether or not it
	// announced an address).
	JetStream *nats.Conn
	Stream    string
	// Limit and Wait are each cell's source's.
	Limit int
	Wait  time.Duration
	// Poll is how often etcd is read for cells (their addresses, the
	// cells of SKUs published since). Default 5 s.
	Poll time.Duration
}

// Run consumes every cell of the campaign into store until ctx ends (nil)
// or a cell's source refuses the position (its error, naming the cell,
// wrapping ErrPosition; the other cells are stopped cleanly first). It
// reads the campaign's cells and their announced addresses from etcd at
// start and every Poll: a cell that appears (a SKU published over more
// cells, a cell that announced its address late) gets its consumer, and
// one whose address changed (restarted elsewhere) is stopped cleanly and
// started again at its new address, from its saved cursor. etcd
// unreachable leaves running consumers alone and is retried.
func (c *Cells) Run(ctx context.Context, store *Store, m *Metrics, log *slog.Logger) error {
	if c.Poll <= 0 {
		c.Poll = 5 * time.Second
	}
	ctx, stopAll := context.WithCancel(ctx)
	type consumer struct {
		url  string
		stop context.CancelFunc
		done chan struct{}
	}
	running := map[string]*consumer{}
	refused := make(chan error, 1)
	var wg sync.WaitGroup
	defer func() {
		stopAll()
		wg.Wait()
	}()
	waiting := false
	for {
		servers, err := cells.CampaignServers(ctx, c.Ledger, c.CampaignID, "")
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			m.errors.Inc()
			log.Warn("orders: reading the campaign's cells from etcd", "campaign", c.CampaignID, "err", err, "again_in", c.Poll)
		case len(servers) == 0 && !waiting:
			log.Warn("orders: etcd knows no cell of the campaign yet: waiting for it", "campaign", c.CampaignID)
			waiting = true
		}
		for cell, url := range servers {
			if c.JetStream != nil {
				url = "" // the stream does not move with the cell
			}
			r := running[cell]
			if url == "" && c.JetStream == nil || r != nil && r.url == url {
				continue
			}
			if r != nil {
				log.Warn("orders: a cell moved: consuming it at its new address", "cell", cell, "from", r.url, "to", url)
				r.stop()
				<-r.done
			}
			src, closeSrc, err := c.source(cell, url)
			if err != nil {
				return err
			}
			cctx, stop := context.WithCancel(ctx)
			r = &consumer{url: url, stop: stop, done: make(chan struct{})}
			running[cell] = r
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer close(r.done)
				defer closeSrc()
				if err := Run(cctx, src, store, m, log.With("cell", cell)); err != nil {
					select {
					case refused <- fmt.Errorf("cell %s (%s): %w", cell, url, err):
					default:
					}
				}
			}()
		}
		select {
		case err := <-refused:
			return err
		case <-ctx.Done():
			return nil
		case <-time.After(c.Poll):
		}
	}
}

// source returns the source of cell's events (at url, for its feed) and
// what closes it.
func (c *Cells) source(cell, url string) (Source, func(), error) {
	if c.JetStream != nil {
		js := &JetStreamSource{Conn: c.JetStream, Stream: relay.CellStream(c.Stream, cell), Limit: c.Limit, Wait: c.Wait}
		return js, js.Close, nil
	}
	cl, err := c.Client(url)
	if err != nil {
		return nil, nil, fmt.Errorf("cell %s at %q: %w", cell, url, err)
	}
	return &FeedSource{Client: cl, CampaignID: c.CampaignID, Cell: cell, Limit: c.Limit, Wait: c.Wait}, func() {}, nil
}
