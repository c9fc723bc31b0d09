package sku

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/seckill/seckill/lottery"
	"pgregory.net/rapid"
)

// driver runs random commands on a Machine and keeps the records.
type driver struct {
	m   *Machine
	now int64
	log []Record
}

func (d *driver) step(t *rapid.T, users, reqs, payments *rapid.Generator[string]) {
	m := d.m
	seq := func() uint32 { return uint32(rapid.IntRange(0, int(m.Counts().Reservations)+1).Draw(t, "seq")) }
	switch rapid.IntRange(0, 9).Draw(t, "action") {
	case 0, 1, 2:
		_, d.log = m.Reserve(d.now, reqs.Draw(t, "req"), users.Draw(t, "user"), d.log)
	case 3:
		_, d.log = m.Pay(d.now, seq(), payments.Draw(t, "payment"), 100, d.log)
	case 4:
		_, d.log = m.Close(d.now, seq(), ReasonCancelled, d.log)
	case 5:
		_, d.log = m.Release(d.now, seq(), d.log)
	case 6:
		d.log = m.Expire(d.now, rapid.IntRange(1, 4).Draw(t, "max"), d.log)
	case 7:
		if rapid.Bool().Draw(t, "pause") {
			_, d.log = m.Pause(d.now, d.log)
		} else {
			_, d.log = m.Resume(d.now, d.log)
		}
	default:
		d.now += rapid.Int64Range(0, 15).Draw(t, "dt")
	}
}

func encodeFrozen(t interface{ Fatalf(string, ...any) }, f *Frozen) []byte {
	var buf bytes.Buffer
	n, err := f.Encode(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("encode: %d bytes, %v (buffer %d)", n, err, buf.Len())
	}
	return buf.Bytes()
}

// TestRestoreAgainstReplay: for random histories, a state frozen at a
// random step and encoded after more changes (copy on write) restores to
// the hash it had at the freeze; restored plus the records after the freeze
// equals the full replay; and the restored Machine then answers further
// commands exactly as the original does (derived state rebuilt).
func TestRestoreAgainstReplay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		def := Definition{CampaignID: "c1", SKUID: "s1", StartAt: 1_000, EndAt: 1_000_000,
			PaymentWindowMs: rapid.Int64Range(1, 40).Draw(t, "window"),
			SaleLimit:       uint32(rapid.IntRange(1, 8).Draw(t, "limit")),
			ReleaseOnClose:  rapid.Bool().Draw(t, "release_on_close")}
		d := &driver{m: New(), now: 1_000}
		_, d.log, _ = d.m.Define(d.now, def, nil)
		users := rapid.SampledFrom([]string{"u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8", "u9"})
		reqs := rapid.StringMatching(`r[0-9]{1,2}`)
		payments := rapid.SampledFrom([]string{"p1", "p2", "p3"})

		steps := rapid.IntRange(0, 200).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			d.step(t, users, reqs, payments)
		}
		frozen, atFreeze, logAtFreeze := d.m.Freeze(), d.m.Hash(), len(d.log)
		second := rapid.IntRange(0, 100).Draw(t, "more")
		var frozen2 *Frozen
		for i := 0; i < second; i++ {
			if i == second/2 {
				frozen2 = d.m.Freeze() // two frozen states share chunks at once
			}
			d.step(t, users, reqs, payments)
		}

		restored, err := DecodeState(encodeFrozen(t, frozen))
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if restored.Hash() != atFreeze {
			t.Fatalf("restored state differs from the state at the freeze")
		}
		if a := restored.Audit(); !a.OK() {
			t.Fatalf("audit of restored state: %v", a.Violations)
		}
		for i := logAtFreeze; i < len(d.log); i++ {
			r, err := DecodeRecord(d.log[i].Type, d.log[i].AppendPayload(nil))
			if err != nil {
				t.Fatal(err)
			}
			if err := restored.Apply(&r); err != nil {
				t.Fatalf("tail record %d: %v", i, err)
			}
		}
		if restored.Hash() != d.m.Hash() {
			t.Fatalf("snapshot + tail differs from the live state")
		}
		if frozen2 != nil {
			again, err := DecodeState(encodeFrozen(t, frozen2))
			if err != nil || again.Audit().OK() == false {
				t.Fatalf("second frozen state: %v", err)
			}
		}
		// Both go on alike.
		live := d.m
		for i := 0; i < 30; i++ {
			now := d.now + int64(i)
			req, user := reqs.Draw(t, "req"), users.Draw(t, "user")
			a, _ := live.Reserve(now, req, user, nil)
			b, _ := restored.Reserve(now, req, user, nil)
			if a.Outcome != b.Outcome || a.Reservation.ReservationID != b.Reservation.ReservationID || a.Reservation.TokenID != b.Reservation.TokenID {
				t.Fatalf("reserve(%s,%s): live %v, restored %v", req, user, a.Outcome, b.Outcome)
			}
			// Expire's work bound counts rows from its cursor, which replay
			// and restore place differently: let it reach every row.
			live.Expire(now, 1000, nil)
			restored.Expire(now, 1000, nil)
			if at, ok := live.NextExpiry(); ok {
				if at2, ok2 := restored.NextExpiry(); !ok2 || at2 != at {
					t.Fatalf("NextExpiry: live %d, restored %d %v", at, at2, ok2)
				}
			}
		}
		if live.Hash() != restored.Hash() {
			t.Fatalf("live and restored diverge")
		}
	})
}

// TestFreezeAcrossChunks changes rows in many chunks after a freeze, with
// extras and refunds, and checks the frozen state is untouched.
func TestFreezeAcrossChunks(t *testing.T) {
	const n = 3*chunkSize + 100
	def := Definition{CampaignID: "c", SKUID: "s", StartAt: 0, EndAt: 1 << 40, PaymentWindowMs: 1000, SaleLimit: n, ReleaseOnClose: false}
	m := New()
	m.Define(1, def, nil)
	for i := 1; i <= n; i++ {
		m.Reserve(int64(i), fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), nil)
	}
	for seq := uint32(1); seq <= n; seq += 7 {
		m.Pay(int64(n+1), seq, fmt.Sprintf("p%d", seq), 5, nil)
	}
	f := m.Freeze()
	want := m.Hash()
	for seq := uint32(2); seq <= n; seq += 3 {
		m.Pay(int64(n+2), seq, fmt.Sprintf("q%d", seq), 6, nil) // PAID rows: conflicts, others paid
	}
	m.Expire(int64(n)+5000, n, nil)
	for seq := uint32(1); seq <= n; seq += 5 {
		m.Pay(int64(n)+6000, seq, "late", 1, nil) // refunds on closed rows
		m.Release(int64(n)+6000, seq, nil)
	}
	for i := n + 1; i <= n+chunkSize; i++ { // new rows, some in the shared last chunk
		m.Reserve(int64(n)+7000, fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), nil)
	}
	got, err := DecodeState(encodeFrozen(t, f))
	if err != nil {
		t.Fatal(err)
	}
	if got.Hash() != want {
		t.Fatal("frozen state changed under later writes")
	}
	again, err := DecodeState(encodeFrozen(t, m.Freeze()))
	if err != nil || again.Hash() != m.Hash() {
		t.Fatalf("live state does not round-trip: %v", err)
	}
	if a := again.Audit(); !a.OK() {
		t.Fatal(a.Violations)
	}
}

// TestDecodeStateRefusesDamage: every truncation, and a flipped byte at many
// offsets, is refused or decodes to a state that passes the audit (a flip
// inside an id may be valid); it never panics.
func TestDecodeStateRefusesDamage(t *testing.T) {
	b := sampleState(t)
	for i := 0; i < len(b); i++ {
		if _, err := DecodeState(b[:i]); err == nil {
			t.Fatalf("truncated to %d of %d bytes: decoded", i, len(b))
		}
	}
	for i := 0; i < len(b); i++ {
		c := bytes.Clone(b)
		c[i] ^= 0x41
		if m, err := DecodeState(c); err == nil {
			if a := m.Audit(); !a.OK() {
				t.Fatalf("flip at %d decodes to a state that fails the audit: %v", i, a.Violations)
			}
		}
	}
	if _, err := DecodeState(append(bytes.Clone(b), 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
}

// sampleState is a small state with every kind of row.
func sampleState(t testing.TB) []byte {
	m := New()
	m.Define(1, Definition{CampaignID: "c", SKUID: "s", StartAt: 0, EndAt: 1 << 40, PaymentWindowMs: 100, SaleLimit: 3}, nil)
	m.Reserve(10, "r1", "u1", nil)
	m.Reserve(11, "r2", "u2", nil)
	m.Reserve(12, "r3", "u3", nil)
	m.Reserve(13, "r4", "u4", nil) // SOLD_OUT
	m.Reserve(14, "r5", "u1", nil) // ALREADY_PURCHASED
	m.Pay(20, 1, "p1", 990, nil)
	m.Close(21, 2, ReasonCancelled, nil)
	m.Pay(22, 2, "p2", 990, nil) // refund
	m.Release(23, 2, nil)
	m.Pause(24, nil)
	return encodeFrozen(t, m.Freeze())
}

// FuzzDecodeState: DecodeState never panics, and what it accepts passes
// the audit and is what the encoder writes for it, byte for byte (a state
// has one encoding, docs/formats.md).
func FuzzDecodeState(f *testing.F) {
	f.Add(sampleState(f))
	f.Add(lotteryPassesState(f))
	f.Add(encodeFrozen(f, New().Freeze()))
	f.Add([]byte{StateFormatVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeState(b)
		if err != nil {
			return
		}
		if a := m.Audit(); !a.OK() {
			t.Fatalf("accepted state fails the audit: %v", a.Violations)
		}
		enc := encodeFrozen(t, m.Freeze())
		if !bytes.Equal(enc, b) {
			t.Fatalf("decoded from % x, which the encoder writes as % x", b, enc)
		}
		again, err := DecodeState(enc)
		if err != nil || again.Hash() != m.Hash() {
			t.Fatalf("re-encoding: %v", err)
		}
	})
}

// FuzzDecodeRecord: DecodeRecord never panics, and what it accepts
// re-encodes to a payload that decodes to the same record.
func FuzzDecodeRecord(f *testing.F) {
	seeds := []Record{
		{Type: RecordDefine, At: 1, Def: Definition{CampaignID: "c", SKUID: "s", StartAt: 1, EndAt: 2, PaymentWindowMs: 3, SaleLimit: 4, ReleaseOnClose: true}},
		{Type: RecordReserved, At: 5, Seq: 1, Token: 1, ExpireAt: 8, RequestID: "r1", UserID: "u1"},
		{Type: RecordRejected, At: 6, Outcome: OutcomeSoldOut, RequestID: "r2", UserID: "u2"},
		{Type: RecordPaid, At: 7, Seq: 1, PaymentID: "p1", Amount: 990},
		{Type: RecordClosed, At: 8, Seq: 1, Reason: ReasonExpired, Release: true},
		{Type: RecordRefundRequired, At: 9, Seq: 1, PaymentID: "p2", Amount: -1},
		{Type: RecordReleased, At: 10, Seq: 1},
		{Type: RecordPaused, At: 11},
		{Type: RecordResumed, At: 12},
		{Type: RecordLotteryCommitted, At: 13, Def: Definition{Lottery: &LotteryRules{EntriesOpenAt: 1, EntriesCloseAt: 2,
			Beacon: lottery.Beacon{Source: lottery.SourceDrandQuicknet, Round: 9}, Waitlist: 3,
			Tiers: []lottery.Quota{{Tier: 2, Count: 5}, {Tier: 0, Rest: true}}, ServerSeed: lottery.Hash{1}, PseudonymKey: lottery.Hash{2}}}},
		{Type: RecordEntered, At: 14, Seq: 1, RequestID: "r1", UserID: "u1", Holder: Holder{Tier: 2}, Lot: &LotteryFields{}},
		{Type: RecordEntered, At: 14, Seq: 2, RequestID: "ep.r2", UserID: "u2", Lot: &LotteryFields{},
			Holder: Holder{Tier: 1, Risk: 1, Subjects: 0b0011, Keys: [4]SubjectKey{{1}, {2}}}},
		{Type: RecordEntriesClosed, At: 15, Lot: &LotteryFields{Count: 1, Root: lottery.Hash{3}}},
		{Type: RecordDrawStarted, At: 16, Lot: &LotteryFields{Round: 9, Randomness: lottery.Hash{4}}},
		{Type: RecordWon, At: 17, Seq: 1, Token: 1, ExpireAt: 20, Lot: &LotteryFields{EntrySeq: 1, FromWaitlist: true}},
		{Type: RecordWaitlisted, At: 18, Lot: &LotteryFields{Seqs: []uint32{3, 1, 2}}},
		{Type: RecordDrawDone, At: 19, Lot: &LotteryFields{Count: 1, Root: lottery.Hash{5}, WaitlistRoot: lottery.Hash{6}}},
		{Type: RecordDefine, At: 20, Def: Definition{CampaignID: "c", SKUID: "s", StartAt: 1, EndAt: 2, PaymentWindowMs: 3, SaleLimit: 4,
			EntryPass: EntryPassRule{Required: true, LeadMs: 5, TTLMs: 6}, MaxUnpaidPerSubject: 1, PaymentWindowHighRiskMs: 2}},
		{Type: RecordReserved, At: 21, Seq: 2, Token: 2, ExpireAt: 16, RequestID: "ep.r3", UserID: "u3",
			Holder: Holder{Tier: 1, Risk: 2, Subjects: 0b1001, Keys: [4]SubjectKey{{1, 2, 3, 4, 5, 6, 7, 8}, {}, {}, {9}}}},
	}
	for _, r := range seeds {
		f.Add(byte(r.Type), r.AppendPayload(nil))
	}
	f.Add(byte(0), []byte{})
	f.Add(byte(200), []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, typ byte, payload []byte) {
		r, err := DecodeRecord(RecordType(typ), payload)
		if err != nil {
			return
		}
		// A record has one encoding: what decodes is what the encoder
		// writes, byte for byte (docs/formats.md).
		if enc := r.AppendPayload(nil); !bytes.Equal(enc, payload) {
			t.Fatalf("%s: decoded from % x, which the encoder writes as % x", r.Type, payload, enc)
		}
		again, err := DecodeRecord(r.Type, r.AppendPayload(nil))
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("%s: re-encoding gives %+v, %v; first %+v", r.Type, again, err, r)
		}
	})
}

// A varint written longer than its value needs is refused, in a record
// and in a state: the encoder never writes one, so accepting it would give
// a record or a state a second encoding (and a state a second hash's bytes).
func TestOverlongVarintsAreRefused(t *testing.T) {
	released := (&Record{Type: RecordReleased, At: 64, Seq: 1}).AppendPayload(nil) // 80 01 01
	overlong := append([]byte{released[0] | 0x80, released[1] | 0x80, 0x00}, released[2:]...)
	if _, err := DecodeRecord(RecordReleased, released); err != nil {
		t.Fatalf("the encoder's own payload % x: %v", released, err)
	}
	if r, err := DecodeRecord(RecordReleased, overlong); err == nil {
		t.Fatalf("% x (at written in three bytes) decoded as %+v", overlong, r)
	}
	for _, c := range []struct {
		b    []byte
		want error
	}{{[]byte{0x81, 0x00}, errOverlong}, {[]byte{0x80, 0x80, 0x00}, errOverlong}, {[]byte{0x00}, nil},
		{[]byte{0x80, 0x01}, nil}, {[]byte{0x80}, errShort}} {
		d := decoder{b: c.b}
		d.uvarint()
		if d.err != c.want {
			t.Errorf("uvarint % x: %v, want %v", c.b, d.err, c.want)
		}
		d = decoder{b: c.b}
		d.varint()
		if d.err != c.want {
			t.Errorf("varint % x: %v, want %v", c.b, d.err, c.want)
		}
	}
}
