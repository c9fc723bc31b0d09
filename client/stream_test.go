package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/seckill/seckill/client"
)

// A stream reopened after a drop resumes after the last id the stream
// sent, an id: alone included (the feed sends one past the records its
// types leave out), not after the last event handled: those records are
// not read again, nor met as CURSOR_COMPACTED once truncated.
func TestStreamResumesAfterAnIDAlone(t *testing.T) {
	resumed := make(chan string, 1)
	s := &script{answer: func(n int, r *http.Request) (int, map[string]string, string) {
		sse := map[string]string{"Content-Type": "text/event-stream"}
		if n == 0 { // an event, an id: alone, then the stream drops
			return 200, sse, "retry: 1000\n\nid: 0123456789abcdef-1\nevent: seckill.sku.defined\n" +
				`data: {"id":"0123456789abcdef-1","type":"seckill.sku.defined","source":"/seckill/c/s","seckillindex":1}` + "\n\n" +
				"id: 0123456789abcdef-9\n\n: ping\n\n"
		}
		select {
		case resumed <- r.Header.Get("Last-Event-ID"):
		default:
		}
		return 200, sse, "id: 0123456789abcdef-10\nevent: seckill.sku.paused\n" +
			`data: {"id":"0123456789abcdef-10","type":"seckill.sku.paused","source":"/seckill/c/s","seckillindex":10}` + "\n\n"
	}}
	ts := serve(t, s)
	c, err := client.New(client.Options{BaseURL: ts.URL, AdminToken: "t"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := errors.New("done")
	var handled []string
	err = c.Stream(ctx, client.FeedRequest{CampaignID: "c", SKUID: "s"}, func(e client.Event, cursor string) error {
		handled = append(handled, cursor)
		if len(handled) == 2 {
			return done
		}
		return nil
	})
	if err != done {
		t.Fatalf("stream: %v (handled %v)", err, handled)
	}
	if got := <-resumed; got != "0123456789abcdef-9" {
		t.Fatalf("reopened with Last-Event-ID %q, want the id sent alone, 0123456789abcdef-9", got)
	}
}
