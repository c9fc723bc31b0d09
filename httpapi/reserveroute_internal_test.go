package httpapi

import (
	"fmt"
	"testing"
)

func TestReservePathShapes(t *testing.T) {
	for path, want := range map[string]string{
		"/v1/campaigns/c1/skus/s1/reservations":        "c1 s1",
		"/v1/campaigns/c1/skus/s1/reservations/":       "",
		"/v1/campaigns/c1/skus/s1/reservations:batch":  "",
		"/v1/campaigns/c1/x/skus/s1/reservations":      "",
		"/v1/campaigns/c1/skus/s1/x/reservations":      "",
		"/v1/campaigns/c%31/skus/s1/reservations":      "c%31 s1", // shaped; not interned, so routed
		"/v2/campaigns/c1/skus/s1/reservations":        "",
		"/v1/campaigns/c1/skus/s1/reservations?x=1":    "",
		"/v1/campaigns//skus//reservations":            " ",
		"/v1/campaigns/c1/skus/s1/requests/r1":         "",
		"/v1/campaigns/c1/skus/s1/reservationsreserve": "",
	} {
		c, k, ok := reservePath([]byte(path))
		got := ""
		if ok {
			got = string(c) + " " + string(k)
		}
		if got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}

// The table of known reserve paths holds at most maxKnownPaths and hands
// out the same entry for a path every time.
func TestPathTableIsBounded(t *testing.T) {
	var known pathTable
	for i := range maxKnownPaths + 100 {
		known.add(fmt.Sprintf("/p%d", i), &reserveTarget{campaignID: "c", skuID: fmt.Sprint(i)})
	}
	if !known.full() || len(*known.m.Load()) != maxKnownPaths {
		t.Fatalf("%d paths known, bound %d", len(*known.m.Load()), maxKnownPaths)
	}
	a, ok1 := known.get([]byte("/p1"))
	b, ok2 := known.get([]byte("/p1"))
	if !ok1 || !ok2 || a != b || a.skuID != "1" {
		t.Fatalf("get: %v %v %v %v", a, ok1, b, ok2)
	}
	if _, ok := known.get([]byte(fmt.Sprintf("/p%d", maxKnownPaths+1))); ok {
		t.Fatal("a path beyond the bound was entered")
	}
}
