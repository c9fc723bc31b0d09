package httpapi_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/wal"
)

var errLostWrite = errors.New("injected: write lost, fsync failed")

// losingStore drops the writes of its batches while lose is set and fails
// their fsync: the records never reach the disk (the page cache lost them,
// as after a failed writeback). It lists its segments, so the feed reads
// the files as it does with the real store.
type losingStore struct {
	wal.Store
	lose *atomic.Bool
}

func (s losingStore) WriteBatch(b *wal.Batch) (int, error) {
	if s.lose.Load() {
		return 0, nil
	}
	return s.Store.WriteBatch(b)
}

func (s losingStore) Sync() error {
	if s.lose.Load() {
		return errLostWrite
	}
	return s.Store.Sync()
}

func (s losingStore) SegmentStarts() ([]uint64, error) {
	return s.Store.(wal.SegmentedStore).SegmentStarts()
}

// Never ahead of durability: a record whose fsync failed never reaches a
// consumer (not even one waiting in a long poll), and after the restart
// its index holds another record, which the consumer sees once.
func TestFeedNeverAheadOfDurability(t *testing.T) {
	dir := t.TempDir()
	var lose atomic.Bool
	engine := func(c *actors.Config) {
		c.LogFailureRetry = -1
		c.WAL.OpenStore = func(dir string, o wal.StoreOptions) (wal.Store, error) {
			st, err := wal.OpenTidwallStore(dir, o)
			return losingStore{Store: st, lose: &lose}, err
		}
	}
	ts := startServer(t, serverOptions{dir: dir, engine: engine})
	ts.define(campaign("du", "15m", map[string]int{"s": 10}))
	want(t, ts.reserve("du", "s", "r-a", "alice"), http.StatusAccepted, "")
	before := ts.page("du", "s", "")

	polled := make(chan response, 1)
	go func() {
		r, _ := try(http.MethodGet, ts.base+feedPath("du", "s", "?wait=5s&after="+before.NextCursor), nil, map[string]string{"Authorization": "Bearer " + testToken})
		polled <- r
	}()
	lose.Store(true)
	if r := ts.reserve("du", "s", "r-b", "bob"); r.status == http.StatusAccepted {
		t.Fatalf("a reserve whose fsync failed was acknowledged: %v", r)
	}
	select {
	case r := <-polled:
		var p feedPage
		json.Unmarshal(r.raw, &p)
		if len(p.Events) != 0 {
			t.Fatalf("the long poll got a record whose fsync failed: %v", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the long poll did not answer")
	}
	if r := ts.admin(http.MethodGet, feedPath("du", "s", "?after="+before.NextCursor), nil); r.status == http.StatusOK {
		var p feedPage
		json.Unmarshal(r.raw, &p)
		if len(p.Events) != 0 {
			t.Fatalf("the feed served a record whose fsync failed: %v", r)
		}
	}

	// Restart on the same data dir: bob's record is not on disk, and its
	// index goes to carol's.
	ts.stop()
	lose.Store(false)
	ts = startServer(t, serverOptions{dir: dir, engine: engine})
	want(t, ts.reserve("du", "s", "r-c", "carol"), http.StatusAccepted, "")
	after := ts.page("du", "s", "?after="+before.NextCursor)
	if len(after.Events) != 1 || after.Events[0].Data["user_id"] != "carol" || after.Events[0].SeckillIndex != before.DurableIndex+1 {
		t.Fatalf("after the restart, want carol's record at index %d (bob's lost one): %+v", before.DurableIndex+1, after.Events)
	}
}
