package httpapi

import (
	"hash/maphash"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Per-user dedup: a crowd clicks again while it waits, so repeat clicks are folded into the
// original request instead of reaching the actor again.
//
//   - flights: one reserve per (campaign, SKU, user) goes to the engine at a
//     time. A request with the same request_id shares that call's answer
//     when it is final for the request_id (Server.lead), else asks again; a
//     request with another request_id waits for it and then asks the
//     engine, which answers ALREADY_PURCHASED if the first one won.
//   - answers: the SOLD_OUT answers the engine made durable for their
//     request_ids, in a bounded LRU: they never change, and their repeats
//     come in floods. The engine stays the authority: a miss simply asks
//     it (ACCEPTED is answered from its request index, see reserveReply).
//
// The cache also remembers request_ids whose answer was RESULT_UNKNOWN, so
// that their retry goes to the engine instead of a fast path that could
// contradict a reservation made after all.

// dedupShards spreads the locks of both tables.
const dedupShards = 32

var dedupSeed = maphash.MakeSeed()

// dedupKey names a request_id (requestKey) or a user (userKey) within its
// SKU: a struct of the ids the request carries, so that naming one costs
// no allocation (a concatenated string key cost one per key, two per
// reserve), with the hash of its id, taken once when it is named: both
// tables are keyed by that hash (and spread over their shards by it), so
// a reserve's five table operations hash no string again. Keys of two
// SKUs with the same id share a hash: a table compares the whole key.
type dedupKey struct {
	campaignID, skuID, id string
	hash                  uint64 // maphash of id
}

// shardOf spreads keys by their request_id or user_id: the campaign and
// SKU ids are the same for most of a flood.
func shardOf(key dedupKey) int {
	return int(key.hash % dedupShards)
}

// requestKey names a request_id within its SKU.
func requestKey(campaignID, skuID, requestID string) dedupKey {
	return dedupKey{campaignID, skuID, requestID, maphash.String(dedupSeed, requestID)}
}

// userKey names a user within a SKU.
func userKey(campaignID, skuID, userID string) dedupKey {
	return dedupKey{campaignID, skuID, userID, maphash.String(dedupSeed, userID)}
}

// owned returns k naming id, k's id's own copy: the same text, so the
// same hash (doorPassed.own).
func (k dedupKey) owned(id string) dedupKey {
	k.id = id
	return k
}

// cachedAnswer is what the cache knows about one request_id.
type cachedAnswer struct {
	key    dedupKey // the request_id it answers (another may share its hash)
	userID string
	// unknown: the engine did not answer in time; rep is not set.
	unknown bool
	rep     reply
}

// answerCache is a sharded LRU of request_id answers, keyed by the key's
// hash: of two keys with one hash (the same request_id on two SKUs) the
// later evicts the earlier. Its size is bounded by Config.DedupCacheSize
// entries in all (each shard holds its share). It holds each answer by
// pointer, never changed once stored: a lookup, done by every reserve and
// mostly a miss, copies a pointer, not the answer.
type answerCache struct {
	shards [dedupShards]struct {
		mu  sync.Mutex
		lru *simplelru.LRU[uint64, *cachedAnswer]
	}
}

func newAnswerCache(size int) *answerCache {
	per := size / dedupShards
	if per < 1 {
		per = 1
	}
	c := &answerCache{}
	for i := range c.shards {
		l, err := simplelru.NewLRU[uint64, *cachedAnswer](per, nil)
		if err != nil {
			panic(err) // only for size <= 0, excluded above
		}
		c.shards[i].lru = l
	}
	return c
}

// get returns the answer cached for key. A hit does not move the entry
// (Peek, not Get): the flood of repeats of one answer costs no list
// update under the shard lock, and entries leave in the order they came
// (the engine answers a request_id whose entry left, and it is cached
// again).
func (c *answerCache) get(key dedupKey) (*cachedAnswer, bool) {
	sh := &c.shards[shardOf(key)]
	sh.mu.Lock()
	a, ok := sh.lru.Peek(key.hash)
	sh.mu.Unlock()
	if !ok || a.key != key {
		return nil, false
	}
	return a, true
}

// putFinal stores a final answer; it replaces an unknown mark.
func (c *answerCache) putFinal(key dedupKey, userID string, rep reply) {
	sh := &c.shards[shardOf(key)]
	sh.mu.Lock()
	sh.lru.Add(key.hash, &cachedAnswer{key: key, userID: userID, rep: rep})
	sh.mu.Unlock()
}

// markUnknown remembers that key got RESULT_UNKNOWN, unless a final answer
// is already there.
func (c *answerCache) markUnknown(key dedupKey, userID string) {
	sh := &c.shards[shardOf(key)]
	sh.mu.Lock()
	if a, ok := sh.lru.Peek(key.hash); !ok || a.key != key || a.unknown {
		sh.lru.Add(key.hash, &cachedAnswer{key: key, userID: userID, unknown: true})
	}
	sh.mu.Unlock()
}

// len returns the number of entries (for tests and metrics).
func (c *answerCache) len() int {
	n := 0
	for i := range c.shards {
		c.shards[i].mu.Lock()
		n += c.shards[i].lru.Len()
		c.shards[i].mu.Unlock()
	}
	return n
}

// flight is one reserve in progress for a user. rep is written once,
// before done is closed. done is made by the first follower (most flights
// have none), under the shard lock, like every read of it.
type flight struct {
	key       dedupKey // the user's
	next      *flight  // another flight whose key has the same hash
	requestID string
	done      chan struct{}
	rep       reply
	shared    bool // rep may answer a repeat of requestID (Server.lead)
}

// flights holds the reserve in progress per (campaign, SKU, user). It holds
// at most one entry per request being served, so it is bounded by the
// server's connection limit.
type flights struct {
	shards [dedupShards]flightShard
}

// flightShard is one lock's share of the flights: the chains of flights
// by key hash (through next), the first flightSlots of them in the shard's
// own slots, beside its lock, and any more in a map. A shard holds its
// share of the requests in flight: at 64 connections two at a time on
// average, so the slots nearly always suffice, and a join or finish
// reads no memory but the shard's two cache lines (a Go map's header,
// directory, table and group are four more, written from every core,
// most of them a cache miss).
type flightShard struct {
	mu sync.Mutex
	// free holds flights no follower saw (finish), a list through next,
	// for join to reuse: most flights, so a reserve that reaches the
	// engine allocates none. It is taken and refilled under mu, which
	// join and finish hold anyway (a sync.Pool cost its pinning on top).
	// It holds at most as many flights as were ever in the shard at once.
	free *flight
	// heads[i] is the first flight of the chain of hash hashes[i]; nil: a
	// free slot.
	hashes [flightSlots]uint64
	heads  [flightSlots]*flight
	more   map[uint64]*flight // chains beyond the slots, by hash
	_      [8]byte            // 128 bytes: no two shards share a cache line
}

// flightSlots is the chains a shard keeps in its slots.
const flightSlots = 6

// head returns the first flight of the chain of hash h, or nil.
func (sh *flightShard) head(h uint64) *flight {
	for i := range sh.heads {
		if sh.hashes[i] == h && sh.heads[i] != nil {
			return sh.heads[i]
		}
	}
	if len(sh.more) == 0 {
		return nil
	}
	return sh.more[h]
}

// setHead makes fl the first flight of the chain of hash h; nil ends the
// chain.
func (sh *flightShard) setHead(h uint64, fl *flight) {
	free := -1
	for i := range sh.heads {
		switch {
		case sh.heads[i] == nil:
			if free < 0 {
				free = i
			}
		case sh.hashes[i] == h:
			sh.heads[i] = fl
			return
		}
	}
	if _, ok := sh.more[h]; ok {
		if fl == nil {
			delete(sh.more, h)
		} else {
			sh.more[h] = fl
		}
		return
	}
	switch {
	case fl == nil:
	case free >= 0:
		sh.hashes[free], sh.heads[free] = h, fl
	default:
		if sh.more == nil {
			sh.more = make(map[uint64]*flight)
		}
		sh.more[h] = fl
	}
}

// unlink removes fl from the chain of hash h, if it is there.
func (sh *flightShard) unlink(h uint64, fl *flight) {
	first := sh.head(h)
	if first == fl {
		sh.setHead(h, fl.next)
		return
	}
	for p := first; p != nil; p = p.next {
		if p.next == fl {
			p.next = fl.next
			return
		}
	}
}

func newFlights() *flights { return &flights{} }

// join returns the flight of key. leader is true when the caller created it
// and must end it with finish.
func (f *flights) join(key dedupKey, requestID string) (fl *flight, leader bool) {
	sh := &f.shards[shardOf(key)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	first := sh.head(key.hash)
	if fl := find(first, key); fl != nil {
		if fl.done == nil {
			fl.done = make(chan struct{})
		}
		return fl, false
	}
	if fl = sh.free; fl != nil {
		sh.free = fl.next
	} else {
		fl = new(flight)
	}
	fl.key, fl.next, fl.requestID = key, first, requestID
	sh.setHead(key.hash, fl)
	return fl, true
}

// find returns the flight of key in the chain from fl, or nil.
func find(fl *flight, key dedupKey) *flight {
	for ; fl != nil; fl = fl.next {
		if fl.key == key {
			return fl
		}
	}
	return nil
}

// busy reports whether key has a flight (a request of the user in
// progress).
func (f *flights) busy(key dedupKey) bool {
	sh := &f.shards[shardOf(key)]
	sh.mu.Lock()
	ok := find(sh.head(key.hash), key) != nil
	sh.mu.Unlock()
	return ok
}

// finish publishes the leader's answer and removes the flight.
func (f *flights) finish(key dedupKey, fl *flight, rep reply, shared bool) {
	sh := &f.shards[shardOf(key)]
	sh.mu.Lock()
	sh.unlink(key.hash, fl)
	done := fl.done
	if done == nil {
		// No follower holds fl: one makes done, under the lock, when it
		// finds fl, and none finds it once it left the map.
		*fl = flight{next: sh.free}
		sh.free = fl
		sh.mu.Unlock()
		return
	}
	fl.rep, fl.shared = rep, shared
	sh.mu.Unlock()
	close(done)
}
