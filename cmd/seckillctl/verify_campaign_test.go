package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/lottery"
)

// scopedSKU makes a SKU of a campaign-scope campaign in an engine of its
// own (which knows no other SKU of the campaign), reserves for users, and
// moves it into dataDir: two of them may hold one user twice, which no
// single engine lets happen.
func scopedSKU(t *testing.T, dataDir, campaignID, skuID string, users ...string) {
	t.Helper()
	scopedSKUOf(t, dataDir, campaignID, skuID, false, users...)
}

// scopedSKUOf is scopedSKU; with lottery set the SKU is a lottery taking
// entries for an hour, and the users enter it.
func scopedSKUOf(t *testing.T, dataDir, campaignID, skuID string, lotterySKU bool, users ...string) {
	t.Helper()
	own := t.TempDir()
	e, err := actors.Open(actors.Config{DataDir: own, Logger: quiet, ExpiryInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now().UnixMilli()
	d := sku.Definition{CampaignID: campaignID, SKUID: skuID, StartAt: now - 60_000, EndAt: now + 86_400_000,
		PaymentWindowMs: 600_000, SaleLimit: 10, ReleaseOnClose: true, PurchaseLimit: sku.PurchaseLimitCampaign}
	if lotterySKU {
		closeAt := now + 3_600_000
		d.Lottery = &sku.LotteryRules{EntriesOpenAt: now - 60_000, EntriesCloseAt: closeAt,
			Beacon: lottery.Beacon{Source: lottery.SourceDrandQuicknet, Round: uint64((closeAt/1000-lottery.QuicknetGenesis)/lottery.QuicknetPeriod + 2)}}
	}
	if err := e.Define(ctx, d); err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if lotterySKU {
			if res, err := e.Enter(ctx, campaignID, skuID, "e-"+u, u, sku.Holder{}); err != nil || res.Outcome != sku.OutcomeEntered {
				t.Fatalf("enter %s: %v %v", u, res.Outcome, err)
			}
			continue
		}
		if res, err := e.Reserve(ctx, campaignID, skuID, "r-"+u, u); err != nil || res.Outcome != sku.OutcomeAccepted {
			t.Fatalf("reserve %s: %v %v", u, res.Outcome, err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dataDir, campaignID), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(own, campaignID, skuID), filepath.Join(dataDir, campaignID, skuID)); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyCampaignScope(t *testing.T) {
	dataDir := t.TempDir()
	scopedSKU(t, dataDir, "one", "s1", "alice", "bob")
	scopedSKU(t, dataDir, "one", "s2", "carol")
	run := verifyRun(t, wantCode(t, 0, "verify", dataDir))
	if len(run.Campaigns) != 1 || !run.Campaigns[0].OK || run.Campaigns[0].LiveUsers != 3 || run.Campaigns[0].SKUs != 2 {
		t.Fatalf("campaign check: %+v", run.Campaigns)
	}
	scopedSKU(t, dataDir, "two", "s1", "alice")
	scopedSKU(t, dataDir, "two", "s2", "alice")
	code, out, _ := ctl(t, "verify", dataDir)
	if code != exitFailed {
		t.Fatalf("verify: exit %d, want %d\n%s", code, exitFailed, out)
	}
	run = verifyRun(t, out) // every SKU alone is fine
	if len(run.Campaigns) != 2 || run.Campaigns[1].OK || !strings.Contains(strings.Join(run.Campaigns[1].Problems, " "), "user alice holds 2 live purchases") {
		t.Fatalf("campaign check: %+v", run.Campaigns)
	}
	// A lottery entry that may still win holds its user too.
	scopedSKUOf(t, dataDir, "three", "lot", true, "dave", "erin")
	scopedSKU(t, dataDir, "three", "s1", "dave", "frank")
	run = verifyRun(t, wantCode(t, exitFailed, "verify", dataDir))
	var three campaignCheckJSON
	for _, c := range run.Campaigns {
		if c.CampaignID == "three" {
			three = c
		}
	}
	problems := strings.Join(three.Problems, " ")
	if len(run.Campaigns) != 3 || three.OK || three.LiveUsers != 2 ||
		!strings.Contains(problems, "user dave holds 2 live purchases or lottery entries") || !strings.Contains(problems, "entry lot/e-dave") {
		t.Fatalf("campaign check with a lottery: %+v", run.Campaigns)
	}
}
