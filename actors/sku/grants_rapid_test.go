package sku

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// ledgerModel is the quota ledger as the cell tests see it: the tokens not
// granted to the cell (free), and every allocation and return it made.
type ledgerModel struct {
	free   []uint32 // sorted
	allocs map[uint64]Allocation
	nextAl uint64
	nextRt uint64
}

// take removes the n lowest free tokens and returns them as sorted ranges.
func (l *ledgerModel) take(n int) []TokenRange {
	var rs []TokenRange
	for _, t := range l.free[:n] {
		rs = append(rs, TokenRange{t, t})
	}
	l.free = l.free[n:]
	return NormalizeRanges(rs)
}

func (l *ledgerModel) credit(rs []TokenRange) {
	for _, r := range rs {
		for t := r.First; t <= r.Last; t++ {
			l.free = append(l.free, t)
		}
	}
	slices.Sort(l.free)
}

// TestCelledMachineAgainstModel drives a celled SKU with random grants
// (fresh, repeated, conflicting, overlapping), returns (fresh and
// repeated), epochs, reserves, payments, cancels, expiry and clock moves.
// After every step it audits, compares available with the model, and
// checks conservation against the ledger model: granted - returned + free
// = sale_limit, no token both free and owned. At the end the log replays
// (through the payload codec, with every GRANT written twice) and the
// state round-trips through the snapshot codec to the same hash.
func TestCelledMachineAgainstModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		def := Definition{
			CampaignID: "c1", SKUID: "s1", StartAt: 1_000, EndAt: 1_000_000,
			PaymentWindowMs: rapid.Int64Range(1, 50).Draw(t, "window"),
			SaleLimit:       uint32(rapid.IntRange(1, 30).Draw(t, "limit")),
			ReleaseOnClose:  rapid.Bool().Draw(t, "release_on_close"),
			Cell:            "cell-1", CellMapVersion: 7,
		}
		m := New()
		md := &model{def: def, now: 990, celled: true, reqs: map[string]modelReq{}, live: map[string]int{}}
		led := &ledgerModel{allocs: map[uint64]Allocation{}}
		for i := uint32(1); i <= def.SaleLimit; i++ {
			led.free = append(led.free, i)
		}
		var log []Record
		must := func(o Outcome, recs []Record, err error) {
			if err != nil || o != OutcomeOK {
				t.Fatalf("%s: %v", o, err)
			}
			log = append(log, recs...)
		}
		must(m.Define(md.now, def, nil))
		epoch := uint64(0)
		users := rapid.SampledFrom([]string{"u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8"})
		reqs := rapid.SampledFrom([]string{"r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12"})
		seqs := func() uint32 { return uint32(rapid.IntRange(0, len(md.res)+1).Draw(t, "seq")) }
		actions := map[string]func(*rapid.T){
			"grant": func(t *rapid.T) {
				if len(led.free) == 0 {
					return
				}
				n := rapid.IntRange(1, len(led.free)).Draw(t, "units")
				led.nextAl++
				a := Allocation{Seq: led.nextAl, Epoch: epoch, Ranges: led.take(n)}
				led.allocs[a.Seq] = a
				must(m.Grant(md.now, a, nil))
				md.avail += n
			},
			"regrant": func(t *rapid.T) {
				if led.nextAl == 0 {
					return
				}
				a := led.allocs[uint64(rapid.IntRange(1, int(led.nextAl)).Draw(t, "alloc"))]
				o, recs, err := m.Grant(md.now, a, nil)
				if o != OutcomeOK || err != nil || len(recs) != 0 {
					t.Fatalf("repeat of allocation %d: %s %v with %d records", a.Seq, o, err, len(recs))
				}
			},
			"badGrant": func(t *rapid.T) {
				// A known seq with other ranges, or a new seq holding a
				// token the cell owns: both refused, nothing recorded.
				if led.nextAl == 0 {
					return
				}
				a := led.allocs[uint64(rapid.IntRange(1, int(led.nextAl)).Draw(t, "alloc"))]
				b := Allocation{Seq: a.Seq, Epoch: a.Epoch + 1, Ranges: a.Ranges}
				if rapid.Bool().Draw(t, "newSeq") {
					if m.ownedIn(a.Ranges) == 0 {
						return // all of it sold and returned since: not owned
					}
					b = Allocation{Seq: led.nextAl + 100, Epoch: epoch, Ranges: a.Ranges}
				}
				before := m.Hash()
				o, recs, err := m.Grant(md.now, b, nil)
				if o != OutcomeInvalid || err == nil || len(recs) != 0 || m.Hash() != before {
					t.Fatalf("bad grant %+v: %s %v with %d records", b, o, err, len(recs))
				}
			},
			"return": func(t *rapid.T) {
				units := uint32(rapid.IntRange(0, int(def.SaleLimit)).Draw(t, "units"))
				led.nextRt++
				res, recs := m.Return(md.now, led.nextRt, epoch, units, nil)
				log = append(log, recs...)
				got := int(res.Return.Units())
				if res.Outcome != OutcomeOK || got != min(int(units), md.avail) {
					t.Fatalf("return %d of %d available: %s, %d units", units, md.avail, res.Outcome, got)
				}
				md.avail -= got
				led.credit(res.Return.Ranges) // only after the record: it is in log now
				again, more := m.Return(md.now, led.nextRt, epoch, units, nil)
				if len(more) != 0 || !again.Return.equal(res.Return) {
					t.Fatalf("repeat of return %d: %+v with %d records", led.nextRt, again, len(more))
				}
			},
			"epoch": func(t *rapid.T) {
				next := epoch + uint64(rapid.IntRange(0, 2).Draw(t, "bump"))
				o, recs := m.SetEpoch(md.now, next, nil)
				log = append(log, recs...)
				if o != OutcomeOK || (len(recs) == 1) != (next > epoch) {
					t.Fatalf("epoch %d after %d: %s with %d records", next, epoch, o, len(recs))
				}
				epoch = next
				if epoch > 0 {
					if o, recs := m.SetEpoch(md.now, epoch-1, nil); o != OutcomeInvalid || len(recs) != 0 {
						t.Fatalf("a lower epoch: %s with %d records", o, len(recs))
					}
				}
			},
			"reserve": func(t *rapid.T) {
				req, user := reqs.Draw(t, "req"), users.Draw(t, "user")
				want := md.reserve(req, user)
				res, recs := m.Reserve(md.now, req, user, nil)
				log = append(log, recs...)
				if res.Outcome != want {
					t.Fatalf("reserve(%s,%s): %s, model %s", req, user, res.Outcome, want)
				}
				for _, r := range recs {
					if r.Type == RecordRejected {
						t.Fatalf("a celled SKU recorded %s", r.Type)
					}
				}
			},
			"pay": func(t *rapid.T) {
				seq := seqs()
				want := md.pay(int(seq), "p1")
				res, recs := m.Pay(md.now, seq, "p1", 100, nil)
				log = append(log, recs...)
				if res.Outcome != want {
					t.Fatalf("pay(%d): %s, model %s", seq, res.Outcome, want)
				}
			},
			"cancel": func(t *rapid.T) {
				seq := seqs()
				want := md.close(int(seq), ReasonCancelled)
				res, recs := m.Close(md.now, seq, ReasonCancelled, nil)
				log = append(log, recs...)
				if res.Outcome != want {
					t.Fatalf("cancel(%d): %s, model %s", seq, res.Outcome, want)
				}
			},
			"release": func(t *rapid.T) {
				seq := seqs()
				want := md.release(int(seq))
				res, recs := m.Release(md.now, seq, nil)
				log = append(log, recs...)
				if res.Outcome != want {
					t.Fatalf("release(%d): %s, model %s", seq, res.Outcome, want)
				}
			},
			"expire": func(t *rapid.T) {
				md.expireDue()
				log = m.Expire(md.now, 1000, log)
			},
			"clock": func(t *rapid.T) {
				md.now += rapid.Int64Range(0, 12).Draw(t, "dt")
			},
		}
		names := []string{"grant", "regrant", "badGrant", "return", "epoch", "reserve", "reserve", "reserve", "pay", "cancel", "release", "expire", "clock", "clock"}
		steps := rapid.IntRange(1, 200).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			actions[rapid.SampledFrom(names).Draw(t, "action")](t)
			checkCell(t, m, md, led)
		}

		// Replay, with every GRANT applied twice: the repeat is a no-op.
		replayed := New()
		for i := range log {
			r, err := DecodeRecord(log[i].Type, log[i].AppendPayload(nil))
			if err != nil {
				t.Fatalf("decode record %d: %v", i, err)
			}
			for range 1 + btoi(r.Type == RecordGrant) {
				if err := replayed.Apply(&r); err != nil {
					t.Fatalf("replay record %d (%s): %v", i, r.Type, err)
				}
			}
		}
		if replayed.Hash() != m.Hash() {
			t.Fatalf("replay of %d records gives another state", len(log))
		}
		var buf bytes.Buffer
		if _, err := m.Freeze().Encode(&buf); err != nil {
			t.Fatal(err)
		}
		restored, err := DecodeState(buf.Bytes())
		if err != nil {
			t.Fatalf("decode state: %v", err)
		}
		if restored.Hash() != m.Hash() || !restored.Audit().OK() || restored.Definition() != m.Definition() {
			t.Fatalf("the snapshot codec does not round-trip: %v", restored.Audit().Violations)
		}
		checkCell(t, restored, md, led)
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkCell audits m and checks it against the models: available, and
// conservation of tokens between the cell and the ledger.
func checkCell(t *rapid.T, m *Machine, md *model, led *ledgerModel) {
	a := m.Audit()
	if !a.OK() {
		t.Fatalf("audit: %v", a.Violations)
	}
	c := a.Counts
	if int(c.Available) != md.avail {
		t.Fatalf("available %d, model %d", c.Available, md.avail)
	}
	if c.Granted-c.Returned+uint64(len(led.free)) != uint64(c.SaleLimit) {
		t.Fatalf("granted %d - returned %d + free %d != sale_limit %d", c.Granted, c.Returned, len(led.free), c.SaleLimit)
	}
	free := []TokenRange{}
	for _, f := range led.free {
		free = append(free, TokenRange{f, f})
	}
	if len(free) > 0 {
		if n := m.ownedIn(NormalizeRanges(free)); n != 0 {
			t.Fatalf("%d tokens are free in the ledger and owned by the cell", n)
		}
	}
	if v := Gate(new(m.Definition()), m.Paused(), &c, md.now); v.SoldOutForGood() && md.now < m.Definition().EndAt {
		t.Fatalf("a celled SKU is %s within its window", v)
	}
}

// TestCelledRecordsRefusedElsewhere: GRANT, RETURN and EPOCH on a SKU that
// is not celled are refused as commands and on replay, and a celled log
// never takes a REJECTED record.
func TestCelledRecordsRefusedElsewhere(t *testing.T) {
	plain := New()
	def := Definition{CampaignID: "c", SKUID: "s", StartAt: 0, EndAt: 100, PaymentWindowMs: 10, SaleLimit: 5}
	if _, _, err := plain.Define(0, def, nil); err != nil {
		t.Fatal(err)
	}
	a := Allocation{Seq: 1, Ranges: []TokenRange{{1, 2}}}
	if o, recs, err := plain.Grant(1, a, nil); o != OutcomeInvalid || err == nil || len(recs) != 0 {
		t.Fatalf("grant on a plain SKU: %s %v", o, err)
	}
	if r, recs := plain.Return(1, 1, 0, 1, nil); r.Outcome != OutcomeInvalid || len(recs) != 0 {
		t.Fatalf("return on a plain SKU: %s", r.Outcome)
	}
	for _, r := range []Record{{Type: RecordGrant, At: 1, Cell: &a}, {Type: RecordReturn, At: 1, Cell: &a}, {Type: RecordEpoch, At: 1, Cell: &Allocation{Epoch: 1}}} {
		if err := plain.Apply(&r); err == nil {
			t.Fatalf("%s applied on a plain SKU", r.Type)
		}
	}
	celled := New()
	def.Cell = "c1"
	if _, _, err := celled.Define(0, def, nil); err != nil {
		t.Fatal(err)
	}
	if err := celled.Apply(&Record{Type: RecordRejected, At: 1, Outcome: OutcomeSoldOut, RequestID: "r", UserID: "u"}); err == nil {
		t.Fatal("a celled SKU took a REJECTED record")
	}
	res, recs := celled.Reserve(1, "r", "u", nil)
	if res.Outcome != OutcomeSoldOut || len(recs) != 0 {
		t.Fatalf("reserve on an empty cell: %s with %d records", res.Outcome, len(recs))
	}
	// RETURN of a token the cell does not own does not apply.
	if err := celled.Apply(&Record{Type: RecordReturn, At: 1, Cell: &Allocation{Seq: 1, Ranges: []TokenRange{{1, 1}}}}); err == nil {
		t.Fatal("a RETURN of a token never granted applied")
	}
	// The cell and its map are frozen.
	next := def
	next.CellMapVersion = 2
	if _, _, err := celled.Define(2, next, nil); err == nil {
		t.Fatal("the cell map version changed")
	}
}

// TestPlainDefineLayoutUnchanged pins the DEFINE payload and the state
// encoding of a SKU that is not celled to the layout before cells: no
// trailing cell fields, so existing logs and snapshots read and write the
// same bytes.
func TestPlainDefineLayoutUnchanged(t *testing.T) {
	def := Definition{CampaignID: "c", SKUID: "s", StartAt: 1, EndAt: 100, PaymentWindowMs: 10, SaleLimit: 5, IDKey: [16]byte{1}}
	r := Record{Type: RecordDefine, At: 3, Def: def}
	want := []byte{6, 1, 'c', 1, 's', 2, 200, 1, 20, 5, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if got := r.AppendPayload(nil); !bytes.Equal(got, want) {
		t.Fatalf("DEFINE payload\n got %v\nwant %v", got, want)
	}
	m := New()
	if err := m.Apply(&r); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := m.Freeze().Encode(&buf); err != nil {
		t.Fatal(err)
	}
	// version, the definition as above minus At, defined, paused, last_at,
	// handed out, and four empty lists.
	wantState := append(append([]byte{StateFormatVersion}, want[1:]...), 1, 0, 6, 0, 0, 0, 0, 0)
	if !bytes.Equal(buf.Bytes(), wantState) {
		t.Fatalf("state\n got %v\nwant %v", buf.Bytes(), wantState)
	}
	celled := def
	celled.Cell = "c2"
	r.Def = celled
	back, err := DecodeRecord(RecordDefine, r.AppendPayload(nil))
	if err != nil || back.Def != celled {
		t.Fatalf("a celled DEFINE does not round-trip: %v %+v", err, back.Def)
	}
	if fmt.Sprint(RecordGrant, RecordReturn, RecordEpoch) != "GRANT RETURN EPOCH" {
		t.Fatal("record names")
	}
}

// TestCellReservationIDs: a celled SKU's reservation ids name the cell;
// they parse to the same campaign, SKU and seq, and other ids name none.
func TestCellReservationIDs(t *testing.T) {
	key := [16]byte{7}
	id := FormatCellReservationID("demo", "sku-1", "c2", 42, key)
	c, s, seq, tag, err := ParseReservationID(id)
	if err != nil || c != "demo" || s != "sku-1" || seq != 42 || ReservationCell(id) != "c2" {
		t.Fatalf("%s: %s %s %d %s %v, cell %q", id, c, s, seq, tag, err, ReservationCell(id))
	}
	plain := FormatReservationID("demo", "sku-1", 42, key)
	if ReservationCell(plain) != "" || plain == id {
		t.Fatalf("%s names a cell", plain)
	}
	if _, _, _, ptag, _ := ParseReservationID(plain); ptag != tag {
		t.Fatal("the cell changes the tag")
	}
	for _, bad := range []string{"demo~sku-1~c2~42", "demo~sku-1~c/2~42~" + tag, "demo~sku-1~c2~c3~42~" + tag} {
		if _, _, _, _, err := ParseReservationID(bad); err == nil || ReservationCell(bad) != "" {
			t.Fatalf("%q accepted", bad)
		}
	}
}
