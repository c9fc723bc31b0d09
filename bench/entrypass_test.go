package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/entrypass"
	"github.com/seckill/seckill/httpapi"
)

// The seed scenario with --entry-pass-keys: the campaign requires passes,
// so every accepted reserve carried a valid one; retries and repeat clicks
// behave as without passes (a resend carries a pass of the same request_id).
func TestSeedWithEntryPasses(t *testing.T) {
	keys := "7:" + strings.Repeat("3c", 32)
	ring, err := entrypass.ParseKeyRing(keys)
	if err != nil {
		t.Fatal(err)
	}
	target := startSeckilld(t, serverOptions{adminToken: "secret", config: func(c *httpapi.Config) {
		c.EntryPasses.Keys = ring
	}})
	status, result, output := runMain(t, "--target", target, "--admin-token", "secret", "--entry-pass-keys", keys,
		"--scenario", "seed", "--stock", "50", "--requests", "2000", "--concurrency", "16", "--seed", "3")
	if status != ExitPass {
		t.Fatalf("exit %d, want %d\n%s", status, ExitPass, output)
	}
	if got := number(t, result, "accepted"); got != 50 {
		t.Errorf("accepted %v, want 50", got)
	}
	if got := number(t, result, "duplicate_winners"); got != 0 {
		t.Errorf("duplicate_winners %v", got)
	}

	// A key the server does not hold: every reserve is refused.
	status, result, _ = runMain(t, "--target", target, "--admin-token", "secret", "--entry-pass-keys", "8:"+strings.Repeat("4d", 32),
		"--scenario", "seed", "--stock", "5", "--requests", "20", "--concurrency", "2", "--seed", "3", "--max-resends", "0")
	if got := number(t, result, "accepted"); status == ExitPass || got != 0 {
		t.Errorf("with an unknown key: exit %d, accepted %v", status, got)
	}
}

// A resend of one attempt carries a pass with the same request_id.
func TestPassMinterIsStablePerAttempt(t *testing.T) {
	ring, _ := entrypass.ParseKeyRing("1:" + strings.Repeat("ab", 32))
	m := newPassMinter(ring, "c", "s", time.Now())
	a, err := m.mint("r-1", "u-1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := m.mint("r-1", "u-1")
	c, _ := m.mint("r-2", "u-1")
	pa, err := ring.Verify(a, entrypass.Scope{CampaignID: "c", SKUID: "s", UserID: "u-1"}, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	pc, _ := ring.Verify(c, entrypass.Scope{CampaignID: "c", SKUID: "s", UserID: "u-1"}, time.Now().UnixMilli())
	if a != b || pa.RequestID() == pc.RequestID() {
		t.Fatalf("passes of one attempt differ, or of two attempts agree")
	}
}
