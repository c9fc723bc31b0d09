package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/seckill/seckill/client"
)

// A replica's 421 NOT_PRIMARY that names no primary (a failover in
// progress) carries Retry-After: nothing was applied, and the same
// address is asked again after it, as a 503 would be (docs/ha.md). One
// that names no primary and carries no Retry-After is the answer.
func TestNotPrimaryWithoutPrimaryWaitsItsRetryAfter(t *testing.T) {
	forEachTransport(t, func(t *testing.T) {
		noPrimary := `{"error":"NOT_PRIMARY","detail":"this replica of rs1 is not its primary, and no primary is known yet: retry","replica_set":"rs1"}`
		s := &script{answer: func(n int, _ *http.Request) (int, map[string]string, string) {
			if n == 0 {
				return 421, map[string]string{"Retry-After": "0.2"}, noPrimary
			}
			return 202, nil, accepted
		}}
		ts := serve(t, s)
		r, err := newClient(t, client.Options{BaseURL: ts.URL}).Reserve(context.Background(), click)
		if err != nil || r.ReservationID != "c~s~1~00" {
			t.Fatalf("reserve: %v %v", r, err)
		}
		seen := s.requests()
		if len(seen) != 2 || seen[1].body != seen[0].body {
			t.Fatalf("requests %+v: want the same reserve twice", seen)
		}
		if gap := seen[1].at.Sub(seen[0].at); gap < 200*time.Millisecond {
			t.Fatalf("sent again %v after a Retry-After of 0.2 s", gap)
		}
		// Without Retry-After the 421 is the answer.
		once := &script{answer: func(int, *http.Request) (int, map[string]string, string) { return 421, nil, noPrimary }}
		_, err = newClient(t, client.Options{BaseURL: serve(t, once).URL}).Reserve(context.Background(), click)
		var e *client.Error
		if !errors.As(err, &e) || e.Code != "NOT_PRIMARY" || len(once.requests()) != 1 {
			t.Fatalf("421 without Retry-After: %v after %d requests", err, len(once.requests()))
		}
	})
}
