package stream

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/replica"
	"github.com/seckill/seckill/snapshot"
	"github.com/seckill/seckill/wal"
)

// baseFiles is a BaseFiles over a log in a test's folder that notes the
// steps a base copy took.
type baseFiles struct {
	t         *testing.T
	dir       string
	log       *wal.Log
	steps     []string
	installed uint64
}

func (f *baseFiles) Log() *wal.Log { return f.log }

func (f *baseFiles) SKU() (campaignID, skuID string) { return "c", "s" }

func (f *baseFiles) Cut(uint64) error { panic("a base copy cuts nothing") }

func (f *baseFiles) WriteHistory(replica.History) error {
	f.steps = append(f.steps, "history")
	return nil
}

func (f *baseFiles) Drop() error {
	f.steps = append(f.steps, "drop")
	return nil
}

func (f *baseFiles) Install(index uint64) error {
	f.steps = append(f.steps, "install")
	f.installed = index
	return nil
}

func (f *baseFiles) Start(index uint64) error {
	f.steps = append(f.steps, "start")
	path := filepath.Join(f.dir, "wal")
	if _, _, err := wal.CopyRange(path, nil, 0, index); err != nil {
		return err
	}
	l, err := wal.Open(path, wal.Options{})
	if err != nil {
		return err
	}
	f.t.Cleanup(func() { l.Close() })
	f.log = l
	return nil
}

func snapshotAt(t *testing.T, index uint64) []byte {
	m := sku.New()
	m.Define(1_000, sku.Definition{CampaignID: "c", SKUID: "s", StartAt: 1_000, EndAt: 2_000, PaymentWindowMs: 1_000, SaleLimit: 10}, nil)
	b, _, err := snapshot.Marshal(m.Freeze(), index, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A base copy drops the copy and takes the primary's history, then
// installs the snapshot and starts the log after it, which then ends at
// the snapshot's index.
func TestBaseCopySteps(t *testing.T) {
	f := &baseFiles{t: t, dir: t.TempDir()}
	if err := BeginBase(f, replica.History{{Epoch: 1, First: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := FinishBase(f, 40, snapshotAt(t, 40)); err != nil {
		t.Fatal(err)
	}
	if got, want := f.steps, []string{"drop", "history", "install", "start"}; !slices.Equal(got, want) {
		t.Fatalf("steps %q, want %q", got, want)
	}
	if f.installed != 40 || f.log.LastIndex() != 40 || f.log.FirstIndex() != 0 {
		t.Fatalf("installed %d, log last %d first %d; want the snapshot at 40 and an empty log going on at 41",
			f.installed, f.log.LastIndex(), f.log.FirstIndex())
	}
}

// A snapshot that is not the one announced, or damaged, is refused before
// anything is installed.
func TestBaseCopyRefusesAnotherSnapshot(t *testing.T) {
	f := &baseFiles{t: t, dir: t.TempDir()}
	err := FinishBase(f, 40, snapshotAt(t, 39))
	if !errors.Is(err, errProtocol) {
		t.Fatalf("a snapshot at 39 announced at 40: %v, want a protocol error", err)
	}
	b := snapshotAt(t, 40)
	b[len(b)-1] ^= 1
	if err := FinishBase(f, 40, b); err == nil {
		t.Fatal("a damaged snapshot was installed")
	}
	if len(f.steps) != 0 {
		t.Fatalf("steps %q after refused snapshots, want none", f.steps)
	}
}

// A snapshot of another SKU, whole and at the index announced, is refused
// before anything is installed: installed, it would stand for the copy's
// records, and a promotion would recover another SKU's state from it. A
// new snapshot refused leaves the copy as it was: its log and snapshots.
func TestCopyRefusesASnapshotOfAnotherSKU(t *testing.T) {
	for _, foreign := range [][2]string{{"c", "other"}, {"other", "s"}} {
		b := snapshotOf(t, foreign[0], foreign[1], 40)
		f := &baseFiles{t: t, dir: t.TempDir()}
		if err := FinishBase(f, 40, b); !errors.Is(err, errProtocol) || !strings.Contains(err.Error(), foreign[0]+"/"+foreign[1]) {
			t.Errorf("a base copy of c/s with a snapshot of %s/%s: %v, want a protocol error naming it", foreign[0], foreign[1], err)
		}
		if len(f.steps) != 0 {
			t.Errorf("steps %q after a snapshot of %s/%s, want none", f.steps, foreign[0], foreign[1])
		}

		l := sixtyRecords(t)
		s := &snapshotFiles{log: l, held: []uint64{10, 20}}
		if err := InstallSnapshot(s, 40, 100, b); !errors.Is(err, errProtocol) || !strings.Contains(err.Error(), foreign[0]+"/"+foreign[1]) {
			t.Errorf("a new snapshot of %s/%s for c/s: %v, want a protocol error naming it", foreign[0], foreign[1], err)
		}
		if !slices.Equal(s.held, []uint64{10, 20}) || l.FirstIndex() != 1 || l.LastIndex() != 60 {
			t.Errorf("snapshots %v, log %d..%d after a snapshot of %s/%s; want [10 20] and 1..60, as before",
				s.held, l.FirstIndex(), l.LastIndex(), foreign[0], foreign[1])
		}
	}
}

// A standby keeps the newest snapshots and truncates its copy up to the
// oldest kept, never beyond the primary's first record.
func TestKeepSnapshots(t *testing.T) {
	for _, c := range []struct {
		held     []uint64
		keepFrom uint64
		drop     []uint64
		before   uint64
		why      string
	}{
		{nil, 50, nil, 0, "no snapshot: nothing to truncate"},
		{[]uint64{40}, 100, nil, 41, "one snapshot: up to it"},
		{[]uint64{20, 40}, 100, nil, 21, "two kept: up to the older"},
		{[]uint64{10, 20, 40}, 100, []uint64{10}, 21, "the oldest dropped, up to the older kept"},
		{[]uint64{10, 20, 40}, 15, []uint64{10}, 15, "never beyond the primary's first record"},
	} {
		drop, before := KeepSnapshots(c.held, 2, c.keepFrom)
		if !slices.Equal(drop, c.drop) || before != c.before {
			t.Errorf("%s: KeepSnapshots(%v, 2, %d) = %v, %d; want %v, %d", c.why, c.held, c.keepFrom, drop, before, c.drop, c.before)
		}
	}
}

// snapshotFiles is a SnapshotFiles over a log in a test's folder, its
// snapshots in memory.
type snapshotFiles struct {
	log  *wal.Log
	held []uint64
}

func (f *snapshotFiles) Log() *wal.Log { return f.log }

func (f *snapshotFiles) SKU() (campaignID, skuID string) { return "c", "s" }

func (f *snapshotFiles) Install(index uint64) error {
	f.held = append(f.held, index)
	slices.Sort(f.held)
	return nil
}

func (f *snapshotFiles) Snapshots() ([]uint64, error) { return slices.Clone(f.held), nil }

func (f *snapshotFiles) RemoveSnapshots(indexes []uint64) error {
	f.held = slices.DeleteFunc(f.held, func(i uint64) bool { return slices.Contains(indexes, i) })
	return nil
}

func (f *snapshotFiles) AwaitDurable(index uint64) error { return awaitDurable(f.log, index) }

// A new snapshot of the primary's is checked, installed, the oldest
// dropped, and the copy's log truncated up to the oldest kept; one
// beyond the copy's last record, or damaged, is refused.
func TestInstallSnapshot(t *testing.T) {
	l := sixtyRecords(t)
	f := &snapshotFiles{log: l, held: []uint64{10, 20}}
	if err := InstallSnapshot(f, 61, 1, snapshotAt(t, 61)); !errors.Is(err, errProtocol) {
		t.Fatalf("a snapshot beyond the copy's last record: %v, want a protocol error", err)
	}
	b := snapshotAt(t, 40)
	b[len(b)-1] ^= 1
	if err := InstallSnapshot(f, 40, 100, b); err == nil {
		t.Fatal("a damaged snapshot was installed")
	}
	if err := InstallSnapshot(f, 40, 100, snapshotAt(t, 40)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.held, []uint64{20, 40}) || l.FirstIndex() != 21 {
		t.Fatalf("snapshots %v, log from %d; want [20 40] and the log from 21", f.held, l.FirstIndex())
	}
	if err := InstallSnapshot(f, 50, 30, snapshotAt(t, 50)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.held, []uint64{40, 50}) || l.FirstIndex() != 30 {
		t.Fatalf("snapshots %v, log from %d; want [40 50] and the log from the primary's first record, 30", f.held, l.FirstIndex())
	}
}

// snapshotOf is a snapshot at index of SKU campaignID/skuID.
func snapshotOf(t *testing.T, campaignID, skuID string, index uint64) []byte {
	m := sku.New()
	m.Define(1_000, sku.Definition{CampaignID: campaignID, SKUID: skuID, StartAt: 1_000, EndAt: 2_000, PaymentWindowMs: 1_000, SaleLimit: 10}, nil)
	b, _, err := snapshot.Marshal(m.Freeze(), index, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A standby counts and drops only its SKU's own snapshots, as the
// primary's snapshot.Prune does: a file in its snapshots folder of
// another SKU, or whose header does not read, is neither counted among
// the kept nor removed, so the copy is truncated up to the oldest of its
// own kept, from which a recovery can begin.
func TestStandbyKeepsItsOwnSnapshots(t *testing.T) {
	dir := t.TempDir()
	snaps := filepath.Join(dir, "snapshots")
	if err := os.MkdirAll(snaps, 0o750); err != nil {
		t.Fatal(err)
	}
	put := func(index uint64, b []byte) string {
		path := filepath.Join(snaps, snapshot.Name(index))
		if err := os.WriteFile(path, b, 0o640); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// One record a segment: the truncation cuts where it is asked.
	l, err := wal.Open(filepath.Join(dir, "wal"), wal.Options{SegmentSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 1; i <= 60; i++ {
		if _, err := l.Append(1, []byte("r")); err != nil {
			t.Fatal(err)
		}
	}
	put(10, snapshotOf(t, "c", "s", 10))
	put(20, snapshotOf(t, "c", "s", 20))
	put(30, snapshotOf(t, "c", "other", 30))
	put(35, []byte("not a snapshot"))
	b := snapshotOf(t, "c", "s", 40)
	received := filepath.Join(snaps, snapshot.Name(40)+".received.tmp")
	if err := os.WriteFile(received, b, 0o640); err != nil {
		t.Fatal(err)
	}
	c := standbyCopy{x: &standbySKU{key: skuKey{"c", "s"}, dir: dir, log: l}, received: received}
	if err := InstallSnapshot(c, 40, 100, b); err != nil {
		t.Fatal(err)
	}
	files, err := snapshot.List(snaps)
	if err != nil {
		t.Fatal(err)
	}
	var held []uint64
	for _, f := range files {
		held = append(held, f.Index)
	}
	if !slices.Equal(held, []uint64{20, 30, 35, 40}) || l.FirstIndex() != 21 {
		t.Fatalf("snapshots %v, log from %d; want [20 30 35 40] (its own 20 and 40 kept, the others untouched) and the log from 21", held, l.FirstIndex())
	}
}

// sixtyRecords returns a log of 60 records, one a segment, so a
// truncation cuts where it is asked; closed when the test ends.
func sixtyRecords(t *testing.T) *wal.Log {
	t.Helper()
	l, err := wal.Open(filepath.Join(t.TempDir(), "wal"), wal.Options{SegmentSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for i := 1; i <= 60; i++ {
		if _, err := l.Append(1, []byte("r")); err != nil {
			t.Fatal(err)
		}
	}
	return l
}
