package feed

import (
	"crypto/rand"
	"testing"
)

// The cache answers only for the index it holds in a slot, and a SKU's
// cache is per history chain.
func TestEventCache(t *testing.T) {
	caches := newEventCaches()
	c := caches.of("c", "s", "h1")
	if _, ok := c.get(0); ok {
		t.Fatal("index 0 (an empty slot) found")
	}
	c.put(&Encoded{index: 5, id: "h1-5", json: []byte(`{}`)})
	if e, ok := c.get(5); !ok || e.id != "h1-5" {
		t.Fatalf("get(5) = %+v, %v", e, ok)
	}
	if _, ok := c.get(5 + feedCacheEvents); ok {
		t.Fatal("another index of the same slot found")
	}
	c.put(&Encoded{index: 5 + feedCacheEvents, id: "h1-x"})
	if _, ok := c.get(5); ok {
		t.Fatal("a replaced slot still answers for its old index")
	}
	if caches.of("c", "s", "h1") != c || caches.of("c", "s", "h2") == c || caches.of("c", "t", "h1") == c {
		t.Fatal("caches not per SKU and history chain")
	}
}

// A page comes from the cache only when every record of its range is
// there, encoded where the reader wants it; an unencoded place never
// replaces an encoded event.
func TestEventCacheRange(t *testing.T) {
	c := new(eventCache)
	all := func(string) bool { return true }
	notRejected := func(typ string) bool { return typ != eventRequestRejected }
	c.put(&Encoded{index: 1, typ: eventSKUDefined, json: []byte(`{"a":1}`)})
	c.put(&Encoded{index: 2, typ: eventRequestRejected}) // its place only
	c.put(&Encoded{index: 3, typ: eventReservationCreated, json: []byte(`{"a":3}`)})
	got, ok := c.appendRange(nil, 1, 3, notRejected)
	if !ok || len(got) != 2 || got[0].index != 1 || got[1].index != 3 {
		t.Fatalf("1..3 without rejections: %v %+v", ok, got)
	}
	if got, ok := c.appendRange(nil, 1, 3, all); ok || len(got) != 0 {
		t.Fatalf("1..3 with the unencoded rejection: %v %+v", ok, got)
	}
	if _, ok := c.appendRange(nil, 3, 4, all); ok {
		t.Fatal("a range past the cached records found")
	}
	if _, ok := c.appendRange(nil, 1, feedCacheEvents+1, notRejected); ok {
		t.Fatal("a range longer than the cache found")
	}
	c.put(&Encoded{index: 3, typ: eventReservationCreated}) // an unencoded place
	if e, _ := c.get(3); e.json == nil {
		t.Fatal("an unencoded place replaced the encoded event")
	}
	prefix := []*Encoded{{index: 9}}
	if got, ok := c.appendRange(prefix, 1, 2, all); ok || len(got) != 1 {
		t.Fatalf("a miss changed dst: %+v", got)
	}
}

// A SKU folder's chain is read once for its open log, and again for a new
// log (a SKU that recovered).
func TestChainCache(t *testing.T) {
	dir := t.TempDir()
	key := [16]byte{4}
	c := newChainCache()
	first, second := NewMemLog(), NewMemLog()
	root, err := c.load(dir, first, key)
	if err != nil || len(root.Forks) != 0 {
		t.Fatalf("%+v %v", root, err)
	}
	forked, err := root.Fork(7, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := forked.Write(dir); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.load(dir, first, key); len(got.Forks) != 0 {
		t.Fatal("the same log's chain was read again")
	}
	if got, _ := c.load(dir, second, key); len(got.Forks) != 1 || got.At(8) != forked.At(8) {
		t.Fatalf("a new log's chain: %+v", got)
	}
}
