package feed

import (
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Bounds of the encoded-event cache: feedCacheEvents per SKU (a consumer
// at the tail reads one group commit a page, tens to hundreds of records),
// for the feedCacheSKUs SKUs read most recently (~600 bytes an event with
// its id and entry: at most ~40 MiB).
const (
	feedCacheEvents = 1024
	feedCacheSKUs   = 64
)

// Encoded is one durable record as the feed sends it: its event, encoded
// once and shared by every reader of the SKU, never modified once made
// (readers hold it without a lock).
type Encoded struct {
	index uint64 // log index
	id    string
	typ   string
	json  []byte // the CloudEvents JSON object; nil: not encoded yet (a type no reader asked for)
}

// Index is the record's log index.
func (e *Encoded) Index() uint64 { return e.index }

// ID is the event's id, its cursor ("<history>-<index>").
func (e *Encoded) ID() string { return e.id }

// Type is the event's type (EventType).
func (e *Encoded) Type() string { return e.typ }

// JSON is the event, one CloudEvents JSON object on one line. The caller
// must not modify it.
func (e *Encoded) JSON() []byte { return e.json }

// eventCache holds the encoded events of a SKU's newest records read, so
// that consumers that follow the same SKU (several systems at the tail)
// map and encode each record once and then copy its bytes: a page served
// from the cache reads no log file and allocates no event. A durable
// record never changes (its event is a function of it, the SKU's
// immutable fields and the history chain, part of the cache's key), so an
// entry never goes stale; only durable records are read, hence cached.
type eventCache struct {
	mu    sync.Mutex
	slots [feedCacheEvents]*Encoded // by index % feedCacheEvents
	// fill is held by the reader that reads and encodes what the cache
	// misses: the consumers woken by one group commit wait for the first
	// and then find its events cached, instead of each encoding them.
	fill sync.Mutex
}

// get returns the cached event of index, if any.
func (c *eventCache) get(index uint64) (*Encoded, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.slots[index%feedCacheEvents]
	return e, e != nil && e.index == index
}

// put caches e, unless it would replace the encoded event of the same
// index with an unencoded one.
func (c *eventCache) put(e *Encoded) {
	c.mu.Lock()
	defer c.mu.Unlock()
	slot := &c.slots[e.index%feedCacheEvents]
	if old := *slot; old != nil && old.index == e.index && old.json != nil && e.json == nil {
		return
	}
	*slot = e
}

// appendRange appends to dst the cached events of records from..to
// (inclusive) that wanted takes, under one lock. ok is false, and dst
// unchanged, unless the cache holds every record of the range, encoded
// where wanted. The range must be at most feedCacheEvents long to be found.
func (c *eventCache) appendRange(dst []*Encoded, from, to uint64, wanted func(typ string) bool) (_ []*Encoded, ok bool) {
	if to < from || to-from >= feedCacheEvents {
		return dst, false
	}
	n := len(dst)
	c.mu.Lock()
	defer c.mu.Unlock()
	for index := from; index <= to; index++ {
		e := c.slots[index%feedCacheEvents]
		if e == nil || e.index != index {
			return dst[:n], false
		}
		if !wanted(e.typ) {
			continue
		}
		if e.json == nil {
			return dst[:n], false
		}
		dst = append(dst, e)
	}
	return dst, true
}

// eventCaches are the caches of the SKUs read most recently.
type eventCaches struct {
	caches *lru.Cache[string, *eventCache]
}

func newEventCaches() *eventCaches {
	c, err := lru.New[string, *eventCache](feedCacheSKUs)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	return &eventCaches{caches: c}
}

// of returns the cache of a SKU in the history chain whose newest history
// is newest (a chain changed by a restore gets a cache of its own),
// created on first use.
func (e *eventCaches) of(campaignID, skuID, newest string) *eventCache {
	key := campaignID + "/" + skuID + "/" + newest
	if c, ok := e.caches.Get(key); ok {
		return c
	}
	c := new(eventCache)
	if prev, ok, _ := e.caches.PeekOrAdd(key, c); ok {
		return prev
	}
	return c
}

// feedChainsMax bounds the history chains kept (one per SKU folder read).
const feedChainsMax = 4096

// chainCache keeps each SKU folder's history chain (LoadHistory reads a
// file: a system call and a SHA-256 per feed request otherwise). Only
// seckillctl restore writes a chain, into a data dir no seckilld holds,
// so a chain read for a SKU's open log stays right while that log is
// open; a SKU that recovers opens a new log, and its chain is read again.
type chainCache struct {
	chains *lru.Cache[string, loadedChain]
}

// loadedChain is a chain and the log it was read for.
type loadedChain struct {
	log   Log
	chain Chain
}

func newChainCache() *chainCache {
	c, err := lru.New[string, loadedChain](feedChainsMax)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	return &chainCache{chains: c}
}

// load returns the chain of the SKU folder dir whose open log is log.
func (c *chainCache) load(dir string, log Log, idKey [16]byte) (Chain, error) {
	if l, ok := c.chains.Get(dir); ok && l.log == log {
		return l.chain, nil
	}
	chain, err := LoadHistory(dir, idKey)
	if err == nil {
		c.chains.Add(dir, loadedChain{log: log, chain: chain})
	}
	return chain, err
}
