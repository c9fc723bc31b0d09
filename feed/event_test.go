package feed

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/lottery"
	"pgregory.net/rapid"
)

var updateGolden = flag.Bool("update-feed-golden", false, "rewrite testdata/events.golden")

// Every record type has an event type: a record type added to package sku
// without one fails here (add it to EventType and to the golden file).
func TestEveryRecordTypeHasAnEventType(t *testing.T) {
	seen := map[string]sku.RecordType{}
	for rt := 1; rt < 256; rt++ {
		typ := sku.RecordType(rt)
		if strings.HasPrefix(typ.String(), "RecordType(") {
			if EventType(typ) != "" {
				t.Errorf("%v has event type %q but no name in package sku", typ, EventType(typ))
			}
			continue
		}
		et := EventType(typ)
		if et == "" {
			t.Errorf("record type %v has no feed event type: add it to EventType (feed/event.go)", typ)
			continue
		}
		seen[et] = typ
		if _, ok := goldenRecords()[typ]; !ok {
			t.Errorf("record type %v has no golden record in goldenRecords", typ)
		}
	}
}

// goldenRecords is one record of every type.
func goldenRecords() map[sku.RecordType]sku.Record {
	const at = 1_767_225_600_000 // 2026-01-01T00:00:00Z
	return map[sku.RecordType]sku.Record{
		sku.RecordDefine: {Type: sku.RecordDefine, At: at, Def: sku.Definition{CampaignID: "c1", SKUID: "s1",
			StartAt: at, EndAt: at + 3_600_000, PaymentWindowMs: 900_000, SaleLimit: 100, ReleaseOnClose: true,
			EntryPass: sku.EntryPassRule{Required: true}, MaxUnpaidPerSubject: 2, PaymentWindowHighRiskMs: 180_000}},
		sku.RecordReserved: {Type: sku.RecordReserved, At: at + 1, Seq: 7, Token: 3, ExpireAt: at + 900_001, RequestID: "r-7", UserID: "u-7",
			Holder: sku.Holder{Tier: 2, Risk: 1, Subjects: 1, Keys: [sku.SubjectKindCount]sku.SubjectKey{{9}}}},
		sku.RecordRejected:       {Type: sku.RecordRejected, At: at + 2, Outcome: sku.OutcomeSoldOut, Seq: 1, RequestID: "r-8", UserID: "u-8"},
		sku.RecordPaid:           {Type: sku.RecordPaid, At: at + 3, Seq: 7, PaymentID: "p-1", Amount: 1999},
		sku.RecordClosed:         {Type: sku.RecordClosed, At: at + 4, Seq: 7, Reason: sku.ReasonExpired, Release: true},
		sku.RecordRefundRequired: {Type: sku.RecordRefundRequired, At: at + 5, Seq: 7, PaymentID: "p-2", Amount: 1999},
		sku.RecordReleased:       {Type: sku.RecordReleased, At: at + 6, Seq: 7},
		sku.RecordPaused:         {Type: sku.RecordPaused, At: at + 7},
		sku.RecordResumed:        {Type: sku.RecordResumed, At: at + 8},
		sku.RecordLotteryCommitted: {Type: sku.RecordLotteryCommitted, At: at + 9, Def: sku.Definition{Lottery: &sku.LotteryRules{
			EntriesOpenAt: at, EntriesCloseAt: at + 60_000, Waitlist: 5, ServerSeed: lottery.Hash{0xee}, PseudonymKey: lottery.Hash{0xdd}}}},
		sku.RecordEntered:       {Type: sku.RecordEntered, At: at + 10, Seq: 4, RequestID: "r-4", UserID: "u-4", Holder: sku.Holder{Tier: 1}, Lot: &sku.LotteryFields{}},
		sku.RecordEntriesClosed: {Type: sku.RecordEntriesClosed, At: at + 11, Lot: &sku.LotteryFields{Count: 40, Root: lottery.Hash{1}}},
		sku.RecordDrawStarted:   {Type: sku.RecordDrawStarted, At: at + 12, Lot: &sku.LotteryFields{Round: 777, Randomness: lottery.Hash{2}}},
		sku.RecordWon: {Type: sku.RecordWon, At: at + 13, Seq: 7, Token: 3, ExpireAt: at + 900_001,
			Lot: &sku.LotteryFields{EntrySeq: 4, FromWaitlist: true}},
		sku.RecordWaitlisted: {Type: sku.RecordWaitlisted, At: at + 14, Lot: &sku.LotteryFields{Seqs: []uint32{9, 2, 5}}},
		sku.RecordDrawDone:   {Type: sku.RecordDrawDone, At: at + 15, Lot: &sku.LotteryFields{Count: 10, Root: lottery.Hash{3}, WaitlistRoot: lottery.Hash{4}}},
		sku.RecordGrant: {Type: sku.RecordGrant, At: at + 16, Cell: &sku.Allocation{Seq: 3, Epoch: 2,
			Ranges: []sku.TokenRange{{First: 101, Last: 150}, {First: 401, Last: 410}}}},
		sku.RecordReturn: {Type: sku.RecordReturn, At: at + 17, Cell: &sku.Allocation{Seq: 1, Epoch: 2,
			Ranges: []sku.TokenRange{{First: 141, Last: 150}}}},
		sku.RecordEpoch:        {Type: sku.RecordEpoch, At: at + 18, Cell: &sku.Allocation{Epoch: 3}},
		sku.RecordLotteryEnded: {Type: sku.RecordLotteryEnded, At: at + 19, Lot: &sku.LotteryFields{Count: 2}},
	}
}

// The event of each record type, byte for byte (testdata/events.golden;
// -update-feed-golden rewrites it). The reservation's view carries a later
// state: only its immutable fields may appear.
func TestEventGolden(t *testing.T) {
	const at = 1_767_225_600_000
	def := sku.Definition{CampaignID: "c1", SKUID: "s1", IDKey: [16]byte{1, 2, 3}}
	view := sku.View{RequestID: "r-7", UserID: "u-7", TokenID: 3, CreatedAt: at + 1, ExpireAt: at + 900_001,
		State: sku.StateClosed, PaymentID: "later", Amount: 5, ClosedAt: at + 4}
	var out strings.Builder
	records := goldenRecords()
	for rt := 1; rt < 256; rt++ {
		r, ok := records[sku.RecordType(rt)]
		if !ok {
			continue
		}
		// The record goes through its encoding, as the feed reads it.
		back, err := sku.DecodeRecord(r.Type, r.AppendPayload(nil))
		if err != nil {
			t.Fatalf("%v: %v", r.Type, err)
		}
		d := def
		if r.Cell != nil { // a celled SKU's records
			d.Cell = "c2"
		}
		e := NewEvent(back, uint64(rt)+100, eventID("0123456789abcdef", uint64(rt)+100), d, sku.NewReservationIDs(d), view)
		raw, err := e.appendJSON(nil) // what the feed sends
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			t.Fatalf("%v: %v in %s", r.Type, err, raw)
		}
		out.WriteString("# " + r.Type.String() + "\n" + b.String() + "\n")
	}
	path := filepath.Join("testdata", "events.golden")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-feed-golden to create it)", err)
	}
	if out.String() != string(want) {
		t.Errorf("events differ from %s:\n%s", path, out.String())
	}
}

// A celled SKU's reservation events carry the ids its cell hands out
// (five parts, naming the cell), the ids pay and cancel are routed by.
func TestEventReservationIDOfACelledSKU(t *testing.T) {
	def := sku.Definition{CampaignID: "c1", SKUID: "s1", Cell: "c2", IDKey: [16]byte{1, 2, 3}}
	r := sku.Record{Type: sku.RecordReserved, At: 1, Seq: 7, Token: 3, ExpireAt: 2, RequestID: "r-7", UserID: "u-7"}
	e := NewEvent(r, 1, eventID("0123456789abcdef", 1), def, sku.NewReservationIDs(def), sku.View{})
	want := sku.FormatCellReservationID("c1", "s1", "c2", 7, def.IDKey)
	if e.Data.ReservationID != want || e.Subject != want || sku.ReservationCell(e.Subject) != "c2" {
		t.Fatalf("reservation id %q, subject %q, want %q naming cell c2", e.Data.ReservationID, e.Subject, want)
	}
}

// The feed's encoder renders every event as json.Marshal does (the
// struct tags are the reference): every record type, and reservation
// events with arbitrary strings (quotes, HTML characters, control
// characters, invalid UTF-8, U+2028) and values.
func TestEventJSONMatchesMarshal(t *testing.T) {
	def := sku.Definition{CampaignID: "c1", SKUID: "s1", IDKey: [16]byte{1, 2, 3}}
	check := func(t interface{ Fatalf(string, ...any) }, e CloudEvent) {
		got, err := e.appendJSON(nil)
		want, werr := json.Marshal(e)
		if err != nil || werr != nil || !bytes.Equal(got, want) {
			t.Fatalf("appendJSON:\n%s (%v)\njson.Marshal:\n%s (%v)", got, err, want, werr)
		}
	}
	for _, r := range goldenRecords() {
		d := def
		if r.Cell != nil {
			d.Cell = "c2"
		}
		check(t, NewEvent(r, 9, eventID("0123456789abcdef", 9), d, sku.NewReservationIDs(d), sku.View{RequestID: "r", UserID: "u", TokenID: 1, CreatedAt: 1, ExpireAt: 2}))
	}
	rapid.Check(t, func(rt *rapid.T) {
		text := rapid.OneOf(rapid.String(), rapid.StringOf(rapid.SampledFrom([]rune{'a', '"', '\\', '<', '>', '&', '\n', 0x01, 0x7f, 0xe9, 0x2028, 0xfffd})),
			rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }))
		r := sku.Record{
			Type:      rapid.SampledFrom([]sku.RecordType{sku.RecordReserved, sku.RecordPaid, sku.RecordClosed, sku.RecordRejected, sku.RecordRefundRequired, sku.RecordReleased}).Draw(rt, "type"),
			At:        rapid.Int64Range(0, 253_402_300_799_999).Draw(rt, "at"),
			Seq:       rapid.Uint32().Draw(rt, "seq"),
			Token:     rapid.Uint32().Draw(rt, "token"),
			ExpireAt:  rapid.Int64Range(0, 253_402_300_799_999).Draw(rt, "expire_at"),
			RequestID: text.Draw(rt, "request_id"),
			UserID:    text.Draw(rt, "user_id"),
			PaymentID: text.Draw(rt, "payment_id"),
			Amount:    rapid.Int64().Draw(rt, "amount"),
			Release:   rapid.Bool().Draw(rt, "release"),
			Holder:    sku.Holder{Tier: rapid.Uint8().Draw(rt, "tier"), Risk: rapid.Uint8().Draw(rt, "risk")},
		}
		view := sku.View{RequestID: text.Draw(rt, "view_request_id"), UserID: text.Draw(rt, "view_user_id"), TokenID: rapid.Uint32().Draw(rt, "view_token"),
			CreatedAt: rapid.Int64Range(0, 1<<40).Draw(rt, "created_at"), ExpireAt: rapid.Int64Range(0, 1<<40).Draw(rt, "view_expire_at")}
		d := def
		d.CampaignID, d.SKUID = text.Draw(rt, "campaign"), text.Draw(rt, "sku")
		check(rt, NewEvent(r, rapid.Uint64().Draw(rt, "index"), text.Draw(rt, "id"), d, sku.NewReservationIDs(d), view))
	})
}

// An entered event carries the risk of an entry pass that gave a risk
// level or subject keys, beside the tier every entry has; never the keys.
func TestEnteredEventRisk(t *testing.T) {
	def := sku.Definition{CampaignID: "c1", SKUID: "s1", IDKey: [16]byte{1, 2, 3}}
	for _, h := range []sku.Holder{{Tier: 1}, {Tier: 1, Risk: 2}, {Subjects: 1, Keys: [sku.SubjectKindCount]sku.SubjectKey{{9}}}} {
		r := sku.Record{Type: sku.RecordEntered, At: 5, Seq: 1, RequestID: "r", UserID: "u", Holder: h, Lot: &sku.LotteryFields{}}
		back, err := sku.DecodeRecord(r.Type, r.AppendPayload(nil))
		if err != nil {
			t.Fatal(err)
		}
		e := NewEvent(back, 1, "", def, sku.NewReservationIDs(def), sku.View{})
		hasPass := h.Risk != 0 || h.Subjects != 0
		if e.Data.Tier == nil || *e.Data.Tier != h.Tier || (e.Data.Risk != nil) != hasPass || hasPass && *e.Data.Risk != h.Risk {
			t.Errorf("holder %+v: tier %v, risk %v", h, e.Data.Tier, e.Data.Risk)
		}
	}
}
