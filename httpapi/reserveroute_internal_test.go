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

// The intern table holds at most maxInterned ids and hands out the same
// boxed value for an id every time.
func TestIdInternIsBounded(t *testing.T) {
	var in idIntern
	for i := range maxInterned + 100 {
		in.add(fmt.Sprintf("id%d", i))
	}
	if !in.full() || len(*in.m.Load()) != maxInterned {
		t.Fatalf("%d ids interned, bound %d", len(*in.m.Load()), maxInterned)
	}
	a, ok1 := in.get([]byte("id1"))
	b, ok2 := in.get([]byte("id1"))
	if !ok1 || !ok2 || a != b || a.(string) != "id1" {
		t.Fatalf("get: %v %v %v %v", a, ok1, b, ok2)
	}
	if _, ok := in.get([]byte(fmt.Sprintf("id%d", maxInterned+1))); ok {
		t.Fatal("an id beyond the bound was interned")
	}
}
