package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/internal/timefmt"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

const t0 = 1_700_000_000_000 // ms

// ctl runs a command line in process and returns its exit status and output.
func ctl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func wantCode(t *testing.T, want int, args ...string) string {
	t.Helper()
	code, out, errOut := ctl(t, args...)
	if code != want {
		t.Fatalf("seckillctl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out
}

// fixture is a data dir with one SKU (c1/s1, 40 tokens): 60 reserves from
// 30 users (accepted, ALREADY_PURCHASED, SOLD_OUT), pays, cancels, late
// payments (refunds), a snapshot at record snapIndex, and more records
// after it. Times come from a fake clock starting at t0.
type fixture struct {
	dataDir, skuDir string
	snapIndex       uint64
	lastIndex       uint64
	hash            [32]byte
	key             [16]byte // the SKU's reservation id key
}

// id returns the reservation id of seq in the fixture's SKU.
func (f *fixture) id(seq uint32) string { return sku.FormatReservationID("c1", "s1", seq, f.key) }

var quiet = slog.New(slog.DiscardHandler)

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{dataDir: t.TempDir()}
	f.skuDir = filepath.Join(f.dataDir, "c1", "s1")
	var now atomic.Int64
	now.Store(t0)
	e, err := actors.Open(actors.Config{DataDir: f.dataDir, Logger: quiet, Clock: func() time.Time { return time.UnixMilli(now.Load()) },
		ExpiryInterval: time.Hour, SnapshotEvery: -1, SnapshotInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.Define(ctx, sku.Definition{CampaignID: "c1", SKUID: "s1", StartAt: t0, EndAt: t0 + 86_400_000,
		PaymentWindowMs: 60_000, SaleLimit: 40, ReleaseOnClose: true}))
	f.key = e.SKU("c1", "s1").Stats().Definition.IDKey
	phase := func(from, to int) {
		for i := from; i < to; i++ {
			now.Add(10)
			res, err := e.Reserve(ctx, "c1", "s1", fmt.Sprintf("req-%d", i), fmt.Sprintf("user-%d", i%30))
			must(err)
			id := res.Reservation.ReservationID
			if res.Outcome != sku.OutcomeAccepted {
				continue
			}
			switch i % 4 {
			case 1:
				_, err = e.Pay(ctx, id, fmt.Sprintf("pay-%d", i), 12_900)
			case 2:
				_, err = e.Cancel(ctx, id)
				if err == nil {
					_, err = e.Pay(ctx, id, fmt.Sprintf("late-%d", i), 12_900) // refund
				}
			}
			must(err)
		}
	}
	phase(0, 30)
	info, err := e.Snapshot(ctx, "c1", "s1")
	must(err)
	f.snapIndex = info.Index
	_, err = e.Cancel(ctx, f.id(1)) // made before the snapshot, closed after it
	must(err)
	phase(30, 60)
	f.hash, err = e.StateHash(ctx, "c1", "s1")
	must(err)
	f.lastIndex = e.SKU("c1", "s1").WALStats().Records
	must(e.Close())
	return f
}

func snapshotPath(f *fixture) string {
	return filepath.Join(f.skuDir, "snapshots", snapshot.Name(f.snapIndex))
}

// walDocument decodes what inspect wal prints: one JSON document (a stream
// of several does not decode) that holds a records array, byte for byte
// what writeJSON prints for it (its records are written one at a time).
func walDocument(t *testing.T, out string) walJSON {
	t.Helper()
	var doc walJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("inspect wal output is not one JSON document: %v\n%.500s", err, out)
	}
	if doc.Records == nil {
		t.Fatalf("inspect wal output has no records array:\n%.500s", out)
	}
	var again bytes.Buffer
	if err := writeJSON(&again, doc); err != nil {
		t.Fatal(err)
	}
	if again.String() != out {
		t.Fatalf("inspect wal output differs from writeJSON of the same document:\n%.500s\nwant:\n%.500s", out, again.String())
	}
	return doc
}

// walRecords decodes what inspect wal prints and returns its records.
func walRecords(t *testing.T, out string) []recordJSON {
	t.Helper()
	return walDocument(t, out).Records
}

// jsonLines decodes JSON lines (export --format jsonl), one object a line.
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		recs = append(recs, r)
	}
	return recs
}

func TestInspectWAL(t *testing.T) {
	f := newFixture(t)
	doc := walDocument(t, wantCode(t, 0, "inspect", "wal", f.skuDir))
	all := doc.Records
	if len(all) == 0 || all[0].Type != "DEFINE" || all[0].Index != 1 || all[len(all)-1].Index != f.lastIndex {
		t.Fatalf("%d records, first %+v, last %+v (want last index %d)", len(all), all[0], all[len(all)-1], f.lastIndex)
	}
	if doc.CampaignID != "c1" || doc.SKUID != "s1" || doc.Log.Dir != filepath.Join(f.skuDir, "wal") ||
		doc.Log.FirstIndex != 1 || doc.Log.LastIndex != f.lastIndex {
		t.Fatalf("inspect wal: %s/%s, log %+v", doc.CampaignID, doc.SKUID, doc.Log)
	}
	// The same from the wal dir, indented, and fields in a fixed order:
	// the record's, then its feed event's data.
	out := wantCode(t, 0, "inspect", "wal", filepath.Join(f.skuDir, "wal"), "--from", "2", "--to", "2")
	if want := "  \"records\": [\n    {\n      \"index\": 2,\n      \"type\": \"RESERVED\",\n" +
		"      \"at\": \"2023-11-14T22:13:20.010Z\",\n      \"at_ms\": 1700000000010,\n" +
		"      \"campaign_id\": \"c1\",\n      \"sku_id\": \"s1\",\n" +
		"      \"reservation_id\": \"" + f.id(1) + "\",\n      \"request_id\": \"req-0\",\n      \"user_id\": \"user-0\",\n" +
		"      \"token_id\": 1,\n      \"created_at\": \"2023-11-14T22:13:20.010Z\",\n"; !strings.HasPrefix(out, "{\n  \"campaign_id\": \"c1\",\n") ||
		!strings.Contains(out, want) || len(walRecords(t, out)) != 1 {
		t.Fatalf("record 2: %s", out)
	}
	// A CLOSED record has the names of its feed event's data
	// (seckill.reservation.closed): reason, token_released.
	var closed struct {
		Records []map[string]any `json:"records"`
	}
	if err := json.Unmarshal([]byte(wantCode(t, 0, "inspect", "wal", f.skuDir, "--reservation", "3")), &closed); err != nil {
		t.Fatal(err)
	}
	var sawClosed bool
	for _, r := range closed.Records {
		if r["type"] != "CLOSED" {
			continue
		}
		sawClosed = true
		if _, old := r["release"]; old || r["reason"] != "CANCELLED" || r["token_released"] == nil || r["reservation_id"] != f.id(3) {
			t.Fatalf("CLOSED record: %v", r)
		}
	}
	if !sawClosed {
		t.Fatalf("no CLOSED record of reservation 3: %v", closed.Records)
	}
	// Every record of reservation 3 (paid? i=2: cancelled then refunded).
	for _, id := range []string{f.id(3), "3"} {
		got := walRecords(t, wantCode(t, 0, "inspect", "wal", f.skuDir, "--reservation", id))
		var types []string
		for _, r := range got {
			types = append(types, r.Type)
			if r.ReservationID != f.id(3) {
				t.Fatalf("record of another reservation: %+v", r)
			}
		}
		if strings.Join(types, ",") != "RESERVED,CLOSED,REFUND_REQUIRED" {
			t.Fatalf("reservation 3: %v", types)
		}
	}
	// A user: both reservations' records and the rejections.
	for _, r := range walRecords(t, wantCode(t, 0, "inspect", "wal", f.skuDir, "--user", "user-1")) {
		if r.UserID != "" && r.UserID != "user-1" {
			t.Fatalf("record of another user: %+v", r)
		}
	}
	req := walRecords(t, wantCode(t, 0, "inspect", "wal", f.skuDir, "--request", "req-1"))
	if len(req) != 2 || req[0].Type != "RESERVED" || req[1].Type != "PAID" {
		t.Fatalf("request req-1: %+v", req)
	}
	// A filter that matches nothing: an empty array, not nothing.
	if got := walRecords(t, wantCode(t, 0, "inspect", "wal", f.skuDir, "--request", "no-such-request")); len(got) != 0 {
		t.Fatalf("request no-such-request: %+v", got)
	}
	wantCode(t, 2, "inspect", "wal", f.skuDir, "--reservation", "x~y")
	// An id no record holds is a mistyped filter, not "no such records".
	wantCode(t, 2, "inspect", "wal", f.skuDir, "--user", "user 1")
	wantCode(t, 2, "inspect", "wal", f.skuDir, "--request", strings.Repeat("r", 65))
	wantCode(t, 2, "inspect", "wal", filepath.Join(f.dataDir, "nope"))
	wantCode(t, 2, "inspect", "wal")
	wantCode(t, 2, "inspect", "log", f.skuDir)
}

// After the log is truncated, the records of a reservation made before the
// cut are still found by request and by user, through the snapshot.
func TestInspectWALAfterTruncation(t *testing.T) {
	f := newFixture(t)
	walDir := filepath.Join(f.skuDir, "wal")
	log, err := readLog(walDir)
	if err != nil {
		t.Fatal(err)
	}
	// Keep only the records after the snapshot, as the engine's truncation would.
	os.RemoveAll(walDir)
	if _, _, err := wal.CopyRange(walDir, log, f.snapIndex+1, f.lastIndex); err != nil {
		t.Fatal(err)
	}
	// A snapshot of another SKU copied into the folder, newer than its
	// own, names neither the SKU nor its users' reservations.
	placeForeignSnapshot(t, f)
	doc := walDocument(t, wantCode(t, 0, "inspect", "wal", f.skuDir))
	if all := doc.Records; all[0].Index != f.snapIndex+1 || doc.Log.FirstIndex != f.snapIndex+1 || doc.CampaignID != "c1" || doc.SKUID != "s1" {
		t.Fatalf("first record %+v, log %+v, %s/%s, want index %d of c1/s1", all[0], doc.Log, doc.CampaignID, doc.SKUID, f.snapIndex+1)
	}
	// Reservation 1 (req-0, user-0) was made before the snapshot and
	// cancelled after it.
	for _, filter := range [][]string{{"--request", "req-0"}, {"--user", "user-0"}, {"--reservation", "1"}} {
		var closed bool
		for _, r := range walRecords(t, wantCode(t, 0, append([]string{"inspect", "wal", f.skuDir}, filter...)...)) {
			closed = closed || r.Type == "CLOSED" && r.ReservationID == f.id(1)
		}
		if !closed {
			t.Fatalf("inspect wal %v: the CLOSED record of c1~s1~1 is missing", filter)
		}
	}
	os.Remove(filepath.Join(f.skuDir, "snapshots", snapshot.Name(f.lastIndex)))
	wantCode(t, 0, "verify", f.skuDir)
	// Without the snapshot the SKU cannot be rebuilt.
	os.Remove(snapshotPath(f))
	out := wantCode(t, 1, "verify", f.skuDir)
	if !strings.Contains(out, "no snapshot usable for records 1..") {
		t.Fatalf("verify without base: %s", out)
	}
}

// A record whose frame is whole (its checksum holds) but that does not
// decode fails inspect wal before any record is printed; the records
// before it are still there with --to.
func TestInspectWALUndecodable(t *testing.T) {
	f := newFixture(t)
	walDir := filepath.Join(f.skuDir, "wal")
	frame, err := wal.AppendFrame(nil, 99, f.lastIndex+1, []byte("no such record type"))
	if err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(walDir, fmt.Sprintf("%020d", f.lastIndex+1))
	if err := os.WriteFile(seg, append(binary.AppendUvarint(nil, uint64(len(frame))), frame...), 0o640); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := ctl(t, "inspect", "wal", f.skuDir)
	if code != exitFailed || out != "" || !strings.Contains(errOut, fmt.Sprintf("record %d", f.lastIndex+1)) {
		t.Fatalf("inspect wal: exit %d\nstdout:\n%.300s\nstderr:\n%s", code, out, errOut)
	}
	if recs := walRecords(t, wantCode(t, exitOK, "inspect", "wal", f.skuDir, "--to", fmt.Sprint(f.lastIndex))); len(recs) != int(f.lastIndex) {
		t.Fatalf("inspect wal --to %d: %d records", f.lastIndex, len(recs))
	}
}

func TestInspectSnapshot(t *testing.T) {
	f := newFixture(t)
	var got snapshotJSON
	if err := json.Unmarshal([]byte(wantCode(t, 0, "inspect", "snapshot", snapshotPath(f))), &got); err != nil {
		t.Fatal(err)
	}
	if got.Index != f.snapIndex || got.CampaignID != "c1" || got.Checksum != "ok" || got.Counts == nil ||
		got.Counts.Reservations != got.Reservations || got.Definition.SaleLimit != 40 || got.FormatVersion != 1 {
		t.Fatalf("inspect snapshot: %+v", got)
	}
	bad := filepath.Join(t.TempDir(), "bad.snap")
	b, _ := os.ReadFile(snapshotPath(f))
	b[len(b)/2] ^= 1
	os.WriteFile(bad, b, 0o640)
	got = snapshotJSON{}
	json.Unmarshal([]byte(wantCode(t, 1, "inspect", "snapshot", bad)), &got)
	if got.Checksum != "bad" || got.Error == "" || got.Index != f.snapIndex {
		t.Fatalf("corrupt snapshot: %+v", got)
	}
	wantCode(t, 2, "inspect", "snapshot", filepath.Join(t.TempDir(), "missing.snap"))
	// A folder, a SKU's included: said in the operator's terms.
	if code, _, errOut := ctl(t, "inspect", "snapshot", f.skuDir); code != exitUsage || !strings.Contains(errOut, "is a folder: name one snapshot file in it") {
		t.Fatalf("inspect snapshot of a folder: exit %d\n%s", code, errOut)
	}
	// A file that is not a snapshot (or whose header is gone): nothing on
	// stdout, the reason on stderr.
	for _, b := range [][]byte{[]byte("hello\n"), b[:20], append(make([]byte, 8), b[8:]...)} {
		notSnap := filepath.Join(t.TempDir(), "not.snap")
		os.WriteFile(notSnap, b, 0o640)
		code, out, errOut := ctl(t, "inspect", "snapshot", notSnap)
		if code != exitFailed || out != "" || !strings.Contains(errOut, notSnap+": not a snapshot, or its header is damaged") {
			t.Fatalf("inspect snapshot of %q...: exit %d\nstdout:\n%s\nstderr:\n%s", b[:min(len(b), 8)], code, out, errOut)
		}
	}
}

func TestVerify(t *testing.T) {
	f := newFixture(t)
	out := wantCode(t, 0, "verify", f.skuDir)
	if run := verifyRun(t, out); run.Dir != f.skuDir || !run.OK {
		t.Fatalf("verify: dir %q, ok %v", run.Dir, run.OK)
	}
	if !strings.HasPrefix(out, "{\n  \"dir\": ") { // indented, for a human reading it
		t.Fatalf("verify output is not indented:\n%.200s", out)
	}
	rep := verifySKUReport(t, out)
	if !rep.OK || rep.StateHash != hashHex(f.hash) || rep.StateIndex != f.lastIndex || len(rep.Snapshots) != 1 ||
		rep.Snapshots[0].Status != "matches the log" || rep.Counts.SaleLimit != 40 {
		t.Fatalf("verify: %+v", rep)
	}
	for _, dir := range []string{f.dataDir, filepath.Join(f.skuDir, "wal")} { // every SKU of a data dir; a wal dir
		if got := verifySKUReport(t, wantCode(t, 0, "verify", dir)); got.StateHash != rep.StateHash || got.Dir != f.skuDir {
			t.Fatalf("verify %s: %+v", dir, got)
		}
	}

	// A damaged snapshot fails verify (the log alone still rebuilds the SKU),
	// and the report says why.
	b, _ := os.ReadFile(snapshotPath(f))
	os.WriteFile(snapshotPath(f), b[:len(b)-3], 0o640)
	if got := verifySKUReport(t, wantCode(t, 1, "verify", f.skuDir)); got.OK || len(got.Snapshots) != 1 ||
		!strings.HasPrefix(got.Snapshots[0].Status, "corrupt") || !strings.Contains(strings.Join(got.Problems, " "), "corrupt") {
		t.Fatalf("damaged snapshot: %+v", got)
	}
	os.WriteFile(snapshotPath(f), b, 0o640)

	// A flipped byte in the middle of the log is corruption, not a torn tail.
	seg := filepath.Join(f.skuDir, "wal", fmt.Sprintf("%020d", 1))
	w, _ := os.ReadFile(seg)
	c := bytes.Clone(w)
	c[len(c)/3] ^= 0x20
	os.WriteFile(seg, c, 0o640)
	if got := verifySKUReport(t, wantCode(t, 1, "verify", f.skuDir)); got.OK || !strings.Contains(strings.Join(got.Problems, " "), "log corrupt") {
		t.Fatalf("flipped byte in the log: %+v", got)
	}
	// A cut last record is a torn tail: reported, not a failure.
	os.WriteFile(seg, w[:len(w)-5], 0o640)
	rep = verifySKUReport(t, wantCode(t, 0, "verify", f.skuDir))
	if rep.Log.TornTailBytes == 0 || rep.StateIndex != f.lastIndex-1 {
		t.Fatalf("torn tail: %+v", rep.Log)
	}
	// Nothing to verify, or a directory that cannot be read: exit 2 and
	// nothing on stdout.
	for _, dir := range []string{t.TempDir(), filepath.Join(f.dataDir, "missing")} {
		if out := wantCode(t, 2, "verify", dir); out != "" {
			t.Fatalf("verify %s: stdout %q", dir, out)
		}
	}
}

// smallSKU makes a SKU with a few records in a data dir of its own and
// moves it to dataDir/campaignID/skuID; it returns the SKU dir.
func smallSKU(t *testing.T, dataDir, campaignID, skuID string) string {
	t.Helper()
	own := t.TempDir()
	e, err := actors.Open(actors.Config{DataDir: own, Logger: quiet, ExpiryInterval: time.Hour, SnapshotEvery: -1, SnapshotInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now().UnixMilli()
	if err := e.Define(ctx, sku.Definition{CampaignID: campaignID, SKUID: skuID, StartAt: now - 60_000, EndAt: now + 86_400_000,
		PaymentWindowMs: 600_000, SaleLimit: 100, ReleaseOnClose: true}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := e.Reserve(ctx, campaignID, skuID, fmt.Sprintf("req-%d", i), fmt.Sprintf("user-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(dataDir, campaignID, skuID)
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(own, campaignID, skuID), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// verifyRun decodes what verify prints: one JSON document (a stream of
// several does not decode), with a report per SKU, whose ok is true
// exactly when every SKU's is, and every campaign check's.
func verifyRun(t *testing.T, out string) verifyRunJSON {
	t.Helper()
	var run verifyRunJSON
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatalf("verify output is not one JSON document: %v\n%s", err, out)
	}
	if len(run.SKUs) == 0 {
		t.Fatalf("verify output has no SKU reports:\n%s", out)
	}
	allOK := true
	for _, r := range run.SKUs {
		allOK = allOK && r.OK
	}
	for _, c := range run.Campaigns {
		allOK = allOK && c.OK
	}
	if run.OK != allOK {
		t.Fatalf("verify output: ok %v, but every SKU and campaign ok: %v\n%s", run.OK, allOK, out)
	}
	return run
}

// verifySKUReport decodes what verify prints for a single SKU and returns
// that SKU's report.
func verifySKUReport(t *testing.T, out string) verifyJSON {
	t.Helper()
	run := verifyRun(t, out)
	if len(run.SKUs) != 1 {
		t.Fatalf("verify output: %d SKU reports, want 1\n%s", len(run.SKUs), out)
	}
	return run.SKUs[0]
}

// An empty wal/ (seckilld stopped between creating it and writing its
// first segment) is an empty SKU, as seckilld opens it: no record, the
// next one is 1.
func TestEmptyWAL(t *testing.T) {
	dataDir := t.TempDir()
	skuDir := filepath.Join(dataDir, "aaa", "broken")
	walDir := filepath.Join(skuDir, "wal")
	if err := os.MkdirAll(walDir, 0o750); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{dataDir, skuDir, walDir} {
		if r := verifySKUReport(t, wantCode(t, exitOK, "verify", dir)); r.CampaignID != "aaa" || r.SKUID != "broken" || !r.OK || r.Log.Segments != 0 ||
			r.Log.FirstIndex != 1 || r.Log.LastIndex != 0 || r.RecordsReplayed != 0 || r.Counts != (countsJSON{}) {
			t.Fatalf("verify %s: %+v", dir, r)
		}
	}
	for _, dir := range []string{skuDir, walDir} {
		if doc := walDocument(t, wantCode(t, exitOK, "inspect", "wal", dir)); len(doc.Records) != 0 ||
			doc.CampaignID != "aaa" || doc.SKUID != "broken" || doc.Log.FirstIndex != 1 || doc.Log.LastIndex != 0 {
			t.Fatalf("inspect wal %s: %+v", dir, doc)
		}
	}
	if out := wantCode(t, exitOK, "export", skuDir); strings.TrimSpace(out) != strings.Join(exportColumns, ",") {
		t.Fatalf("export of an empty SKU: %q", out)
	}
	// Nothing to snapshot or restore: usage errors, not failed checks.
	if out := wantCode(t, exitUsage, "snapshot", skuDir); out != "" {
		t.Fatalf("snapshot of an empty SKU: %q", out)
	}
	if out := wantCode(t, exitUsage, "restore", "--from", skuDir, "--to", t.TempDir()); out != "" {
		t.Fatalf("restore of an empty SKU: %q", out)
	}
	// A directory that is neither a SKU's nor a log's is still refused.
	wantCode(t, exitUsage, "inspect", "wal", filepath.Join(dataDir, "aaa"))

	// seckilld opens it as an empty log too: an undefined SKU (not served)
	// whose definition becomes record 1.
	e, err := actors.Open(actors.Config{DataDir: dataDir, Logger: quiet, ExpiryInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if e.SKU("aaa", "broken") != nil {
		t.Fatal("seckilld serves aaa/broken before its definition")
	}
	now := time.Now().UnixMilli()
	if err := e.Define(context.Background(), sku.Definition{CampaignID: "aaa", SKUID: "broken", StartAt: now, EndAt: now + 60_000,
		PaymentWindowMs: 60_000, SaleLimit: 1}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if recs := walRecords(t, wantCode(t, exitOK, "inspect", "wal", skuDir)); len(recs) != 1 ||
		recs[0].Index != 1 || recs[0].Type != "DEFINE" || recs[0].Definition == nil || recs[0].Definition.SKUID != "broken" {
		t.Fatalf("aaa/broken after its definition: %+v", recs)
	}
}

// A data dir holding an empty wal/, a SKU with a corrupt record mid-log,
// one that cannot be read and a good one: verify reports every SKU and
// fails (exit 1) for the two damaged ones only.
func TestVerifyDataDir(t *testing.T) {
	f := newFixture(t) // c1/s1, good
	if err := os.MkdirAll(filepath.Join(f.dataDir, "aaa", "broken", "wal"), 0o750); err != nil {
		t.Fatal(err)
	}
	corrupt := smallSKU(t, f.dataDir, "bbb", "corrupt")
	seg := filepath.Join(corrupt, "wal", fmt.Sprintf("%020d", 1))
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/3] ^= 0x20
	if err := os.WriteFile(seg, b, 0o640); err != nil {
		t.Fatal(err)
	}
	unreadable := smallSKU(t, f.dataDir, "bbb", "unreadable")
	if err := os.WriteFile(filepath.Join(unreadable, "snapshots"), nil, 0o640); err != nil { // a file, not a directory
		t.Fatal(err)
	}

	code, out, errOut := ctl(t, "verify", f.dataDir)
	if code != exitFailed {
		t.Fatalf("verify: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitFailed, out, errOut)
	}
	run := verifyRun(t, out)
	if run.OK || run.Dir != f.dataDir {
		t.Fatalf("verify %s: dir %q, ok %v", f.dataDir, run.Dir, run.OK)
	}
	reps := run.SKUs
	var got []string
	for _, r := range reps {
		got = append(got, fmt.Sprintf("%s/%s ok=%v", r.CampaignID, r.SKUID, r.OK))
	}
	if want := "aaa/broken ok=true, bbb/corrupt ok=false, bbb/unreadable ok=false, c1/s1 ok=true"; strings.Join(got, ", ") != want {
		t.Fatalf("verify reports: %s, want %s\n%s", strings.Join(got, ", "), want, out)
	}
	if !strings.Contains(strings.Join(reps[1].Problems, " "), "log corrupt") ||
		!strings.Contains(strings.Join(reps[2].Problems, " "), "not a directory") || reps[3].StateHash != hashHex(f.hash) {
		t.Fatalf("reports: %+v", reps[1:])
	}
	for _, dir := range []string{corrupt, unreadable} {
		if !strings.Contains(errOut, dir) {
			t.Fatalf("stderr does not name %s: %s", dir, errOut)
		}
	}
	if strings.Contains(out, `"snapshots": null`) {
		t.Errorf("a report lists its snapshots as null, not []:\n%s", out)
	}
	// The data dir itself unreadable is an I/O error (exit 2).
	wantCode(t, exitUsage, "verify", filepath.Join(f.dataDir, "missing"))
}

func TestSnapshotOffline(t *testing.T) {
	f := newFixture(t)
	// A SKU folder that does not exist (a mistyped campaign or SKU): said
	// so, and nothing is created.
	missing := filepath.Join(filepath.Dir(filepath.Dir(f.skuDir)), "c1", "no-such-sku")
	if code, _, errOut := ctl(t, "snapshot", missing); code != exitUsage || !strings.Contains(errOut, missing+" holds no SKU (no wal folder)") {
		t.Fatalf("snapshot of a missing SKU folder: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("snapshot of a missing SKU folder created it: %v", err)
	}
	var got snapshotWrittenJSON
	json.Unmarshal([]byte(wantCode(t, 0, "snapshot", f.skuDir)), &got)
	if got.Index != f.lastIndex || got.StateHash != hashHex(f.hash) || filepath.Base(got.Path) != snapshot.Name(f.lastIndex) {
		t.Fatalf("offline snapshot: %+v", got)
	}
	rep := verifySKUReport(t, wantCode(t, 0, "verify", f.skuDir))
	if len(rep.Snapshots) != 2 || rep.Snapshots[1].Status != "matches the log" {
		t.Fatalf("after offline snapshot: %+v", rep.Snapshots)
	}
	wantCode(t, 2, "snapshot")
}

func TestSnapshotOnline(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"UNAUTHORIZED"}`)
			return
		}
		if r.Method != http.MethodPost || r.URL.Path != "/admin/campaigns/c1/skus/s1/snapshot" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":"NOT_FOUND"}`)
			return
		}
		fmt.Fprint(w, `{"campaign_id":"c1","sku_id":"s1","snapshot":{"index":7}}`)
	}))
	defer srv.Close()
	out := wantCode(t, 0, "snapshot", "--server", srv.URL, "--admin-token", "tok", "--campaign", "c1", "--sku", "s1")
	if !strings.Contains(out, `"index": 7`) {
		t.Fatalf("online snapshot: %s", out)
	}
	// A refusal is not a failed check: exit 2, nothing on stdout, the
	// server's answer and a hint on stderr.
	for _, c := range []struct{ token, sku, want string }{
		{"wrong", "s1", "401 Unauthorized: {\"error\":\"UNAUTHORIZED\"} (the admin token was refused"},
		{"tok", "nope", "404 Not Found: {\"error\":\"NOT_FOUND\"} (the server has no SKU c1/nope)"},
	} {
		code, out, errOut := ctl(t, "snapshot", "--server", srv.URL, "--admin-token", c.token, "--campaign", "c1", "--sku", c.sku)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) {
			t.Fatalf("snapshot --admin-token %s --sku %s: exit %d\nstdout:\n%s\nstderr:\n%s", c.token, c.sku, code, out, errOut)
		}
	}
	t.Setenv("SECKILL_ADMIN_TOKEN", "tok")
	wantCode(t, 0, "snapshot", "--server", srv.URL, "--campaign", "c1", "--sku", "s1")
	wantCode(t, 2, "snapshot", "--server", srv.URL, "--campaign", "c1")
	srv.Close()
	wantCode(t, 2, "snapshot", "--server", srv.URL, "--campaign", "c1", "--sku", "s1")
	if calls.Load() != 4 {
		t.Fatalf("%d calls", calls.Load())
	}
}

// restoreAndOpen restores, checks the restored dir with verify, opens an
// engine on it, and returns the engine's state hash and next record index.
func restoreAndOpen(t *testing.T, args ...string) (restoreJSON, [32]byte, uint64) {
	t.Helper()
	var got restoreJSON
	json.Unmarshal([]byte(wantCode(t, 0, append([]string{"restore"}, args...)...)), &got)
	wantCode(t, 0, "verify", got.SKUDir)
	e, err := actors.Open(actors.Config{DataDir: filepath.Dir(filepath.Dir(got.SKUDir)), Logger: quiet, ExpiryInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	h, err := e.StateHash(context.Background(), "c1", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Pause(context.Background(), "c1", "s1"); err != nil {
		t.Fatal(err)
	}
	return got, h, e.SKU("c1", "s1").WALStats().Records
}

func TestRestore(t *testing.T) {
	f := newFixture(t)
	// The whole log: the same state, and the log continues after it.
	got, h, appended := restoreAndOpen(t, "--from", f.skuDir, "--to", t.TempDir())
	if got.History != feed.RootHistory(f.key) {
		t.Fatalf("restore to the end: history %q", got.History)
	}
	if h != f.hash || got.Index != f.lastIndex || got.StateHash != hashHex(f.hash) || got.LogFirst != 1 || got.LogLast != f.lastIndex || appended != 1 {
		t.Fatalf("restore to the end: %+v (appended %d)", got, appended)
	}
	// A point in the past, by index: the state the log had there.
	st, err := loadState(f.skuDir, loadOptions{untilIndex: 20})
	if err != nil {
		t.Fatal(err)
	}
	got, h, _ = restoreAndOpen(t, "--from", f.skuDir, "--to", t.TempDir(), "--until-index", "20")
	if got.Index != 20 || h != st.m.Hash() || got.LogLast != 20 {
		t.Fatalf("restore to 20: %+v", got)
	}
	// A restore to an earlier point starts a new feed history after it;
	// a restore to the end keeps the source's.
	root := feed.RootHistory(f.key)
	if got.History == root || len(got.History) != 16 {
		t.Fatalf("restore to 20: history %q, the source's is %q", got.History, root)
	}
	chain, err := feed.LoadHistory(got.SKUDir, f.key)
	if err != nil || chain.At(20) != root || chain.At(21) != got.History {
		t.Fatalf("restored chain %+v, %v", chain, err)
	}
	if fork, err := chain.Check(root, 21); !errors.Is(err, feed.ErrDiverged) || fork != 20 {
		t.Fatalf("a source cursor beyond the fork: %d, %v", fork, err)
	}
	again, _, _ := restoreAndOpen(t, "--from", got.SKUDir, "--to", t.TempDir(), "--until-index", "10")
	chain, err = feed.LoadHistory(again.SKUDir, f.key)
	if err != nil || chain.At(11) != again.History || len(chain.Abandoned) != 1 || chain.Abandoned[0].History != got.History {
		t.Fatalf("a fork of a fork: %+v, %v", chain, err)
	}
	if _, err := chain.Check(got.History, 21); !errors.Is(err, feed.ErrDiverged) {
		t.Fatalf("the abandoned fork's cursor: %v", err)
	}
	// By time: records decided at or before it.
	at := timefmt.OptionalMillis(t0 + 100)
	got, _, _ = restoreAndOpen(t, "--from", f.skuDir, "--to", t.TempDir(), "--until-time", at)
	if got.LastRecordAt > at || got.Index == 0 || got.Index >= f.lastIndex {
		t.Fatalf("restore to %s: %+v", at, got)
	}
	// From a lone snapshot file: its state, and an empty log after it.
	got, _, _ = restoreAndOpen(t, "--from", snapshotPath(f), "--to", t.TempDir())
	if got.Index != f.snapIndex || got.LogFirst != f.snapIndex+1 || got.LogLast != f.snapIndex {
		t.Fatalf("restore from file: %+v", got)
	}
	to := t.TempDir()
	wantCode(t, 0, "restore", "--from", f.skuDir, "--to", to)
	wantCode(t, 2, "restore", "--from", f.skuDir, "--to", to) // exists
	wantCode(t, 2, "restore", "--from", f.skuDir, "--to", t.TempDir(), "--until-index", "3", "--until-time", "0")
	wantCode(t, 2, "restore", "--from", snapshotPath(f), "--to", t.TempDir(), "--until-index", "3")
	wantCode(t, 2, "restore", "--from", f.skuDir, "--to", t.TempDir(), "--until-index", fmt.Sprint(f.lastIndex+1))
	wantCode(t, 2, "restore", "--to", t.TempDir())
	// Every restore warns that the copy is a fork: the same id key, so the
	// same reservation ids as the source.
	code, out, errOut := ctl(t, "restore", "--from", f.skuDir, "--to", t.TempDir())
	json.Unmarshal([]byte(out), &got)
	if code != exitOK || !strings.Contains(errOut, "warning: "+got.SKUDir+" is a fork of c1/s1 as of record "+fmt.Sprint(f.lastIndex)) ||
		!strings.Contains(errOut, "issues the same reservation ids as the") || !strings.Contains(errOut, "The copy is not paused") ||
		!strings.Contains(errOut, `curl -X POST -H "Authorization: Bearer $T" $B/admin/campaigns/c1/skus/s1/pause`) {
		t.Fatalf("restore: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// A copy of a paused SKU starts paused, and the warning says so.
	paused, _, _ := restoreAndOpen(t, "--from", f.skuDir, "--to", t.TempDir()) // pauses the copy
	code, out, errOut = ctl(t, "restore", "--from", paused.SKUDir, "--to", t.TempDir())
	if code != exitOK || !strings.Contains(errOut, "The copy is paused (the source was, at that point) and starts paused") {
		t.Fatalf("restore of a paused SKU: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// A point before the definition: nothing to restore, a usage error.
	to = t.TempDir()
	code, out, errOut = ctl(t, "restore", "--from", f.skuDir, "--to", to, "--until-time", "2000-01-01T00:00:00Z")
	if code != exitUsage || out != "" || strings.Contains(errOut, "warning") || !strings.Contains(errOut, "no definition at --until-time 2000-01-01T00:00:00.000Z (its first record, 1, is at 2023-11-14T22:13:20.000Z): nothing to restore") {
		t.Fatalf("restore before the definition: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if entries, _ := os.ReadDir(to); len(entries) != 0 {
		t.Fatalf("restore before the definition wrote %v", entries)
	}
}

// TestRestoreUntilTimeAtTheEpoch: --until-time 0 (or 1970-01-01T00:00:00Z,
// or any time before it) names a point before every record, so there is
// nothing to restore; it must not be read as "no --until-time" and restore
// the whole log.
func TestRestoreUntilTimeAtTheEpoch(t *testing.T) {
	f := newFixture(t)
	for _, at := range []string{"0", "1970-01-01T00:00:00Z", "1970-01-01T01:00:00+01:00", "-5", "1969-12-31T23:59:59Z"} {
		to := t.TempDir()
		code, out, errOut := ctl(t, "restore", "--from", f.skuDir, "--to", to, "--until-time", at)
		if code != exitUsage || out != "" || strings.Contains(errOut, "warning") || !strings.Contains(errOut, "nothing to restore") {
			t.Fatalf("restore --until-time %s: exit %d\nstdout:\n%s\nstderr:\n%s", at, code, out, errOut)
		}
		if entries, _ := os.ReadDir(to); len(entries) != 0 {
			t.Fatalf("restore --until-time %s wrote %v", at, entries)
		}
	}
}

func TestExport(t *testing.T) {
	f := newFixture(t)
	rows, err := csv.NewReader(strings.NewReader(wantCode(t, 0, "export", f.skuDir, "--format", "csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	st, _ := loadState(f.skuDir, loadOptions{})
	n := int(st.m.Counts().Reservations)
	if len(rows) != n+1 || strings.Join(rows[0], ",") != strings.Join(exportColumns, ",") {
		t.Fatalf("%d rows for %d reservations; header %v", len(rows), n, rows[0])
	}
	// Reservation 3 was cancelled and then paid late: a refund mark.
	if r := rows[3]; r[0] != f.id(3) || r[4] != "CLOSED" || r[5] != "CANCELLED" || r[13] != "true" || r[14] != "late-2" {
		t.Fatalf("row of reservation 3: %v", r)
	}
	// JSON lines are the service's view of each reservation (the names of
	// GET /v1/reservations/{id}: closed_reason) and the reconciliation's
	// fields.
	lines := jsonLines(t, wantCode(t, 0, "export", f.skuDir, "--format", "jsonl"))
	if len(lines) != n || lines[1]["state"] != "PAID" || lines[1]["payment_id"] != "pay-1" || lines[1]["amount"] != 12900.0 {
		t.Fatalf("jsonl: %d lines, second %v", len(lines), lines[1])
	}
	if third := lines[2]; third["closed_reason"] != "CANCELLED" || third["close_reason"] != nil || third["refund_required"] != true ||
		third["reservation_id"] != f.id(3) {
		t.Fatalf("jsonl of reservation 3: %v", third)
	}
	wantCode(t, 2, "export", f.skuDir, "--format", "xml")
	wantCode(t, 2, "export")
}

func TestUsage(t *testing.T) {
	wantCode(t, 2)
	wantCode(t, 2, "frobnicate")
	if out := wantCode(t, 0, "help"); !strings.Contains(out, "seckillctl verify DIR") {
		t.Fatalf("help: %s", out)
	}
	_ = wal.ErrCorrupt
}

// The commands that write into a data dir refuse to while an engine runs
// on it (its lock), with nothing on stdout and nothing written, and work
// once it has stopped; a copy outside any data dir needs no lock.
func TestWritesRefusedBesideARunningEngine(t *testing.T) {
	f := newFixture(t)
	e, err := actors.Open(actors.Config{DataDir: f.dataDir, Logger: quiet, ExpiryInterval: time.Hour,
		SnapshotEvery: -1, SnapshotInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	snaps := func() int {
		entries, err := os.ReadDir(filepath.Join(f.skuDir, "snapshots"))
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	before := snaps()
	dataDir, err := filepath.EvalSymlinks(f.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	// The SKU is inside the running engine's data dir, which the restore
	// writes into: each is refused, naming the data dir.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"snapshot", f.skuDir}, "data dirs nested: " + filepath.Join(dataDir, "c1", "s1") + " is inside " + dataDir + ", the data dir of a running engine"},
		{[]string{"restore", "--from", f.skuDir, "--to", f.dataDir}, "data dir in use by another engine"},
	} {
		code, out, errOut := ctl(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("seckillctl %s beside a running engine: exit %d\nstdout: %q\nstderr: %s\nwant %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
	// The same SKU through a symlink, to the SKU or to its campaign.
	links := t.TempDir()
	if err := os.Symlink(f.skuDir, filepath.Join(links, "sku")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(f.skuDir), filepath.Join(links, "campaign")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(links, "sku"), filepath.Join(links, "campaign", "s1")} {
		if code, out, errOut := ctl(t, "snapshot", p); code != 2 || out != "" || !strings.Contains(errOut, "is inside "+dataDir) {
			t.Errorf("seckillctl snapshot %s (a link) beside a running engine: exit %d\nstdout: %q\nstderr: %s", p, code, out, errOut)
		}
	}
	if n := snaps(); n != before {
		t.Errorf("snapshots beside a running engine: %d files, had %d", n, before)
	}
	// The source SKU of a restore may be live: only the target is locked.
	other := t.TempDir()
	lock, err := actors.LockDataDir(other)
	if err != nil {
		t.Fatal(err) // taken and held by this test: restore must refuse
	}
	if code, _, errOut := ctl(t, "restore", "--from", f.skuDir, "--to", other); code != 2 || !strings.Contains(errOut, "in use") {
		t.Errorf("restore into a locked data dir: exit %d: %s", code, errOut)
	}
	// The lock's file must outlive the child: a lock dropped unreferenced is
	// closed by its finalizer at the next garbage collection, and a loaded
	// machine's collection came before the child tried.
	runtime.KeepAlive(lock)
	wantCode(t, 0, "restore", "--from", f.skuDir, "--to", t.TempDir())
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, 0, "snapshot", f.skuDir)
	if n := snaps(); n != before+1 {
		t.Errorf("snapshots after the engine stopped: %d files, want %d", n, before+1)
	}
	// The lock is on the directory itself: no file was left in it.
	if _, err := os.Stat(filepath.Join(f.dataDir, "LOCK")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a lock file in the data dir: %v", err)
	}
}

// A whole snapshot beyond the end of the log proves the log lost durable
// records: verify fails (exit 1) and says so.
func TestVerifyShortLogBehindASnapshot(t *testing.T) {
	f := newFixture(t)
	segs, err := wal.Segments(filepath.Join(f.skuDir, "wal"))
	if err != nil || len(segs) != 1 {
		t.Fatalf("segments: %v %v", segs, err)
	}
	st, err := os.Stat(segs[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(segs[0].Path, st.Size()/4); err != nil {
		t.Fatal(err)
	}
	rep := verifySKUReport(t, wantCode(t, 1, "verify", f.skuDir))
	if rep.OK || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "durable records are missing from the log") {
		t.Fatalf("verify of a log shorter than its snapshot: ok %v, problems %q", rep.OK, rep.Problems)
	}
	// The commands that rebuild the state refuse it too, as seckilld does
	// (recovery.Plan); the snapshot file itself can still be restored.
	for _, args := range [][]string{{"export", f.skuDir}, {"restore", "--from", f.skuDir, "--to", t.TempDir()}} {
		code, out, errOut := ctl(t, args...)
		if code != exitFailed || out != "" || !strings.Contains(errOut, "durable records are missing from the log") {
			t.Fatalf("%v on a short log: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
		}
	}
	wantCode(t, 0, "restore", "--from", snapshotPath(f), "--to", t.TempDir())
}

// A SKU folder whose wal folder is gone but whose snapshots remain is
// reported by verify (exit 1), not skipped.
func TestVerifyLostWALFolder(t *testing.T) {
	f := newFixture(t)
	if err := os.RemoveAll(filepath.Join(f.skuDir, "wal")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := ctl(t, "verify", f.dataDir)
	if code != 1 || !strings.Contains(out, f.skuDir) {
		t.Fatalf("verify of a data dir with a SKU whose log is gone: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	run := verifyRun(t, out)
	if run.OK || len(run.SKUs) != 1 || run.SKUs[0].OK || len(run.SKUs[0].Problems) != 1 ||
		!strings.Contains(run.SKUs[0].Problems[0], "has snapshots but no wal folder") {
		t.Fatalf("verify report: %+v", run)
	}
}

// --help (or -h) on any command prints that command's usage on stdout and
// exits 0; --version prints the build's version line and exits 0.
func TestHelpAndVersion(t *testing.T) {
	for _, cmd := range []string{"inspect", "verify", "snapshot", "restore", "export"} {
		for _, flag := range []string{"--help", "-h"} {
			code, out, errOut := ctl(t, cmd, flag)
			if code != exitOK || !strings.Contains(out, "seckillctl "+cmd) || errOut != "" {
				t.Errorf("%s %s: exit %d, stdout %q, stderr %q", cmd, flag, code, out, errOut)
			}
		}
	}
	if _, out, _ := ctl(t, "verify", "--help"); !strings.Contains(out, "whole data dir") {
		t.Errorf("verify's usage does not say it takes a whole data dir:\n%s", out)
	}
	for _, sub := range []string{"publish", "return", "write-off"} { // its usage only
		code, out, _ := ctl(t, "cells", sub, "--help")
		lines := strings.Count(out, "\n  seckillctl ")
		if code != exitOK || !strings.Contains(out, "seckillctl cells "+sub+" ") || lines != 1 || strings.Contains(out, "DIR is") {
			t.Errorf("cells %s --help: exit %d, %d commands, stdout %q", sub, code, lines, out)
		}
	}
	// cells takes no DIR: its usage has no note on DIR, but the exit codes.
	if code, out, _ := ctl(t, "cells", "--help"); code != exitOK || strings.Count(out, "\n  seckillctl cells ") != 3 ||
		strings.Contains(out, "DIR is") || !strings.Contains(out, "Exit status") {
		t.Errorf("cells --help: exit %d, stdout %q", code, out)
	}
	if _, out, _ := ctl(t, "export", "--help"); !strings.Contains(out, "DIR is") {
		t.Errorf("export --help lacks the note on DIR: %q", out)
	}
	if code, out, _ := ctl(t, "--version"); code != exitOK || !strings.HasPrefix(out, "seckillctl ") || !strings.Contains(out, "go1.") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}

// An unknown command or subcommand exits 2 and names it on stderr,
// whatever flags follow (--help and --version answer only commands that
// exist), with the usage around it; stdout stays empty.
func TestUnknownCommandWhateverFlags(t *testing.T) {
	for _, c := range []struct {
		args       []string
		name, then string
	}{
		{[]string{"nonsense"}, `"nonsense"`, "seckillctl verify DIR"},
		{[]string{"nonsense", "--help"}, `"nonsense"`, "seckillctl verify DIR"},
		{[]string{"nonsense", "-h"}, `"nonsense"`, "seckillctl verify DIR"},
		{[]string{"nonsense", "--version"}, `"nonsense"`, "seckillctl verify DIR"},
		{[]string{"-x", "--help"}, `"-x"`, "seckillctl verify DIR"},
		{[]string{"cells", "nonsense", "--help"}, `"cells nonsense"`, "seckillctl cells write-off"},
		{[]string{"inspect", "nope", "-h"}, `"inspect nope"`, "seckillctl inspect snapshot FILE"},
		{[]string{"lottery", "draw", "--help"}, `"lottery draw"`, "seckillctl lottery verify DIR"},
	} {
		code, out, errOut := ctl(t, c.args...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errOut, "seckillctl: unknown command "+c.name+"\n") ||
			!strings.Contains(errOut, c.then) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", c.args, code, out, errOut)
		}
	}
	// A command that takes an operand is not read as a subcommand.
	if code, out, _ := ctl(t, "snapshot", "some-dir", "--help"); code != exitOK || !strings.Contains(out, "seckillctl snapshot DIR") {
		t.Errorf("snapshot DIR --help: exit %d, %q", code, out)
	}
	if code, out, _ := ctl(t, "inspect", "wal", "--help"); code != exitOK || strings.Count(out, "\n  seckillctl ") != 1 {
		t.Errorf("inspect wal --help: exit %d, %q", code, out)
	}
}

// TestVerifyRefusesAFolderWithoutSeckillData: the folder `make cluster`
// makes (etcd/ beside the cells' data dirs c1/ c2/) is no data dir: its
// etcd/member holds a wal folder of etcd's files, which verify reports as
// not a seckill SKU and fails (exit 1), instead of passing it with no
// records; each cell's data dir verifies on its own.
func TestVerifyRefusesAFolderWithoutSeckillData(t *testing.T) {
	root := t.TempDir()
	etcdWAL := filepath.Join(root, "etcd", "member", "wal")
	if err := os.MkdirAll(etcdWAL, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etcdWAL, "0000000000000000-0000000000000000.wal"), []byte("etcd"), 0o640); err != nil {
		t.Fatal(err)
	}
	smallSKU(t, filepath.Join(root, "c1"), "demo", "sku-1")
	code, out, errOut := ctl(t, "verify", root)
	if code != exitFailed {
		t.Fatalf("verify of the cluster folder: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitFailed, out, errOut)
	}
	run := verifyRun(t, out)
	if run.OK || len(run.SKUs) != 1 || run.SKUs[0].OK || !strings.Contains(strings.Join(run.SKUs[0].Problems, " "), "not a seckill SKU") ||
		!strings.Contains(errOut, "not a seckill SKU") {
		t.Fatalf("verify of the cluster folder: %s\nstderr: %s", out, errOut)
	}
	wantCode(t, 0, "verify", filepath.Join(root, "c1"))
}

// TestSnapshotFileReadByItsHeader: inspect snapshot and restore --from
// given a file that is not a snapshot (here a pipe that stays open after its
// first bytes, as a device or a large dump would go on) refuse it by its
// header instead of reading it whole first.
func TestSnapshotFileReadByItsHeader(t *testing.T) {
	for _, args := range [][]string{{"inspect", "snapshot"}, {"restore", "--to", t.TempDir(), "--from"}} {
		path := filepath.Join(t.TempDir(), "not.snap")
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
		writerDone := make(chan struct{})
		go func() {
			w, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			defer w.Close()
			w.Write(bytes.Repeat([]byte("root:x:0:0:root:/root:/bin/bash\n"), 128))
			<-writerDone
		}()
		type result struct {
			code        int
			out, errOut string
		}
		done := make(chan result, 1)
		go func() {
			code, out, errOut := ctl(t, append(args, path)...)
			done <- result{code, out, errOut}
		}()
		select {
		case r := <-done:
			if r.code != exitFailed || r.out != "" || !strings.Contains(r.errOut, "no snapshot header") {
				t.Errorf("%s of a file that is not a snapshot: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.out, r.errOut)
			}
		case <-time.After(time.Minute):
			t.Errorf("%s of a file that is not a snapshot waited for the whole file", args)
		}
		close(writerDone)
	}
}

// TestHASwitchoverRefusesANonPositiveTimeout: --timeout -1s (or 0) is a
// usage error before anything is asked: asking the primary would hand the
// lead over, then report at once that the standby "did not become
// primary within -1s" (exit 1) about a switchover that happened.
// The etcd endpoint answers nothing: reaching it would be another error.
func TestHASwitchoverRefusesANonPositiveTimeout(t *testing.T) {
	for _, timeout := range []string{"-1s", "0s"} {
		code, out, errOut := ctl(t, "ha", "switchover", "--etcd", "127.0.0.1:1", "--replica-set", "rs1", "--to", "b",
			"--admin-token", "t", "--timeout", timeout)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "--timeout must be positive") {
			t.Fatalf("ha switchover --timeout %s: exit %d\nstdout:\n%s\nstderr:\n%s", timeout, code, out, errOut)
		}
	}
}

// TestRestoreFailedLeavesNothing: a restore that fails after it began to
// write (here the source's feed history cannot be read; a full disk does
// the same) removes the SKU folder it was writing, so that seckilld does
// not take its remains for a SKU and the retry is not refused as
// "already exists".
func TestRestoreFailedLeavesNothing(t *testing.T) {
	f := newFixture(t)
	history := filepath.Join(f.skuDir, feed.HistoryFile)
	if err := os.WriteFile(history, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	to := t.TempDir()
	if code, out, errOut := ctl(t, "restore", "--from", f.skuDir, "--to", to); code == exitOK || out != "" {
		t.Fatalf("restore with an unreadable feed history: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if entries, _ := os.ReadDir(to); len(entries) != 0 {
		t.Fatalf("the failed restore left %v in %s", entries, to)
	}
	if err := os.Remove(history); err != nil {
		t.Fatal(err)
	}
	wantCode(t, exitOK, "restore", "--from", f.skuDir, "--to", to)
}

// TestHARefusesAnInvalidReplicaSetName: a --replica-set no replica set
// can have is a usage error naming the flag, before etcd is asked (a
// name read from etcd first would be reported as another replica's).
func TestHARefusesAnInvalidReplicaSetName(t *testing.T) {
	for _, cmd := range [][]string{{"ha", "status"}, {"ha", "switchover", "--to", "b"}} {
		code, out, errOut := ctl(t, append(cmd, "--etcd", "127.0.0.1:1", "--replica-set", "bad id~", "--admin-token", "t")...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, `--replica-set "bad id~" is not a replica set's name`) {
			t.Fatalf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", cmd, code, out, errOut)
		}
	}
}

// TestRestorePassesOverAForeignSnapshot: a snapshot of another SKU
// put in a SKU's snapshots folder (a file copied into the wrong folder) is
// passed over by seckillctl as by the engine, which judges a snapshot by
// the SKU the folder's place names: a restore from the folder is of its
// own SKU with the state the engine rebuilds, never of the foreign one
// with this SKU's log copied beside it.
// placeForeignSnapshot writes into f's SKU folder (c1/s1) a snapshot of
// another SKU (c1/s2) at f's last log index: newer than the folder's own
// snapshot and within its log, the newest usable one were it of this SKU.
func placeForeignSnapshot(t *testing.T, f *fixture) {
	t.Helper()
	st, err := loadState(smallSKU(t, t.TempDir(), "c1", "s2"), loadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Write(filepath.Join(f.skuDir, "snapshots"), st.m.Freeze(), f.lastIndex, snapshot.Options{}); err != nil {
		t.Fatal(err)
	}
}

func TestRestorePassesOverAForeignSnapshot(t *testing.T) {
	f := newFixture(t)
	placeForeignSnapshot(t, f)
	got, h, _ := restoreAndOpen(t, "--from", f.skuDir, "--to", t.TempDir())
	if got.CampaignID != "c1" || got.SKUID != "s1" || h != f.hash || got.StateHash != hashHex(f.hash) {
		t.Fatalf("restore beside a foreign snapshot: %+v, want c1/s1 with state %x", got, f.hash)
	}
	// verify names the misplaced file as a problem.
	code, out, _ := ctl(t, "verify", f.skuDir)
	if report := verifySKUReport(t, out); code != exitFailed || report.OK || len(report.Problems) != 1 ||
		!strings.Contains(report.Problems[0], snapshot.Name(f.lastIndex)+": of another SKU: it is of c1/s2") {
		t.Fatalf("verify beside a foreign snapshot: exit %d\n%s", code, out)
	}
}
