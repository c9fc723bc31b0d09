package httpapi

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestFlightsAgainstMap checks the flights against a map of the keys in
// flight, over keys that all fall in one shard, more of them than its
// slots, some pairs with one hash (a user on two SKUs): join, finish and
// busy, in any order.
func TestFlightsAgainstMap(t *testing.T) {
	var keys []dedupKey
	for i := 0; len(keys) < 3*flightSlots; i++ {
		if k := userKey("c", "s1", fmt.Sprintf("u%d", i)); shardOf(k) == 0 {
			keys = append(keys, k, userKey("c", "s2", k.id)) // one hash
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		f := newFlights()
		leaders := map[dedupKey]*flight{}
		for i := range rapid.IntRange(1, 200).Draw(t, "steps") {
			key := rapid.SampledFrom(keys).Draw(t, "key")
			want, inFlight := leaders[key]
			if busy := f.busy(key); busy != inFlight {
				t.Fatalf("step %d: busy(%s/%s) = %v, want %v", i, key.skuID, key.id, busy, inFlight)
			}
			switch {
			case inFlight && rapid.Bool().Draw(t, "finish"):
				f.finish(key, want, reply{}, false)
				delete(leaders, key)
			case inFlight:
				if fl, leader := f.join(key, "r"); leader || fl != want {
					t.Fatalf("step %d: join(%s/%s) led a new flight, want to follow", i, key.skuID, key.id)
				}
			default:
				fl, leader := f.join(key, "r")
				if !leader || fl.key != key {
					t.Fatalf("step %d: join(%s/%s) followed, want a new flight", i, key.skuID, key.id)
				}
				leaders[key] = fl
			}
		}
	})
}
