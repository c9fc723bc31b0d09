package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/seckill/seckill/actors/purchase"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/recovery"
	"github.com/seckill/seckill/wal"
)

// verifyRunJSON is what verify prints: one document for the whole run.
type verifyRunJSON struct {
	Dir  string       `json:"dir"`  // the directory given
	OK   bool         `json:"ok"`   // every SKU verified
	SKUs []verifyJSON `json:"skus"` // one report per SKU, in directory order
	// Campaigns checks each campaign whose purchase_limit is "campaign"
	// (verify_campaign.go); absent when there is none.
	Campaigns []campaignCheckJSON `json:"campaigns,omitempty"`
}

// verifyJSON is verify's report on one SKU.
type verifyJSON struct {
	Dir             string           `json:"dir"`
	CampaignID      string           `json:"campaign_id"`
	SKUID           string           `json:"sku_id"`
	Log             logInfo          `json:"log"`
	Snapshots       []snapshotStatus `json:"snapshots"`
	ReplayedFrom    string           `json:"replayed_from"`
	RecordsReplayed int              `json:"records_replayed"`
	StateIndex      uint64           `json:"state_index"`
	StateHash       string           `json:"state_hash"`
	Counts          countsJSON       `json:"counts"`
	Cell            *cellJSON        `json:"cell,omitempty"` // a celled SKU's quota as its log holds it
	OK              bool             `json:"ok"`
	Problems        []string         `json:"problems"`

	purchases *skuPurchases // for the campaign's check; nil when unread
}

// runVerify rebuilds every SKU under DIR from the oldest usable base (record
// 1 when the log has it), checks each snapshot it passes against the
// replayed state, verifies the checksum of every snapshot file, and runs
// the invariant audit. It prints one JSON document holding a report per
// SKU, also for a SKU it cannot read (it goes on to the next), once every
// SKU is done; it fails (exit 1) when any SKU
// has a problem: a violation, corruption, or files it cannot read. Only an
// error listing DIR itself stops it (exit 2). A torn tail (a write in
// progress, or one the engine cuts at its next start) is reported but is
// not a failure, and neither is an empty wal directory (seckilld opens it
// as an empty SKU).
func runVerify(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	pos, err := parse(fs, args, 1)
	if err != nil {
		return err
	}
	dirs, err := skuDirs(pos[0])
	if err != nil {
		return err
	}
	run := verifyRunJSON{Dir: pos[0], SKUs: make([]verifyJSON, 0, len(dirs))}
	var failed []string
	var purchases []skuPurchases
	for _, dir := range dirs {
		report, err := verifyJSON{Dir: dir}, error(nil)
		if foreign := foreignLog(dir); foreign != "" {
			err = errors.New(foreign)
		} else {
			report, err = verifySKU(dir)
		}
		if err != nil {
			report.Problems = append(report.Problems, err.Error())
		}
		report.OK = len(report.Problems) == 0
		if report.Problems == nil {
			report.Problems = []string{}
		}
		run.SKUs = append(run.SKUs, report)
		if !report.OK {
			failed = append(failed, fmt.Sprintf("%s: %s", dir, joinErrors(report.Problems)))
		}
		if report.purchases != nil {
			purchases = append(purchases, *report.purchases)
		}
	}
	run.Campaigns = checkCampaigns(purchases)
	for _, c := range run.Campaigns {
		if !c.OK {
			failed = append(failed, fmt.Sprintf("campaign %s: %s", c.CampaignID, joinErrors(c.Problems)))
		}
	}
	run.OK = len(failed) == 0
	if err := writeJSON(stdout, run); err != nil {
		return err
	}
	if len(failed) > 0 {
		return &checkFailed{msg: "verify failed: " + joinErrors(failed)}
	}
	return nil
}

// verifyAttempts bounds the reads of one SKU: beside a running engine a
// snapshot can be pruned, and the log truncated, between two reads.
const verifyAttempts = 4

// verifySKU verifies one SKU dir, reading it again when the engine changed
// it underneath (a file gone, the log truncated past what was listed).
func verifySKU(dir string) (verifyJSON, error) {
	for attempt := 1; ; attempt++ {
		report, err := verifySKUOnce(dir)
		moved := errors.Is(err, recovery.ErrNoBase) || errors.Is(err, os.ErrNotExist)
		if !moved || attempt == verifyAttempts {
			return report, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// foreignLog describes a SKU folder's wal folder that holds files but no
// segment of a seckill log ("" otherwise, wal.Foreign): not a SKU to pass
// as verified with no records.
func foreignLog(dir string) string {
	logDir := skudir.Dir(dir).WAL()
	files, foreign := wal.Foreign(logDir)
	if !foreign {
		return ""
	}
	return fmt.Sprintf("not a seckill SKU: %s holds %d files and no seckill log segment (a name of 20 digits): give seckillctl verify a seckilld data dir, one of its SKU folders or its wal folder", logDir, files)
}

func verifySKUOnce(dir string) (verifyJSON, error) {
	report := verifyJSON{Dir: dir, CampaignID: filepath.Base(filepath.Dir(dir)), SKUID: filepath.Base(dir),
		Snapshots: []snapshotStatus{}}
	st, err := loadState(dir, loadOptions{verify: true})
	if err != nil {
		if log, lerr := readLog(skudir.LogOf(dir)); lerr == nil {
			report.Log = infoOf(log)
		}
		return report, err
	}
	report.Log, report.Problems = infoOf(st.log), st.problems
	if st.snapshots != nil {
		report.Snapshots = st.snapshots
	}
	report.ReplayedFrom = "record 1"
	if st.base != "" {
		report.ReplayedFrom = st.base
	}
	report.RecordsReplayed, report.StateIndex, report.StateHash = st.replayed, st.index, hashHex(st.m.Hash())
	d := st.m.Definition()
	if d.CampaignID != "" {
		if d.CampaignID != report.CampaignID || d.SKUID != report.SKUID {
			report.Problems = append(report.Problems, fmt.Sprintf("the log defines %s/%s, the directory is %s/%s",
				d.CampaignID, d.SKUID, report.CampaignID, report.SKUID))
		}
	}
	live := st.m.LivePurchases()
	report.purchases = &skuPurchases{dir: dir, campaignID: report.CampaignID, limit: d.PurchaseLimit, live: live,
		holds: purchase.Holds(d.SKUID, live, st.m.LiveEntries())}
	if st.m.Celled() {
		report.Cell = cellOf(st.m)
	}
	audit := st.m.Audit()
	report.Counts = countsOf(audit.Counts)
	for _, v := range audit.Violations {
		report.Problems = append(report.Problems, "invariant: "+v)
	}
	return report, nil
}

// skuDirs returns dir if it is a SKU dir (or a SKU's wal dir), else every
// SKU folder under it (skudir.List).
func skuDirs(dir string) ([]string, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	if skuDir := skudir.FromPath(dir); skuDir.HasWAL() {
		return []string{skuDir.String()}, nil
	}
	found, err := skudir.List(dir)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, errors.New(dir + ": no SKU here (want <data-dir>, <data-dir>/<campaign>/<sku> or its wal directory)")
	}
	dirs := make([]string, len(found))
	for i, d := range found {
		dirs[i] = d.String()
	}
	return dirs, nil
}
