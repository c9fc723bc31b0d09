package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/wal"
)

// heldReplication is a primary's replication whose standbys confirm
// nothing until release: every commit waits, as on a --sync-strict
// primary whose standby has not caught up yet.
type heldReplication struct {
	mu       sync.Mutex
	released bool
	logs     []*wal.Log
}

func (h *heldReplication) LogOptions(_, _ string, o wal.Options) wal.Options {
	o.Replicated, o.Shipper = true, heldShipper{h}
	return o
}

func (h *heldReplication) Opened(_, _ string, _ skudir.Dir, l *wal.Log) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logs = append(h.logs, l)
	if h.released {
		l.Confirm(l.DurableIndex())
	}
	return nil
}

func (h *heldReplication) RetainFrom(string, string) uint64       { return 0 }
func (h *heldReplication) SnapshotWritten(string, string, uint64) {}

// release confirms every durable record from now on.
func (h *heldReplication) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.released = true
	for _, l := range h.logs {
		l.Confirm(l.DurableIndex())
	}
}

type heldShipper struct{ h *heldReplication }

func (heldShipper) Ship(*wal.Batch) {}

func (s heldShipper) Durable(index uint64) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if s.h.released {
		for _, l := range s.h.logs {
			l.Confirm(l.DurableIndex())
		}
	}
}

var _ actors.Replication = (*heldReplication)(nil)

// A fresh replica set's primary is not ready (/readyz 503 "starting")
// until the campaigns it was started with are defined: a load balancer
// trusting /readyz must not send buyers to a primary that does not know
// the SKUs yet, and a buyer who sends a reserve all the same is told 503
// with Retry-After, not 404. Here nothing commits until the
// standbys confirm (held), so the demo campaign stays undefined while the
// primary serves; once they confirm, it is defined and /readyz is 200.
func TestPrimaryNotReadyUntilItsCampaignsAreDefined(t *testing.T) {
	_, l := startLedger(t)
	c := newCopyNet()
	held := &heldReplication{}
	c.hold = held
	a := startTestReplica(t, c, l, "a", filepath.Join(t.TempDir(), "a"))
	waitRole(t, a, "primary")
	var ready struct{ Status string }
	if code := getJSON(t, a.url+"/readyz", "", &ready); code != http.StatusServiceUnavailable || ready.Status != "starting" {
		t.Fatalf("/readyz of a primary whose campaigns are not defined: %d %+v", code, ready)
	}
	if r, err := http.Get(a.url + "/readyz"); err != nil {
		t.Fatal(err)
	} else if r.Body.Close(); r.Header.Get("Retry-After") != "1" {
		t.Fatalf("/readyz 503 starting: Retry-After %q, want 1", r.Header.Get("Retry-After"))
	}
	// A buyer who did not ask /readyz is told to retry, not that the
	// sale's SKU does not exist.
	early, err := http.Post(a.url+"/v1/campaigns/demo/skus/sku-1/reservations", "application/json",
		strings.NewReader(`{"request_id":"r0","user_id":"u0"}`))
	if err != nil {
		t.Fatal(err)
	}
	early.Body.Close()
	if early.StatusCode != http.StatusServiceUnavailable || early.Header.Get("Retry-After") == "" {
		t.Fatalf("a reserve before the campaigns are defined: %d (Retry-After %q), want 503 with Retry-After",
			early.StatusCode, early.Header.Get("Retry-After"))
	}
	held.release()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		code := getJSON(t, a.url+"/readyz", "", &ready)
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never 200 once the demo campaign could commit: %d %+v", code, ready)
		}
	}
	resp, err := http.Post(a.url+"/v1/campaigns/demo/skus/sku-1/reservations", "application/json",
		strings.NewReader(`{"request_id":"r1","user_id":"u1"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("a reserve of the demo SKU once /readyz said ready: %d", resp.StatusCode)
	}
}

// A primary whose campaign file the engine refuses (here a new SKU whose
// payment_window is above the day a new definition may take) stops with
// the reason instead of retrying every second behind a /readyz that says
// "starting" for ever: no retry cures a refused definition, and an
// operator reads the reason where the process exited.
func TestPrimaryStopsOnARefusedCampaignFile(t *testing.T) {
	_, l := startLedger(t)
	c := newCopyNet()
	file := filepath.Join(t.TempDir(), "campaigns.json")
	doc := `[{"campaign_id":"c","start_at":"2030-01-01T00:00:00Z","end_at":"2030-01-01T01:00:00Z","payment_window":"48h","skus":[{"sku_id":"s","sale_limit":10}]}]`
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startTestReplicaOf(t, c, l, "rs1", "a", filepath.Join(t.TempDir(), "a"), "--etcd", "unused:1", "--campaigns", file)
	select {
	case err := <-a.done:
		a.stop = nil // it has stopped: nothing for the cleanup to halt
		if err == nil || !strings.Contains(err.Error(), "payment_window") {
			t.Fatalf("the primary stopped with %v, want the refusal naming payment_window", err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the primary did not stop on a campaign file it refuses; its log:\n%s", a.logs.String())
	}
}
