package stream

import (
	"testing"

	"github.com/seckill/seckill/wal"
)

// heldStore holds the standby's writes until release is closed: its copy
// acknowledges nothing meanwhile.
type heldStore struct {
	wal.Store
	release <-chan struct{}
}

func (s heldStore) WriteBatch(b *wal.Batch) (int, error) {
	<-s.release
	return s.Store.WriteBatch(b)
}

// At a tenure's start the primary commits nothing until the standbys of
// its sync set acknowledge the records its log held when it opened (the
// former primary may have acknowledged them): a standby that connects
// holding none of them is not caught up, so it is not published, until it
// holds them all.
func TestStandbyHoldingNoneOfTheRecordsFoundAtOpenIsNotCaughtUp(t *testing.T) {
	pdir, sdir := t.TempDir(), t.TempDir()
	first := startPrimary(t, pdir, 1, nodeOptions{})
	define(t, first.engine, "c1", "s1")
	reserve(t, first.engine, "c1", "s1", 0, 5)
	first.stop()

	n := startPrimary(t, pdir, 2, nodeOptions{waited: []string{"c"}})
	found := n.logs.get("c1", "s1").LastIndex()
	release := make(chan struct{})
	sb := startStandby(t, sdir, "b", n.addr, wal.Options{OpenStore: func(dir string, o wal.StoreOptions) (wal.Store, error) {
		s, err := wal.OpenTidwallStore(dir, o)
		return heldStore{s, release}, err
	}})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	eventually(t, "the standby connected and its copy begun", func() bool {
		st := status(n.primary, "b")
		return st.Connected && st.LagRecords == found
	})
	if st := status(n.primary, "b"); st.CaughtUp {
		t.Fatalf("a standby holding none of the %d records found at open counts as caught up: %+v", found, st)
	}
	close(release)
	eventually(t, "the standby caught up", func() bool { return status(n.primary, "b").CaughtUp })
	if l, d := copyLast(sb, "c1", "s1"); l != found || d != found {
		t.Fatalf("the standby holds %d (durable %d), the primary found %d", l, d, found)
	}
}
