package stream

import (
	"errors"
	"path/filepath"
	"slices"
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
