package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/httpapi/httpapitest"
	"github.com/seckill/seckill/internal/natstest"
	"github.com/seckill/seckill/internal/testbin"
	"github.com/seckill/seckill/relay"
)

const token = "relay-test-token"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startSeckill runs the engine and the HTTP service in process and
// returns its base URL.
func startSeckill(t *testing.T) string {
	t.Helper()
	return startSeckillWith(t, actors.Config{DataDir: t.TempDir()})
}

// startTruncating is startSeckill with a snapshot every 10 records, one
// kept, and log segments of 512 bytes: snapshots soon truncate whole
// segments, as a long sale's do, all but the newest retain records
// (feed retention, 0: none).
func startTruncating(t *testing.T, retain uint64) string {
	t.Helper()
	cfg := actors.Config{DataDir: t.TempDir(), SnapshotEvery: 10, SnapshotKeep: 1, FeedRetainRecords: retain}
	cfg.WAL.SegmentSize = 512
	return startSeckillWith(t, cfg)
}

// startSeckillWith is startSeckill with cfg's engine settings (its logger
// is the tests').
func startSeckillWith(t *testing.T, cfg actors.Config) string {
	t.Helper()
	_, base := serveEngine(t, cfg)
	return base
}

// serveEngine opens an engine with cfg (its logger is the tests') and
// serves it with its feed; it returns the engine and the server's base
// URL, both closed when the test ends.
func serveEngine(t *testing.T, cfg actors.Config) (*actors.Engine, string) {
	t.Helper()
	cfg.Logger = quiet
	e, err := actors.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, httpapitest.Serve(t, httpapi.Config{Engine: e, Feed: feed.New(e), AdminToken: token, Logger: quiet})
}

// relayConfig is the tests' relay of campaign rl from the feed at base.
func relayConfig(base string) relay.Config {
	return relay.Config{FeedURL: base, AdminToken: token, CampaignID: "rl", Wait: time.Second, RetryAfter: 10 * time.Millisecond, Logger: quiet}
}

func do(t *testing.T, method, url string, body any, admin bool) map[string]any {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	if admin {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %v", method, url, resp.StatusCode, out)
	}
	return out
}

// saleStart is the start of campaign rl: the same for every define of a
// test run (a redefinition may not move it).
var saleStart = time.Now().UTC().Add(-time.Minute).Truncate(time.Second)

// load defines campaign rl with two SKUs and runs a reserve, pay and
// cancel mix on them.
func load(t *testing.T, base string, from, to int) {
	t.Helper()
	do(t, http.MethodPut, base+"/admin/campaigns/rl", map[string]any{
		"campaign_id": "rl", "start_at": saleStart.Format(time.RFC3339), "end_at": saleStart.Add(time.Hour).Format(time.RFC3339),
		"payment_window": "15m", "skus": []map[string]any{{"sku_id": "a.1", "sale_limit": 1000}, {"sku_id": "b", "sale_limit": 1000}},
	}, true)
	for i := from; i < to; i++ {
		s := []string{"a.1", "b"}[i%2]
		r := do(t, http.MethodPost, base+"/v1/campaigns/rl/skus/"+s+"/reservations", map[string]string{"request_id": fmt.Sprint("r", i), "user_id": fmt.Sprint("u", i)}, false)
		id, _ := r["reservation_id"].(string)
		switch i % 5 {
		case 0:
			do(t, http.MethodPost, base+"/v1/reservations/"+id+"/payment", map[string]any{"payment_id": fmt.Sprint("p", i), "amount": 1}, false)
		case 1:
			do(t, http.MethodPost, base+"/v1/reservations/"+id+"/cancel", nil, false)
		}
	}
}

// feedIDs reads the whole campaign feed: its event ids in order per SKU.
func feedIDs(t *testing.T, base string) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for {
		page := do(t, http.MethodGet, base+"/admin/campaigns/rl/events?limit=1000&after="+cursor, nil, true)
		events, _ := page["events"].([]any)
		for _, e := range events {
			ids = append(ids, e.(map[string]any)["id"].(string))
		}
		if len(events) == 0 {
			return ids
		}
		cursor = page["next_cursor"].(string)
	}
}

// dyingSink stores only part of its nth batch and then ends the relay,
// as a kill in the middle of a batch would.
type dyingSink struct {
	relay.Sink
	batches, dieAt, keep int
	kill                 context.CancelFunc
}

func (s *dyingSink) Publish(ctx context.Context, msgs []relay.Message) error {
	s.batches++
	if s.batches == s.dieAt && len(msgs) > s.keep {
		err := s.Sink.Publish(ctx, msgs[:s.keep])
		s.kill()
		if err == nil {
			err = context.Canceled
		}
		return err
	}
	return s.Sink.Publish(ctx, msgs)
}

// A relay killed in the middle of a batch and started again stores every
// event of the feed in JetStream exactly once by id, in log order per SKU.
func TestRelayKilledMidBatch(t *testing.T) {
	nc := natstest.Start(t)
	base := startSeckill(t)
	load(t, base, 0, 60)
	cfg := relay.Config{FeedURL: base, AdminToken: token, CampaignID: "rl", Limit: 7, Wait: time.Second, RetryAfter: 10 * time.Millisecond, Logger: quiet}

	ctx, kill := context.WithCancel(context.Background())
	sink, err := relay.NewNATSSink(nc, "SECKILL_RL", "rl")
	if err != nil {
		t.Fatal(err)
	}
	if err := relay.Run(ctx, cfg, &dyingSink{Sink: sink, dieAt: 3, keep: 4, kill: kill}); err != context.Canceled {
		t.Fatalf("first relay: %v", err)
	}
	stream, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := stream.Stream(context.Background(), "SECKILL_RL")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := st.Info(context.Background())
	if info.State.Msgs != 7+7+4 {
		t.Fatalf("the first relay stored %d messages, want 18 (two batches and 4 of the third)", info.State.Msgs)
	}

	// More sales while no relay runs, then a new relay (no state).
	load(t, base, 60, 80)
	want := feedIDs(t, base)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sink, err = relay.NewNATSSink(nc, "SECKILL_RL", "rl")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx, cfg, sink) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		info, err = st.Info(context.Background())
		if err == nil && info.State.Msgs >= uint64(len(want)) || time.Now().After(deadline) {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the relay stopped: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	stop()
	<-done

	checkStream(t, st, want)
	for seq := uint64(1); seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(context.Background(), seq)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Type string }
		if skuID := m.Header.Get(relay.HeaderSKU); json.Unmarshal(m.Data, &e) != nil || m.Subject != sink.Subject(skuID, e.Type) {
			t.Fatalf("message %d: subject %s for an event of type %q", seq, m.Subject, e.Type)
		}
	}
	if _, err := st.GetLastMsgForSubject(context.Background(), "seckill.rl.a%2E1.reservation.created"); err != nil {
		t.Fatalf("no reservation.created of SKU a.1 under its escaped subject: %v", err)
	}
}

// relayBinary builds the seckill-relay binary once for the package's
// tests (testbin) and returns its path.
func relayBinary(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, "github.com/seckill/seckill/cmd/seckill-relay")
}

// The relay binary killed with SIGKILL at random points (between and in
// the middle of its batches) while sales go on, and started again each
// time: the stream ends with every event of the feed exactly once by id,
// in log order per SKU.
func TestRelayProcessKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the seckill-relay binary")
	}
	bin := relayBinary(t)
	nc := natstest.Start(t)
	base := startSeckill(t)
	args := []string{"--feed", base, "--admin-token", token, "--nats", nc.ConnectedUrl(), "--stream", "SECKILL_KILL",
		"--campaign", "rl", "--limit", "3", "--wait", "1s", "--log-level", "error"}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	t.Logf("seed %d", seed)
	load(t, base, 0, 1) // defines the campaign
	for round := 0; round < 6; round++ {
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill it at a random point while the sales go on: the kill's
		// time is the test's input.
		after := time.Duration(20+rng.IntN(300)) * time.Millisecond
		killed := make(chan struct{})
		go func() {
			time.Sleep(after)
			cmd.Process.Kill()
			cmd.Wait()
			close(killed)
		}()
		load(t, base, 1+round*100, 1+round*100+100)
		<-killed
	}
	want := feedIDs(t, base)
	if st, err := jetstream.New(nc); err == nil {
		if s, err := st.Stream(context.Background(), "SECKILL_KILL"); err == nil {
			info, _ := s.Info(context.Background())
			t.Logf("after 6 killed relays the stream holds %d of %d events", info.State.Msgs, len(want))
		}
	}
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var st jetstream.Stream
	var info *jetstream.StreamInfo
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if st == nil {
			st, _ = js.Stream(context.Background(), "SECKILL_KILL")
		}
		if st != nil {
			if info, err = st.Info(context.Background()); err == nil && info.State.Msgs >= uint64(len(want)) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream holds %v of %d events", info, len(want))
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	checkStream(t, st, want)
}

// checkStream asserts that the stream holds exactly the events want, each
// once by id, in log order per SKU.
func checkStream(t *testing.T, st jetstream.Stream, want []string) {
	t.Helper()
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	lastIndex := map[string]uint64{}
	for seq := uint64(1); seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(context.Background(), seq)
		if err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
		id := m.Header.Get(jetstream.MsgIDHeader)
		if seen[id] {
			t.Fatalf("event %s stored twice", id)
		}
		seen[id] = true
		skuID := m.Header.Get(relay.HeaderSKU)
		index, _ := strconv.ParseUint(m.Header.Get(relay.HeaderIndex), 10, 64)
		if index <= lastIndex[skuID] {
			t.Fatalf("SKU %s: index %d stored after %d", skuID, index, lastIndex[skuID])
		}
		lastIndex[skuID] = index
	}
	if len(seen) != len(want) {
		t.Fatalf("stream holds %d events, the feed %d", len(seen), len(want))
	}
	for _, id := range want {
		if !seen[id] {
			t.Fatalf("event %s of the feed is not in the stream", id)
		}
	}
}

func TestMain(m *testing.M) { testbin.Main(m) }

// waitStored waits until stream holds, as the last message of each
// subject of want (wildcards allowed), the event id want gives it; it
// fails the test when the relay's Run returns on done first, or after a
// minute.
func waitStored(t *testing.T, js jetstream.JetStream, stream string, want map[string]string, done <-chan error) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		stored := 0
		if st, err := js.Stream(context.Background(), stream); err == nil {
			for subject, id := range want {
				m, err := st.GetLastMsgForSubject(context.Background(), subject)
				if err == nil && m.Header.Get(jetstream.MsgIDHeader) == id {
					stored++
				}
			}
		}
		if stored == len(want) {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the relay stopped before %s held %v: %v", stream, want, err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not hold %v within a minute", stream, want)
		}
	}
}
