package stream

import (
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/seckill/seckill/actors/sku"
)

// A standby serves the committed records it applied: every reservation
// the primary acknowledged is found on the standby once its applied index
// reaches it, with the same state; a record shipped to the standby and
// durable there, but not committed (its acknowledgement held back), is
// not shown until the primary commits it.
func TestStandbyServesCommittedReads(t *testing.T) {
	p := startPair(t, nodeOptions{})
	n, px, sb := p.n, p.px, p.sb
	n.primary.Wait([]string{"b"})
	ids := reserve(t, n.engine, "c1", "s1", 0, 20)
	log := n.logs.get("c1", "s1")
	committed := log.CommitIndex()
	eventually(t, "the standby applied the committed records", func() bool { return sb.Applied("c1", "s1") >= committed })
	for i, id := range ids {
		v, at, err := sb.Get(id)
		if err != nil || v.ReservationID != id || v.State != sku.StatePendingPayment || at < committed {
			t.Fatalf("standby read of %s: %+v at %d, %v", id, v, at, err)
		}
		res, _, err := sb.Lookup("c1", "s1", "r"+strconv.Itoa(i))
		if err != nil || res.Outcome != sku.OutcomeAccepted || res.Reservation.ReservationID != id {
			t.Fatalf("standby lookup: %+v %v", res, err)
		}
	}
	if _, _, err := sb.Get(ids[0] + "x"); !errors.Is(err, ErrNotApplied) {
		t.Fatalf("an unknown reservation id on the standby: %v", err)
	}

	px.holdUp()
	last := log.LastIndex()
	replies := reserveLater(n.engine, "held")
	eventually(t, "the held record durable on the standby", func() bool {
		_, durable := copyLast(sb, "c1", "s1")
		return durable > last
	})
	notCommitted(t, log, last, replies)
	sb.apply(sb.lookupSKU(skuKey{"c1", "s1"})) // whatever the applier would do now
	if res, _, err := sb.Lookup("c1", "s1", "held"); !errors.Is(err, ErrNotApplied) {
		t.Fatalf("a record not committed is shown by the standby: %+v %v", res, err)
	}
	if a := sb.Applied("c1", "s1"); a > last {
		t.Fatalf("the standby applied up to %d, beyond the commit index %d", a, last)
	}

	px.releaseUp()
	r := <-replies
	if r.err != nil || r.res.Outcome != sku.OutcomeAccepted {
		t.Fatalf("held reserve: %+v %v", r.res, r.err)
	}
	eventually(t, "the standby applied the released record", func() bool { return sb.Applied("c1", "s1") > last })
	v, _, err := sb.Get(r.res.Reservation.ReservationID)
	if err != nil || v.RequestID != "held" {
		t.Fatalf("the committed record on the standby: %+v %v", v, err)
	}
	st := sb.Status().SKUs[0]
	if st.CommitIndex < st.Applied || st.Applied <= last {
		t.Fatalf("standby status: %+v", st)
	}
}

// The frames a copy keeps for its applier are consecutive: taken from the
// applied index on, none before it; a batch that does not follow the
// last kept one drops them (the applier reads the files instead).
func TestPendingFramesStayConsecutive(t *testing.T) {
	c := committedState{total: new(atomic.Int64)}
	frames := func(n int) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = []byte{byte(i)}
		}
		return out
	}
	c.keep(5, frames(3)) // 5, 6, 7
	c.keep(8, frames(2)) // 8, 9
	if got := c.takePending(4, 9); got != nil {
		t.Fatalf("took %d frames from 4, the first kept is 5", len(got))
	}
	if got := c.takePending(6, 8); len(got) != 3 || got[0].index != 6 || got[2].index != 8 {
		t.Fatalf("took %+v from 6 through 8", got)
	}
	c.keep(12, frames(1)) // not after 9: dropped
	if got := c.takePending(9, 20); got != nil {
		t.Fatalf("took %+v after a gap", got)
	}
	if got := c.takePending(12, 20); len(got) != 1 || c.pendingBytes != 0 || c.total.Load() != 0 {
		t.Fatalf("took %+v from 12, %d bytes left (%d over every copy)", got, c.pendingBytes, c.total.Load())
	}
	c.keep(1, frames(pendingMaxRecords+1)) // beyond the bound: not kept
	if len(c.pending) != 0 {
		t.Fatalf("kept %d frames beyond the bound", len(c.pending))
	}
}
