package stream

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/replica"
	"github.com/seckill/seckill/wal"
)

// BeginEpoch raises the data dir's epoch, refuses a lower one, and starts
// each SKU's history at its log's next record: a log written before
// replication is epoch 0; beginning the same epoch again changes nothing;
// an epoch that wrote nothing is replaced by the next.
func TestBeginEpoch(t *testing.T) {
	dir := t.TempDir()
	skuDir := filepath.Join(dir, "c1", "s1")
	l, err := wal.Open(skudir.Dir(skuDir).WAL(), wal.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := l.Append(1, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	history := func() replica.History {
		h, err := ReadHistory(skuDir)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if err := BeginEpoch(dir, 2, quiet); err != nil {
		t.Fatal(err)
	}
	want := replica.History{{Epoch: 0, First: 1}, {Epoch: 2, First: 4}}
	if h := history(); !slices.Equal(h, want) {
		t.Fatalf("history %+v, want %+v", h, want)
	}
	if err := BeginEpoch(dir, 2, quiet); err != nil || !slices.Equal(history(), want) {
		t.Fatalf("the same epoch again: %v %+v", err, history())
	}
	if err := BeginEpoch(dir, 3, quiet); err != nil {
		t.Fatal(err)
	}
	want = replica.History{{Epoch: 0, First: 1}, {Epoch: 3, First: 4}} // epoch 2 wrote nothing
	if h := history(); !slices.Equal(h, want) {
		t.Fatalf("history %+v, want %+v", h, want)
	}
	if err := BeginEpoch(dir, 1, quiet); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("a lower epoch: %v, want ErrStaleEpoch", err)
	}
	if e, err := ReadEpoch(dir); err != nil || e != 3 {
		t.Fatalf("epoch %d %v, want 3", e, err)
	}
}

// A standby that holds none of the records the primary's log held when
// it opened is not caught up, even with nothing committed yet in the
// tenure: the former primary may have acknowledged them.
func TestCaughtUpCoversRecordsFoundAtOpen(t *testing.T) {
	if CaughtUp(0, 0, 11) {
		t.Fatal("a standby with nothing counts as caught up with 11 records found at open")
	}
	if !CaughtUp(11, 0, 11) || !CaughtUp(12, 12, 11) || CaughtUp(11, 12, 11) {
		t.Fatal("CaughtUp is not acked >= max(committed, found)")
	}
}
