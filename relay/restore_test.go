package relay_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/httpapi/httpapitest"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/relay"
)

// memorySink keeps the messages (and the progress) in memory.
type memorySink struct {
	mu       sync.Mutex
	msgs     []relay.Message
	progress string // Advance's, "" once a message is stored after it
}

func (s *memorySink) Resume(context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.progress != "":
		return s.progress, nil
	case len(s.msgs) > 0:
		return s.msgs[len(s.msgs)-1].Cursor, nil
	}
	return "", nil
}

func (s *memorySink) Open(context.Context) error { return nil }

func (s *memorySink) Publish(_ context.Context, msgs []relay.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs, s.progress = append(s.msgs, msgs...), ""
	return nil
}

func (s *memorySink) Advance(_ context.Context, cursor string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.progress = cursor
	return nil
}

func (s *memorySink) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.msgs {
		if m.ID == id {
			return true
		}
	}
	return false
}

// Each restore of a SKU to an earlier point starts a new history of its
// log; a relay that reads across it must not carry the SKU's position in
// the old history on: the cursor of the stream's last message holds one
// position per SKU however many restores the relay read across, and any
// message's at most one more for a SKU whose history forked in its page.
func TestRelayCursorAcrossRestoresHoldsOnePositionPerSKU(t *testing.T) {
	dataDir := t.TempDir()
	open := func() (e *actors.Engine, base string) {
		e, err := actors.Open(actors.Config{DataDir: dataDir, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return e, httpapitest.Serve(t, httpapi.Config{Engine: e, Feed: feed.New(e), AdminToken: token, Logger: quiet})
	}
	sink := &memorySink{}
	var chain feed.Chain
	const restores = 4
	for round := 0; ; round++ {
		e, base := open()
		load(t, base, round*20, round*20+20)
		ids := feedIDs(t, base)
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- relay.Run(ctx, relay.Config{FeedURL: base, AdminToken: token, CampaignID: "rl", Wait: time.Second, RetryAfter: 10 * time.Millisecond, Logger: quiet}, sink)
		}()
		for deadline := time.Now().Add(time.Minute); !sink.has(ids[len(ids)-1]); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the relay did not relay the feed's last event within a minute", round)
			}
		}
		if stop(); !errors.Is(<-done, context.Canceled) {
			t.Fatalf("round %d: the relay did not stop on its context", round)
		}
		sink.mu.Lock()
		for _, m := range sink.msgs {
			positions, err := feed.ParseCampaignCursor(m.Cursor)
			if err != nil || len(positions) > 2*2 {
				t.Fatalf("round %d: message %s has cursor %v (%v), more than two positions per SKU", round, m.ID, positions, err)
			}
		}
		last, _ := feed.ParseCampaignCursor(sink.msgs[len(sink.msgs)-1].Cursor)
		sink.mu.Unlock()
		if len(last) != 2 {
			t.Fatalf("after %d restores the stream's last cursor holds %d positions, want one per SKU: %v", round, len(last), last)
		}
		if round == restores {
			e.Close()
			return
		}

		// What seckillctl restore --until-index leaves for SKU a.1, at its
		// last record (so that no record the relay read is abandoned):
		// the records after it are a new history's.
		page := do(t, http.MethodGet, base+"/admin/campaigns/rl/skus/a.1/events?limit=1", nil, true)
		if round == 0 {
			chain.Root, _, _ = strings.Cut(page["next_cursor"].(string), "-")
		}
		forked, err := chain.Fork(uint64(page["durable_index"].(float64)), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		chain = forked
		e.Close()
		if err := chain.Write(skudir.Of(dataDir, "rl", "a.1").String()); err != nil {
			t.Fatal(err)
		}
	}
}

// movedSink is a memorySink whose first Advance finds that another relay
// recorded a progress since Resume (relay.ErrSinkMoved).
type movedSink struct {
	memorySink
	resumes, advances int
}

func (s *movedSink) Resume(ctx context.Context) (string, error) {
	s.mu.Lock()
	s.resumes++
	s.mu.Unlock()
	return s.memorySink.Resume(ctx)
}

func (s *movedSink) Advance(ctx context.Context, cursor string) error {
	s.mu.Lock()
	s.advances++
	first := s.advances == 1
	s.mu.Unlock()
	if first {
		return fmt.Errorf("%w: another relay's progress", relay.ErrSinkMoved)
	}
	return s.memorySink.Advance(ctx, cursor)
}

func (s *movedSink) counts() (resumes int, progress string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resumes, s.progress
}

// A progress the sink refuses because another relay recorded one since
// Resume (ErrSinkMoved) makes the relay resume from the sink, where the
// other relay's progress is, instead of writing over it; it then records
// its own.
func TestRelayResumesFromTheSinkWhenAnotherRelayMovedIt(t *testing.T) {
	base := startSeckill(t)
	load(t, base, 0, 2)
	sink := &movedSink{}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- relay.Run(ctx, relay.Config{FeedURL: base, AdminToken: token, CampaignID: "rl", Types: []string{"seckill.reservation.paid"},
			Wait: 100 * time.Millisecond, RetryAfter: 10 * time.Millisecond, Logger: quiet}, sink)
	}()
	for i, deadline := 10, time.Now().Add(time.Minute); ; i += 2 {
		reserveOnly(t, base, i, i+2) // records left out: the relay advances past them
		if resumes, progress := sink.counts(); resumes >= 2 && progress != "" {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the relay stopped: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the relay did not resume from the sink and record its progress within a minute")
		}
	}
	if stop(); !errors.Is(<-done, context.Canceled) {
		t.Fatal("the relay did not stop on its context")
	}
}
