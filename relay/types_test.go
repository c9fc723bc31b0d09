package relay_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/internal/natstest"
	"github.com/seckill/seckill/relay"
)

// afterSeen records the after= of every feed request a relay sends: the
// cursor it has read the feed to.
type afterSeen struct {
	mu    sync.Mutex
	after map[string]bool
}

func (a *afterSeen) RoundTrip(req *http.Request) (*http.Response, error) {
	a.mu.Lock()
	a.after[req.URL.Query().Get("after")] = true
	a.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// sawPast reports whether the relay asked the feed for what follows a
// campaign cursor at or past end: every position of end, in the same
// history, at an index no lower.
func (a *afterSeen) sawPast(t *testing.T, end string) bool {
	t.Helper()
	want, err := feed.ParseCampaignCursor(end)
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for after := range a.after {
		got, err := feed.ParseCampaignCursor(after)
		if err != nil {
			continue
		}
		past := true
		for h, id := range want {
			past = past && got[h] != "" && eventIndex(t, got[h]) >= eventIndex(t, id)
		}
		if past {
			return true
		}
	}
	return false
}

// eventIndex is the log index of an event id, <history>-<index>.
func eventIndex(t *testing.T, id string) uint64 {
	t.Helper()
	_, index, ok := strings.Cut(id, "-")
	n, err := strconv.ParseUint(index, 10, 64)
	if !ok || err != nil {
		t.Fatalf("event id %q: want <history>-<index>", id)
	}
	return n
}

// reserveOnly makes reservations on campaign rl (load defined it) and
// nothing else: records a relay of payments leaves out.
func reserveOnly(t *testing.T, base string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		s := []string{"a.1", "b"}[i%2]
		do(t, http.MethodPost, base+"/v1/campaigns/rl/skus/"+s+"/reservations", map[string]string{"request_id": fmt.Sprint("r", i), "user_id": fmt.Sprint("u", i)}, false)
	}
}

// paidEvents reads the campaign's retained feed of payments: the last
// payment of each SKU (by source: its id and log index), and the feed's
// cursor at its end.
func paidEvents(t *testing.T, base string) (last map[string]map[string]any, end string) {
	t.Helper()
	last = map[string]map[string]any{}
	for {
		page := do(t, http.MethodGet, base+"/admin/campaigns/rl/events?limit=1000&types=seckill.reservation.paid&after="+end, nil, true)
		for _, e := range page["events"].([]any) {
			e := e.(map[string]any)
			last[e["source"].(string)] = e
		}
		if page["next_cursor"] == end {
			return last, end
		}
		end = page["next_cursor"].(string)
	}
}

// truncatedPast makes reservations until snapshots have truncated each
// SKU's log past its record at last[source] (and the record after it),
// calling between (when not nil) after each twenty.
func truncatedPast(t *testing.T, base string, last map[string]map[string]any, from int, between func()) int {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; from += 20 {
		reserveOnly(t, base, from, from+20)
		if between != nil {
			between()
		}
		passed := true
		for _, s := range []string{"a.1", "b"} {
			first := do(t, http.MethodGet, base+"/admin/campaigns/rl/skus/"+s+"/events?limit=1", nil, true)["first_index"].(float64)
			if e := last["/seckill/rl/"+s]; e != nil {
				passed = passed && first > e["seckillindex"].(float64)+1
			}
		}
		if passed {
			return from + 20
		}
		if time.Now().After(deadline) {
			t.Fatal("the logs were not truncated past the payments within a minute")
		}
	}
}

// A relay of chosen types (--types) reads past the records it leaves out
// without publishing anything. Once snapshots truncated them, a relay
// started again on its stream goes on after them: nothing it relays is
// gone. It still stops, on the feed's 410, when a record of a type it
// relays was truncated before it read it.
func TestRelayOfChosenTypesGoesOnPastTruncatedRecordsItLeavesOut(t *testing.T) {
	nc := natstest.Start(t)
	// The newest 30 records stay (feed retention): the records of one
	// batch of truncatedPast (20) are truncated only after the next batch
	// began, when readToEnd has seen the relay read past them. Without
	// that slack a relay slowed by a loaded machine could fall behind
	// the truncation within one batch and stop on the 410, a case this
	// test keeps for its end.
	base := startTruncating(t, 30)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	seen := &afterSeen{after: map[string]bool{}}
	rcfg := relay.Config{FeedURL: base, AdminToken: token, CampaignID: "rl", Types: []string{"seckill.reservation.paid"},
		Wait: time.Second, RetryAfter: 10 * time.Millisecond, Logger: quiet, HTTPClient: &http.Client{Transport: seen}}
	var sink *relay.NATSSink
	start := func() (stop context.CancelFunc, done <-chan error) {
		if sink, err = relay.NewNATSSink(nc, "SECKILL_PAID", "rl"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		ch := make(chan error, 1)
		go func() { ch <- relay.Run(ctx, rcfg, sink) }()
		return cancel, ch
	}
	// holds waits until the stream holds the feed's last payment of each
	// SKU whose log still holds one (snapshots may truncate a SKU's past
	// its last payment before the test reads the feed, not before the
	// relay does: it would stop on the 410).
	holds := func(done <-chan error) {
		t.Helper()
		last, _ := paidEvents(t, base)
		if len(last) == 0 {
			t.Fatal("the feed holds no payment any more")
		}
		want := map[string]string{}
		for source, e := range last {
			want[sink.Subject(strings.TrimPrefix(source, "/seckill/rl/"), "seckill.reservation.paid")] = e["id"].(string)
		}
		waitStored(t, js, "SECKILL_PAID", want, done)
	}

	load(t, base, 0, 10) // a payment on each SKU among other records
	stop, done := start()
	holds(done)
	last, _ := paidEvents(t, base)
	// readToEnd waits until the relay has read the feed to its end as it
	// is now: the records it leaves out are truncated only once it read
	// past them, as a relay that keeps up with the sale does (one that
	// falls behind truncation stops on the 410, the case at the end).
	readToEnd := func() {
		t.Helper()
		_, end := paidEvents(t, base)
		for deadline := time.Now().Add(time.Minute); !seen.sawPast(t, end); {
			select {
			case err := <-done:
				t.Fatalf("the relay stopped before it read the feed to its end: %v", err)
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatal("the relay did not read the feed to its end within a minute")
			}
		}
	}
	next := truncatedPast(t, base, last, 10, readToEnd) // records the relay leaves out, then snapshots truncate past every payment
	readToEnd()
	if stop(); !errors.Is(<-done, context.Canceled) {
		t.Fatal("the relay did not stop on its context")
	}

	stop, done = start()
	load(t, base, next, next+10) // more payments
	holds(done)
	if stop(); !errors.Is(<-done, context.Canceled) {
		t.Fatal("the relay started again did not stop on its context")
	}

	// Payments truncated while no relay ran: the relay stops with the
	// feed's refusal, its first_index.
	load(t, base, next+10, next+20)
	last, _ = paidEvents(t, base)
	truncatedPast(t, base, last, next+20, nil)
	_, done = start()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("a relay whose payments were truncated before it read them did not stop within a minute")
	}
	var refused *relay.FeedError
	if !errors.As(err, &refused) || !errors.Is(err, client.ErrCursorCompacted) || refused.Refusal.FirstIndex == 0 ||
		!strings.Contains(err.Error(), "truncated them before the relay read them") {
		t.Fatalf("a relay whose payments were truncated before it read them returned %v, want the feed's 410 saying so", err)
	}
	t.Logf("%v", err)
}

// The NATS sink resumes from the progress Advance recorded until a
// message is stored after it; a message stored by another relay since
// (the stream's last sequence moved) makes the progress stale too, and a
// relay records no progress over the one another relay recorded since it
// resumed. A stream deleted and created again under the same name does
// not resume from the progress of the one deleted.
func TestNATSSinkResumesFromItsProgressUntilAMessageFollows(t *testing.T) {
	nc := natstest.Start(t)
	ctx := context.Background()
	newSink := func(name, campaign string) *relay.NATSSink {
		t.Helper()
		s, err := relay.NewNATSSink(nc, name, campaign)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	resume := func(s *relay.NATSSink, want string) {
		t.Helper()
		if got, err := s.Resume(ctx); err != nil || got != want {
			t.Fatalf("Resume = %q, %v; want %q", got, err, want)
		}
	}
	advance := func(s *relay.NATSSink, cursor string) {
		t.Helper()
		if err := s.Advance(ctx, cursor); err != nil {
			t.Fatal(err)
		}
	}
	msg := func(index uint64, cursor string) relay.Message {
		id := fmt.Sprintf("00000000000000aa-%d", index)
		return relay.Message{ID: id, Type: "seckill.reservation.paid", SKUID: "s", Index: index, Cursor: cursor,
			Event: []byte(`{"id":"` + id + `"}`)}
	}
	sink := newSink("SECKILL_PROGRESS", "rl")
	resume(sink, "")
	if err := sink.Open(ctx); err != nil {
		t.Fatal(err)
	}
	advance(sink, "progress-0")
	resume(sink, "progress-0")
	if err := sink.Publish(ctx, []relay.Message{msg(3, "cursor-3")}); err != nil {
		t.Fatal(err)
	}
	resume(sink, "cursor-3")
	advance(sink, "progress-9")
	resume(sink, "progress-9")

	other := newSink("SECKILL_PROGRESS", "rl")
	resume(other, "progress-9")
	if err := other.Publish(ctx, []relay.Message{msg(12, "cursor-12")}); err != nil {
		t.Fatal(err)
	}
	advance(sink, "progress-10") // recorded at the sequence sink knew
	resume(sink, "cursor-12")
	resume(other, "cursor-12")
	advance(other, "progress-13")
	if err := sink.Advance(ctx, "progress-11"); !errors.Is(err, relay.ErrSinkMoved) {
		t.Fatalf("Advance over the progress another relay recorded since Resume = %v, want ErrSinkMoved", err)
	}
	resume(sink, "progress-13")

	// Recorded on an empty stream (last sequence 0), then the stream is
	// deleted and created again: empty too, but another stream.
	again := newSink("SECKILL_AGAIN", "again")
	resume(again, "")
	if err := again.Open(ctx); err != nil {
		t.Fatal(err)
	}
	advance(again, "progress-of-the-deleted-stream")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, "SECKILL_AGAIN"); err != nil {
		t.Fatal(err)
	}
	again = newSink("SECKILL_AGAIN", "again")
	resume(again, "")
	if err := again.Open(ctx); err != nil {
		t.Fatal(err)
	}
	resume(again, "")
	advance(again, "progress-of-the-new-stream")
	resume(again, "progress-of-the-new-stream")
}

// A stream whose config metadata holds a progress (MetadataProgress) and
// whose key the bucket lacks resumes from it once: the sink records its
// progress in the bucket and leaves the stream's config as it is.
func TestNATSSinkReadsAProgressInTheStreamMetadataWhileTheBucketHasNone(t *testing.T) {
	nc := natstest.Start(t)
	ctx := context.Background()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := relay.NewNATSSink(nc, "SECKILL_META", "rl")
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Open(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := jetstream.StreamConfig{Name: "SECKILL_META", Subjects: []string{"seckill.rl.>"}, Storage: jetstream.FileStorage,
		Metadata: map[string]string{relay.MetadataProgress: "0 progress-in-metadata"}}
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if got, err := sink.Resume(ctx); err != nil || got != "progress-in-metadata" {
		t.Fatalf("Resume = %q, %v; want the metadata's progress", got, err)
	}
	if err := sink.Advance(ctx, "progress-in-bucket"); err != nil {
		t.Fatal(err)
	}
	if got, err := sink.Resume(ctx); err != nil || got != "progress-in-bucket" {
		t.Fatalf("Resume = %q, %v; want the bucket's progress", got, err)
	}
	st, err := js.Stream(ctx, "SECKILL_META")
	if err != nil {
		t.Fatal(err)
	}
	if got := st.CachedInfo().Config.Metadata[relay.MetadataProgress]; got != "0 progress-in-metadata" {
		t.Fatalf("the stream's metadata holds %q, want it as the operator left it", got)
	}
}

// An operator changes the stream's config (max_age) again and again while
// a relay of chosen types records its progress past records it leaves
// out: every change is kept, and the relay changes nothing of the
// stream's config; its progress is in ProgressBucket.
func TestRelayProgressLeavesTheStreamConfigToTheOperator(t *testing.T) {
	nc := natstest.Start(t)
	base := startSeckill(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := relay.NewNATSSink(nc, "SECKILL_OPERATED", "rl")
	if err != nil {
		t.Fatal(err)
	}
	load(t, base, 0, 2) // defines the campaign; a payment the relay stores
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	done := make(chan error, 1)
	go func() {
		done <- relay.Run(ctx, relay.Config{FeedURL: base, AdminToken: token, CampaignID: "rl", Types: []string{"seckill.reservation.paid"},
			Wait: 100 * time.Millisecond, RetryAfter: 10 * time.Millisecond, Logger: quiet}, sink)
	}()
	var cfg jetstream.StreamConfig
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if st, err := js.Stream(ctx, "SECKILL_OPERATED"); err == nil && st.CachedInfo().State.Msgs > 0 {
			cfg = st.CachedInfo().Config
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the relay did not store the payment within a minute")
		}
	}
	// The operator's changes, each made on the config as it reads it,
	// while reservations (left out) pass: until the relay recorded its
	// progress three times.
	revision := func() uint64 {
		kv, err := js.KeyValue(ctx, relay.ProgressBucket)
		if err != nil {
			return 0
		}
		e, err := kv.Get(ctx, relay.ProgressKey("SECKILL_OPERATED"))
		if err != nil {
			return 0
		}
		return e.Revision()
	}
	changes := 0
	for deadline := time.Now().Add(time.Minute); revision() < 3; {
		reserveOnly(t, base, 100+changes, 101+changes)
		st, err := js.Stream(ctx, "SECKILL_OPERATED")
		if err != nil {
			t.Fatal(err)
		}
		cfg = st.CachedInfo().Config
		changes++
		cfg.MaxAge = time.Duration(changes) * time.Hour
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the relay did not record its progress three times within a minute")
		}
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the relay returned %v, want it stopped on its context", err)
	}
	st, err := js.Stream(context.Background(), "SECKILL_OPERATED")
	if err != nil {
		t.Fatal(err)
	}
	got := st.CachedInfo().Config
	if got.MaxAge != cfg.MaxAge || got.Metadata[relay.MetadataProgress] != "" {
		t.Fatalf("after %d changes of max_age the stream has max_age %v and metadata %v; want the operator's last, %v, and no progress of the relay",
			changes, got.MaxAge, got.Metadata, cfg.MaxAge)
	}
}
