package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
	"github.com/seckill/seckill/internal/testbin"
)

// buildConsumer compiles testdata/feedconsumer (testbin).
func buildConsumer(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, "./testdata/feedconsumer")
}

// mix runs reserve, pay and cancel (and, with a short payment window,
// expiry) on one SKU from workers goroutines until stop is closed, and
// returns the reservation ids of every 202 seen.
func mix(base, campaignID, skuID, prefix string, workers int, stop <-chan struct{}, count *atomic.Int64) []string {
	var mu sync.Mutex
	var ids []string
	untilStopped(workers, stop, func(w, i int) bool {
		r, err := tryReserve(base, campaignID, skuID, fmt.Sprintf("%s-%d-%d", prefix, w, i), fmt.Sprintf("%s-u%d-%d", prefix, w, i))
		if err != nil {
			return false // the server went away
		}
		if r.status != http.StatusAccepted {
			return true
		}
		id := r.str("reservation_id")
		mu.Lock()
		ids = append(ids, id)
		mu.Unlock()
		count.Add(1)
		switch i % 3 {
		case 0:
			try(http.MethodPost, base+"/v1/reservations/"+id+"/payment", map[string]any{"payment_id": fmt.Sprintf("p-%d-%d", w, i), "amount": 1}, nil)
		case 1:
			try(http.MethodPost, base+"/v1/reservations/"+id+"/cancel", nil, nil)
		} // else: it expires
		return true
	})
	return ids
}

// allEvents reads a SKU's whole feed: id -> event JSON.
func allEvents(t *testing.T, base, feed string) (ids []string, events map[string]feedEvent) {
	t.Helper()
	events = map[string]feedEvent{}
	cursor := ""
	for {
		r := call(t, http.MethodGet, base+feed+"?limit=1000&after="+cursor, nil, map[string]string{"Authorization": "Bearer " + testToken})
		var p feedPage
		if r.status != http.StatusOK || json.Unmarshal(r.raw, &p) != nil {
			t.Fatalf("feed: %v", r)
		}
		for _, e := range p.Events {
			ids = append(ids, e.ID)
			events[e.ID] = e
		}
		if len(p.Events) == 0 {
			return ids, events
		}
		cursor = p.NextCursor
	}
}

// A consumer killed with SIGKILL at random points, resumed from its saved
// cursor each time, ends with every event exactly once by id (after
// dedupe), each id with one payload, and a reservation.created event for
// every 202 the load saw.
func TestFeedConsumerKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a consumer process")
	}
	bin := buildConsumer(t)
	ts := startServer(t, serverOptions{})
	ts.define(campaign("kc", "1s", map[string]int{"s": 1_000_000}))
	feed := feedPath("kc", "s", "")
	dir := t.TempDir()
	args := []string{"-base", ts.base, "-token", testToken, "-feed", feed, "-dir", dir}

	var count atomic.Int64
	stop := make(chan struct{})
	seen := make(chan []string)
	go func() { seen <- mix(ts.base, "kc", "s", "k", 4, stop, &count) }()
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 12))
	t.Logf("seed %d", seed)
	kills := 0
	for ; kills < 8; kills++ {
		c := exec.Command(bin, args...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		// A random point of its loop: the kill's time is the test's input.
		time.Sleep(time.Duration(20+rng.IntN(250)) * time.Millisecond)
		c.Process.Kill()
		c.Wait()
	}
	close(stop)
	accepted := <-seen
	// Let every unpaid reservation expire, so the log stops growing.
	eventually(t, 30*time.Second, "expiries", func() bool {
		st, _ := ts.engine.SKUStats("kc", "s")
		return st.Counts.PendingPayment == 0
	})
	if out, err := exec.Command(bin, append(args, "-exit-at-end")...).CombinedOutput(); err != nil {
		t.Fatalf("the last consumer run: %v\n%s", err, out)
	}

	ids, events := allEvents(t, ts.base, feed)
	log, err := os.Open(filepath.Join(dir, "events.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	payload := map[string]string{}
	lines, repeats := 0, 0
	sc := bufio.NewScanner(log)
	for sc.Scan() {
		id, sum, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("torn line %q", sc.Text()) // a kill between two writes of one line
		}
		lines++
		if prev, dup := payload[id]; dup {
			repeats++
			if prev != sum {
				t.Fatalf("event %s seen with two payloads", id)
			}
			continue
		}
		payload[id] = sum
	}
	if len(payload) != len(ids) {
		t.Fatalf("the consumer has %d distinct events, the feed %d", len(payload), len(ids))
	}
	created := map[string]bool{}
	types := map[string]int{}
	for _, id := range ids {
		if _, ok := payload[id]; !ok {
			t.Fatalf("event %s never reached the consumer", id)
		}
		types[events[id].Type]++
		if events[id].Type == "seckill.reservation.created" {
			created[events[id].Subject] = true
		}
	}
	for _, id := range accepted {
		if !created[id] {
			t.Fatalf("the 202 of %s has no reservation.created event", id)
		}
	}
	if types["seckill.reservation.paid"] == 0 || types["seckill.reservation.closed"] == 0 {
		t.Fatalf("the mix made no payment or close: %v", types)
	}
	t.Logf("%d kills, %d events (%v), %d lines, %d repeats, %d 202s", kills, len(ids), types, lines, repeats, len(accepted))
}

// seckilld killed with SIGKILL while an SSE client streams: the client
// resumes on the restarted server with Last-Event-ID and misses nothing.
func TestFeedSSEAcrossServerKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the seckilld binary")
	}
	bin := seckilldtest.Build(t, raceEnabled)
	dir := t.TempDir()
	d := startDaemon(t, bin, dir)
	feed := feedPath("demo", "sku-1", "")

	var count atomic.Int64
	stop := make(chan struct{})
	seen := make(chan []accepted)
	go func() { seen <- load(d.Base, "sse", 4, stop, &count) }()
	var got []string
	var streamed atomic.Int64 // len(got), for the killer
	lastID := ""
	stream := func(base string, until func() bool) error {
		req, _ := http.NewRequest(http.MethodGet, base+feed, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Accept", "text/event-stream")
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for !until() && sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				got = append(got, id)
				streamed.Add(1)
				lastID = id
			}
		}
		return sc.Err()
	}
	// Stream until 100 events, kill the server while it keeps streaming
	// (and the load goes on).
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		for deadline := time.Now().Add(2 * time.Minute); count.Load() < 200 || streamed.Load() < 100; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("after 2 minutes: %d reserves accepted, %d events streamed", count.Load(), streamed.Load())
				break
			}
		}
		d.Cmd.Process.Kill()
	}()
	stream(d.Base, func() bool {
		select {
		case <-killed:
			return true
		default:
			return false
		}
	})
	<-d.Exited
	close(stop)
	accepted := <-seen
	if len(got) == 0 {
		t.Fatal("no event streamed before the kill")
	}

	d = startDaemon(t, bin, dir)
	ids, events := allEvents(t, d.Base, feed)
	if err := stream(d.Base, func() bool { return len(got) > 0 && lastID == ids[len(ids)-1] }); err != nil {
		t.Fatalf("resumed stream: %v", err)
	}
	if strings.Join(got, ",") != strings.Join(ids, ",") {
		t.Fatalf("streamed %d events across the kill, the log holds %d (or in another order)", len(got), len(ids))
	}
	created := map[string]bool{}
	for _, e := range events {
		if e.Type == "seckill.reservation.created" {
			created[e.Subject] = true
		}
	}
	for _, a := range accepted {
		if !created[a.reservationID] {
			t.Fatalf("the 202 of %s has no reservation.created event", a.reservationID)
		}
	}
	t.Logf("%d events streamed across a SIGKILL, %d 202s", len(got), len(accepted))
}
