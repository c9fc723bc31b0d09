package stream

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seckill/seckill/actors/sku"
)

// A standby that connects while the primary sells catches up from the
// log's files and joins the live batches without a gap or a duplicate,
// beside a second standby; with both waited for, the commit index is the
// least of their acknowledgements.
func TestStandbysJoinUnderLoad(t *testing.T) {
	pdir := t.TempDir()
	n := startPrimary(t, pdir, 1, nodeOptions{})
	define(t, n.engine, "c1", "s1")
	reserve(t, n.engine, "c1", "s1", 0, 50)

	var stop atomic.Bool
	var sold atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				id := strconv.Itoa(g) + "-" + strconv.Itoa(i)
				res, err := n.engine.Reserve(context.Background(), "c1", "s1", "load"+id, "u"+id)
				if err != nil || res.Outcome != sku.OutcomeAccepted {
					t.Errorf("reserve under load: %v %v", res.Outcome, err)
					return
				}
				sold.Add(1)
			}
		}()
	}
	dirs := []string{t.TempDir(), t.TempDir()}
	px := newProxy(t, n.addr)
	var standbys []*Standby
	for i, name := range []string{"b", "c"} {
		before := sold.Load()
		addr := n.addr
		if name == "c" {
			addr = px.addr()
		}
		standbys = append(standbys, startStandby(t, dirs[i], name, addr))
		eventually(t, name+" live under load", func() bool { return status(n.primary, name).CaughtUp && sold.Load() > before+100 })
	}
	n.primary.Wait([]string{"b", "c"})
	before := sold.Load()
	eventually(t, "sales waiting for both standbys", func() bool { return sold.Load() > before+200 })

	// c's acknowledgements held: b holds every record, nothing more commits.
	px.holdUp()
	log := n.logs.get("c1", "s1")
	eventually(t, "b holds the primary's last record while c is held", func() bool {
		_, d := copyLast(standbys[0], "c1", "s1")
		last := log.LastIndex()
		return log.DurableIndex() == last && d == last && log.CommitIndex() < last
	})
	px.releaseUp()
	eventually(t, "sales go on once c acknowledges", func() bool { return log.CommitIndex() == log.LastIndex() })
	stop.Store(true)
	wg.Wait()
	for i, name := range []string{"b", "c"} {
		caughtUp(t, n, standbys[i], name)
		sameRecords(t, pdir, dirs[i], "c1", "s1")
	}
}
