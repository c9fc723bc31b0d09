package httpapi

import "testing"

// The cache answers only for the index it holds in a slot, and a SKU's
// cache is per history chain.
func TestEventCache(t *testing.T) {
	caches := newEventCaches()
	c := caches.of("c", "s", "h1")
	if _, ok := c.get(0); ok {
		t.Fatal("index 0 (an empty slot) found")
	}
	c.put(encodedEvent{index: 5, id: "h1-5", json: []byte(`{}`)})
	if e, ok := c.get(5); !ok || e.id != "h1-5" {
		t.Fatalf("get(5) = %+v, %v", e, ok)
	}
	if _, ok := c.get(5 + feedCacheEvents); ok {
		t.Fatal("another index of the same slot found")
	}
	c.put(encodedEvent{index: 5 + feedCacheEvents, id: "h1-x"})
	if _, ok := c.get(5); ok {
		t.Fatal("a replaced slot still answers for its old index")
	}
	if caches.of("c", "s", "h1") != c || caches.of("c", "s", "h2") == c || caches.of("c", "t", "h1") == c {
		t.Fatal("caches not per SKU and history chain")
	}
}
