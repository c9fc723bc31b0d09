package httpapi

import (
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Bounds of the encoded-event cache: feedCacheEvents per SKU, for the
// feedCacheSKUs SKUs read most recently (~500 bytes an event: at most
// ~32 MiB).
const (
	feedCacheEvents = 512
	feedCacheSKUs   = 128
)

// encodedEvent is one event as the feed sends it.
type encodedEvent struct {
	index uint64 // log index; 0: an empty slot
	id    string
	typ   string
	json  []byte // the CloudEvents JSON object, never modified once cached
}

// eventCache holds the encoded events of a SKU's newest records read, so
// that consumers that follow the same SKU (several systems at the tail)
// map and encode each record once. A durable record never changes (its
// event is a function of it, the SKU's immutable fields and the history
// chain, part of the cache's key), so an entry never goes stale; only
// durable records are read, hence cached.
type eventCache struct {
	mu    sync.Mutex
	slots [feedCacheEvents]encodedEvent // by index % feedCacheEvents
}

// get returns the cached event of index, if any.
func (c *eventCache) get(index uint64) (encodedEvent, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.slots[index%feedCacheEvents]
	return e, e.index == index && index != 0
}

// put caches e.
func (c *eventCache) put(e encodedEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slots[e.index%feedCacheEvents] = e
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
