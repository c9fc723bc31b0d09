package client_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/seckill/seckill/client"
)

// A batch whose resend of its 429 items gets no answer keeps what the
// first request decided: the item accepted then is returned with its
// reservation, and the item resent carries the resend's failure and its
// request_id (drawn by the client), so the caller can send it again
// rather than lose a reservation it was told about.
func TestBatchResendFailureKeepsEarlierResults(t *testing.T) {
	forEachTransport(t, func(t *testing.T) {
		s := &script{answer: func(n int, _ *http.Request) (int, map[string]string, string) {
			if n == 0 {
				return 200, nil, `{"results":[{"status":202,"body":` + accepted + `},` +
					`{"status":429,"body":{"error":"QUEUE_FULL"},"retry_after":0.05}]}`
			}
			return 0, nil, "" // the resend gets no answer at all
		}}
		ts := serve(t, s)
		c := newClient(t, client.Options{BaseURL: ts.URL, MaxAttempts: 2})
		results, err := c.ReserveBatch(context.Background(), "c", "s", []client.BatchItem{{UserID: "u1", RequestID: "r1"}, {UserID: "u2"}})
		if err != nil {
			t.Fatalf("batch: %v: the first request's answers are lost", err)
		}
		if len(results) != 2 || results[0].Reservation == nil || results[0].Reservation.ReservationID != "c~s~1~00" || results[0].Err != nil {
			t.Fatalf("results %+v: want the first item's reservation", results)
		}
		if results[1].Reservation != nil || results[1].Err == nil || results[1].RequestID == "" {
			t.Fatalf("second item %+v: want the resend's failure and its drawn request_id", results[1])
		}
		seen := s.requests()
		if len(seen) < 2 || !strings.Contains(seen[1].body, `"request_id":"`+results[1].RequestID+`"`) || strings.Contains(seen[1].body, `"r1"`) {
			t.Fatalf("requests %+v: want the second item alone resent with its request_id", seen)
		}
	})
}
