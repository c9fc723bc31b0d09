package main

import (
	"context"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/ledger"
)

// localCacheSize bounds the campaigns whose local cell the router
// remembers (an evicted one is read again on its next request).
const localCacheSize = 65536

// localMissTTL is how long the router trusts that a campaign has no local
// key (no cell claimed it yet; or etcd did not answer): its requests go to
// the default cell meanwhile, and the next request after it reads etcd
// again.
const localMissTTL = time.Second

// localLookupTimeout bounds the etcd read of a campaign's local key on a
// request's path.
const localLookupTimeout = time.Second

// localEntry is what the router knows of one campaign's local key: the
// cell that claimed it (kept for good: a claim is never undone), or ""
// until notAfter; unsure when "" is etcd's silence, not its answer.
type localEntry struct {
	cell     string
	notAfter time.Time
	unsure   bool
}

// localCells finds the cell that defines an uncelled campaign locally,
// from its ledger.LocalKey in etcd (created by that cell's
// ledger.ClaimLocal before its admin API defined the campaign): read on a
// request for a campaign it does not know, one read at a time per
// campaign, remembered in a bounded LRU.
type localCells struct {
	ledger *ledger.Ledger
	known  *lru.Cache[string, localEntry]
	now    func() time.Time

	mu       sync.Mutex
	inFlight map[string]chan struct{}
}

func newLocalCells(l *ledger.Ledger) *localCells {
	known, _ := lru.New[string, localEntry](localCacheSize) // only a size <= 0 fails
	return &localCells{ledger: l, known: known, now: time.Now, inFlight: map[string]chan struct{}{}}
}

// cellOf returns the cell that claimed campaign, "" when none did (the
// caller uses its default cell); unsure when etcd did not answer within
// localLookupTimeout, so that "" may hide another cell's claim.
func (c *localCells) cellOf(campaign string) (cell string, unsure bool) {
	for {
		if e, ok := c.known.Get(campaign); ok && (e.cell != "" || c.now().Before(e.notAfter)) {
			return e.cell, e.unsure
		}
		c.mu.Lock()
		wait, reading := c.inFlight[campaign]
		if !reading {
			done := make(chan struct{})
			c.inFlight[campaign] = done
			c.mu.Unlock()
			e := c.read(campaign)
			c.mu.Lock()
			delete(c.inFlight, campaign)
			c.mu.Unlock()
			close(done)
			return e.cell, e.unsure
		}
		c.mu.Unlock()
		<-wait
	}
}

// read reads campaign's local key and remembers the answer.
func (c *localCells) read(campaign string) localEntry {
	ctx, cancel := context.WithTimeout(context.Background(), localLookupTimeout)
	defer cancel()
	resp, err := c.ledger.Client().Get(ctx, c.ledger.LocalKey(campaign))
	e := localEntry{notAfter: c.now().Add(localMissTTL), unsure: err != nil}
	if err == nil && len(resp.Kvs) == 1 {
		e.cell = string(resp.Kvs[0].Value)
	}
	c.known.Add(campaign, e)
	return e
}

// campaignOfPath returns the campaign a seckilld route names
// (/v1/campaigns/{c}/… or /admin/campaigns/{c}/…, or a reservation's
// /v1/reservations/{id}/… and /admin/reservations/{id}/…: the campaign
// its id names), "" for any other.
func campaignOfPath(path string) string {
	parts := strings.SplitN(strings.Trim(path, "/"), "/", 4)
	if len(parts) < 3 || (parts[0] != "v1" && parts[0] != "admin") {
		return ""
	}
	switch parts[1] {
	case "campaigns":
		return parts[2]
	case "reservations":
		if campaign, _, _, _, err := sku.ParseReservationID(parts[2]); err == nil {
			return campaign
		}
	}
	return ""
}
