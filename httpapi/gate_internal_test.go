package httpapi

import (
	"fmt"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"pgregory.net/rapid"
)

// TestFastAnswersAgreeWithTheMachine: over random histories of one SKU,
// the ingress's fast answer on the SKU's state (precheck, sku.Gate) is the
// answer the Machine gives a new request_id of a new user at the same
// moment, except that a fast SOLD_OUT may be pessimistic (the Machine first
// expires due reservations); and the coarse status names the same gate.
func TestFastAnswersAgreeWithTheMachine(t *testing.T) {
	l := testLimits
	rapid.Check(t, func(t *rapid.T) {
		m := sku.New()
		def := sku.Definition{CampaignID: "c", SKUID: "s", StartAt: 1_000, EndAt: 1_200,
			PaymentWindowMs: rapid.Int64Range(1, 50).Draw(t, "window"),
			SaleLimit:       uint32(rapid.IntRange(1, 4).Draw(t, "limit")),
			ReleaseOnClose:  rapid.Bool().Draw(t, "release_on_close")}
		now := int64(990)
		if _, _, err := m.Define(now, def, nil); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 100; i++ {
			seq := uint32(rapid.IntRange(1, int(m.Counts().Reservations)+1).Draw(t, "seq"))
			switch rapid.IntRange(0, 6).Draw(t, "action") {
			case 0:
				m.Reserve(now, fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", rapid.IntRange(0, 5).Draw(t, "user")), nil)
			case 1:
				probe(t, l, m, now, fmt.Sprintf("probe-%d", i))
			case 2:
				m.Pay(now, seq, "p", 1, nil)
			case 3:
				m.Close(now, seq, sku.ReasonCancelled, nil)
			case 4:
				if rapid.Bool().Draw(t, "pause") {
					m.Pause(now, nil)
				} else {
					m.Resume(now, nil)
				}
			default:
				now += rapid.Int64Range(0, 30).Draw(t, "dt")
			}
		}
	})
}

// probe compares the fast answer and the status on m's state at now with
// what m answers a new user's new request_id (who then has the unit, if
// any: the history goes on with it).
func probe(t *rapid.T, l limits, m *sku.Machine, now int64, id string) {
	st := actors.Stats{Definition: new(m.Definition()), Counts: m.Counts(), Paused: m.Paused()}
	at := time.UnixMilli(now)
	fast := l.precheck(&st, at, false)
	status, _ := l.skuStatus(st, at, &gate{})
	res, _ := m.Reserve(now, id, id, nil)
	want := map[sku.Outcome]verdict{sku.OutcomeNotStarted: verdictNotStarted, sku.OutcomeEnded: verdictEnded,
		sku.OutcomePaused: verdictPaused, sku.OutcomeSoldOut: verdictSoldOut, sku.OutcomeAccepted: verdictAdmit}[res.Outcome]
	if fast != want && !(fast == verdictSoldOut && res.Outcome == sku.OutcomeAccepted) {
		t.Fatalf("at %d: fast answer %d, machine %s (counts %+v, paused %v)", now, fast, res.Outcome, st.Counts, st.Paused)
	}
	open := status == StatusOpen || status == StatusThrottled || status == StatusQueueFull
	if open != (fast == verdictAdmit) {
		t.Fatalf("at %d: status %s, fast answer %d", now, status, fast)
	}
}
