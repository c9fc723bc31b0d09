package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
	"github.com/seckill/seckill/lottery"
)

// Sizes of the lottery the kill test draws: every winner is one group
// commit (--lottery-draw-batch 1), 200 µs apart (--lottery-draw-pause,
// about an fsync here, so a kill lands inside a commit about as often as
// between two), so the draw is 2,000 commits over half a second or more.
const (
	killEntries   = 2500
	killSaleLimit = 2000
	killWaitlist  = 300
)

// lotteryDaemon runs seckilld on dir with one WON record per group commit
// and 200 µs between two, snapshots every 500 records (a restart resumes
// from a snapshot taken in the middle of the draw) and the whole log kept
// for the auditor (--feed-retain-records holds back truncation).
func lotteryDaemon(t *testing.T, bin, dir string) *seckilldtest.Daemon {
	t.Helper()
	return seckilldtest.Start(t, bin, dir, []string{"SECKILL_ADMIN_TOKEN=" + killToken,
		"SECKILL_LOTTERY_DRAW_BATCH=1", "SECKILL_LOTTERY_DRAW_PAUSE=200us", "SECKILL_SNAPSHOT_EVERY=500", "SECKILL_SNAPSHOT_INTERVAL=200ms",
		"SECKILL_FEED_RETAIN_RECORDS=1000000"})
}

// call sends body as JSON with the admin token and decodes the answer.
func call(t *testing.T, method, url string, body any) (int, map[string]any) {
	t.Helper()
	code, m, err := sendJSON(method, url, killToken, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, m
}

// kill9 sends SIGKILL to the daemon and waits for it to die of it.
func kill9(t *testing.T, d *seckilldtest.Daemon) {
	t.Helper()
	if err := d.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-d.Exited; !isKilled(err) {
		t.Fatalf("exit after SIGKILL: %v", err)
	}
}

// drawState is what a SKU's log says of its draw.
type drawState struct {
	started, done               bool
	winners, waitlist, promoted []uint32
	tokens                      []uint32
}

func readDraw(t *testing.T, skuDir string) drawState {
	t.Helper()
	l, err := readLotteryLog(skuDir)
	if err != nil {
		t.Fatal(err)
	}
	return drawState{started: l.drawn, done: l.done != nil, winners: l.winners, waitlist: l.waitlist, promoted: l.promoted, tokens: l.tokens}
}

// TestLotteryDrawAcrossKills: kill -9 at several points of a real draw
// gives the winners and the waitlist of an uninterrupted draw.
//
// A seckilld child takes 2,500 entries for 2,000 units; after the close it
// is killed and its data dir copied. The copy is drawn without
// interruption: the reference. The original is drawn with the same beacon
// round and randomness (so the same server seed, pool and seed) and killed
// with SIGKILL right after DRAW_STARTED is acknowledged (while the ranking
// runs off the actor, or once the first group commits of WON records
// followed) and then three times more, after each restart (which resumes
// the draw by itself), once the published progress has gone a quarter of
// the way from the winners recorded to the last: every kill lands between
// or inside the group commits of the WON records. After each kill the log must hold a prefix
// of the reference's winners with the same tokens, at least the winners
// published before the kill, and no DRAW_DONE yet. After the last restart
// the draw finishes: the same winners, tokens, waitlist, seed and roots as
// the reference, a second draw answers 409 ALREADY_DRAWN, and `seckillctl
// lottery verify` exits 0 on the SKU directory and on the published
// evidence with the exported pool.
func TestLotteryDrawAcrossKills(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the seckilld binary")
	}
	bin := seckilldtest.Build(t, raceEnabled)
	var dir string
	refDir := t.TempDir()
	refSKUDir := filepath.Join(refDir, "lk", "ls")
	const lotteryPath = "/v1/campaigns/lk/skus/ls/lottery"
	const drawPath = "/admin/campaigns/lk/skus/ls/lottery/draw"

	// Entries, then the close. Every entry must come before the close,
	// which the definition fixes: the entries get 10 s, and on a machine
	// too loaded to make them all in that window the test starts again
	// on a fresh data dir with a window twice as long.
	var d *seckilldtest.Daemon
	var closeAt time.Time
	var round uint64
	for window := 10 * time.Second; ; window *= 2 {
		dir = t.TempDir()
		d = lotteryDaemon(t, bin, dir)
		now := time.Now()
		closeAt = now.Add(window)
		round = uint64((closeAt.Unix()-lottery.QuicknetGenesis)/lottery.QuicknetPeriod + 2)
		campaign := map[string]any{
			"campaign_id": "lk", "start_at": now.Add(-time.Second).UTC().Format(time.RFC3339Nano),
			"end_at": now.Add(24 * time.Hour).UTC().Format(time.RFC3339Nano), "payment_window": "10m",
			"skus": []map[string]any{{"sku_id": "ls", "sale_limit": killSaleLimit, "allocation": "lottery",
				"entries_open_at":  now.Add(-time.Second).UTC().Format(time.RFC3339Nano),
				"entries_close_at": closeAt.UTC().Format(time.RFC3339Nano),
				"beacon":           map[string]any{"source": lottery.SourceDrandQuicknet, "round": round},
				"waitlist":         killWaitlist}},
		}
		if code, body := call(t, http.MethodPut, d.Base+"/admin/campaigns/lk", campaign); code != http.StatusOK && code != http.StatusCreated {
			t.Fatalf("define: %d %v", code, body)
		}
		start := time.Now()
		if enter(t, d.Base, killEntries) {
			t.Logf("%d entries in %v (a window of %v)", killEntries, time.Since(start).Round(time.Millisecond), window)
			break
		}
		if window >= 4*time.Minute {
			t.Fatalf("%d entries did not fit in a window of %v", killEntries, window)
		}
		t.Logf("%d entries did not fit in a window of %v: again with a longer one", killEntries, window)
		kill9(t, d)
	}
	skuDir := filepath.Join(dir, "lk", "ls")
	roundAt := time.Unix(lottery.QuicknetGenesis+int64(round-1)*lottery.QuicknetPeriod, 0)
	time.Sleep(time.Until(closeAt))
	waitFor(t, "the close", func() bool {
		_, info := call(t, http.MethodGet, d.Base+lotteryPath, nil)
		return info["phase"] == "CLOSED" && info["entries_root"] != nil
	})
	kill9(t, d)
	copyDir(t, dir, refDir)

	time.Sleep(time.Until(roundAt))
	randomness := sha256.Sum256([]byte("the beacon of the kill test"))
	drawBody := map[string]any{"beacon": map[string]any{"round": round, "randomness": hex.EncodeToString(randomness[:])}}

	// The reference: the copy, drawn without interruption.
	ref := lotteryDaemon(t, bin, refDir)
	if code, body := call(t, http.MethodPost, ref.Base+drawPath, drawBody); code != http.StatusAccepted {
		t.Fatalf("reference draw: %d %v", code, body)
	}
	var refInfo map[string]any
	waitFor(t, "the reference draw", func() bool {
		_, refInfo = call(t, http.MethodGet, ref.Base+lotteryPath, nil)
		return refInfo["phase"] == "DRAWN"
	})
	kill9(t, ref)
	want := readDraw(t, refSKUDir)
	if len(want.winners) != killSaleLimit || len(want.waitlist) != killWaitlist || len(want.promoted) != 0 {
		t.Fatalf("reference: %d winners, %d waitlisted, %d promoted", len(want.winners), len(want.waitlist), len(want.promoted))
	}

	// The draw, killed right after DRAW_STARTED is acknowledged.
	d = lotteryDaemon(t, bin, dir)
	if code, body := call(t, http.MethodPost, d.Base+drawPath, drawBody); code != http.StatusAccepted {
		t.Fatalf("draw: %d %v", code, body)
	}
	kill9(t, d)
	last := checkPrefix(t, skuDir, want, 0, "1 (after DRAW_STARTED)")
	t.Logf("kill 1: %d of %d winners recorded", last, killSaleLimit)

	// Then killed three times more, each time a quarter of the way on from
	// the winners recorded, as the published progress shows them.
	for kill := 2; kill <= 4; kill++ {
		d = lotteryDaemon(t, bin, dir)
		target := last + (killSaleLimit-last)/4
		seen := 0
		for deadline := time.Now().Add(2 * time.Minute); seen < target; {
			code, info := call(t, http.MethodGet, d.Base+lotteryPath, nil)
			if code != http.StatusOK {
				continue // still recovering
			}
			if info["phase"] != "DRAWING" {
				t.Fatalf("kill %d: phase %v before the kill at %d winners (the draw is too fast to interrupt here)", kill, info["phase"], target)
			}
			seen = int(info["winners"].(float64))
			if time.Now().After(deadline) {
				t.Fatalf("kill %d: %d winners after 2 minutes", kill, seen)
			}
		}
		kill9(t, d)
		n := checkPrefix(t, skuDir, want, seen, fmt.Sprintf("%d", kill))
		if n <= last {
			t.Fatalf("kill %d: %d winners recorded, %d before: no progress", kill, n, last)
		}
		t.Logf("kill %d: %d of %d winners published, %d recorded", kill, seen, killSaleLimit, n)
		last = n
	}

	// The last restart finishes the draw.
	d = lotteryDaemon(t, bin, dir)
	var info map[string]any
	waitFor(t, "the draw after the kills", func() bool {
		_, info = call(t, http.MethodGet, d.Base+lotteryPath, nil)
		return info["phase"] == "DRAWN"
	})
	for _, k := range []string{"commit", "server_seed", "entries_root", "seed", "winners", "winners_root", "waitlisted", "waitlist_root", "round", "randomness"} {
		if info[k] != refInfo[k] || info[k] == nil {
			t.Errorf("%s: %v after the kills, %v in the reference", k, info[k], refInfo[k])
		}
	}
	if code, body := call(t, http.MethodPost, d.Base+drawPath, drawBody); code != http.StatusConflict || body["error"] != "ALREADY_DRAWN" {
		t.Errorf("a second draw: %d %v", code, body)
	}
	evidence := writeFile(t, "evidence.json", mustJSON(t, info))
	pool := writeFile(t, "entries.csv", getRaw(t, d.Base+"/admin/campaigns/lk/skus/ls/lottery/entries.csv"))
	kill9(t, d)
	got := readDraw(t, skuDir)
	if !got.done || !slices.Equal(got.winners, want.winners) || !slices.Equal(got.tokens, want.tokens) || !slices.Equal(got.waitlist, want.waitlist) {
		t.Fatalf("after the kills: done %v, %d winners, %d waitlisted; the reference's differ", got.done, len(got.winners), len(got.waitlist))
	}
	wantCode(t, 0, "lottery", "verify", skuDir)
	if rep := verifySKUReport(t, wantCode(t, 0, "verify", skuDir)); len(rep.Snapshots) == 0 || rep.Log.FirstIndex != 1 {
		t.Fatalf("%d snapshots, the log from record %d: want snapshots and the whole log", len(rep.Snapshots), rep.Log.FirstIndex)
	}
	wantCode(t, 0, "lottery", "verify", "--evidence", evidence, "--pool", pool)
	wantCode(t, 0, "lottery", "verify", refSKUDir)
}

// checkPrefix reads the draw a kill left in skuDir: started and not done,
// at least published winners recorded, and the records a prefix of the
// reference's (the same entries with the same tokens, in rank order). It
// returns the winners recorded.
func checkPrefix(t *testing.T, skuDir string, want drawState, published int, when string) int {
	t.Helper()
	got := readDraw(t, skuDir)
	n := len(got.winners)
	switch {
	case !got.started || got.done:
		t.Fatalf("kill %s: draw started %v, done %v: the kill was not inside the draw", when, got.started, got.done)
	case n < published:
		t.Fatalf("kill %s: %d winners recorded, %d were published before the kill", when, n, published)
	case n > len(want.winners) || !slices.Equal(got.winners, want.winners[:n]) || !slices.Equal(got.tokens, want.tokens[:n]):
		t.Fatalf("kill %s: the %d winners recorded are not the reference's first %d", when, n, n)
	case len(got.waitlist) > 0 && n != len(want.winners):
		t.Fatalf("kill %s: a waitlist recorded before the last winner", when)
	}
	return n
}

// enter makes n entries (request r<i>, user u<i>) from 16 goroutines. It
// returns false if the entries closed first.
func enter(t *testing.T, base string, n int) bool {
	t.Helper()
	var wg sync.WaitGroup
	var closed atomic.Bool
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w + 1; i <= n && !closed.Load(); i += 16 {
				code, body, err := post(base+"/v1/campaigns/lk/skus/ls/entries", map[string]string{"request_id": fmt.Sprintf("r%d", i), "user_id": fmt.Sprintf("u%d", i)})
				if err == nil && code == http.StatusForbidden && body["error"] == "ENTRIES_CLOSED" {
					closed.Store(true)
					return
				}
				if err != nil || code != http.StatusAccepted || body["outcome"] != "ENTERED" {
					errs <- fmt.Errorf("entry %d: %d %v %v", i, code, body, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return !closed.Load()
}

// waitFor polls cond every 20 ms for up to two minutes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: timed out", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// copyDir copies the data dir src into dst (the daemon is dead).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func getRaw(t *testing.T, url string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+killToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return b
}
