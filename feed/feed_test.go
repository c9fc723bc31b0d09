package feed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// memSource is a Source of SKUs whose logs are MemLogs: the feed read
// without an engine, each state set up by hand.
type memSource struct {
	t    *testing.T
	mu   sync.Mutex
	skus map[string]*memSKU // campaign/sku
	// lookupErr, when set, fails every Reservations call.
	lookupErr error
	lookups   int
}

type memSKU struct {
	def   sku.Definition
	log   *MemLog
	dir   string
	open  bool
	views map[uint32]sku.View
}

func newMemSource(t *testing.T) *memSource {
	return &memSource{t: t, skus: map[string]*memSKU{}}
}

// add defines a SKU: its log holds its DEFINE record, durable.
func (m *memSource) add(campaignID, skuID string) *memSKU {
	m.mu.Lock()
	defer m.mu.Unlock()
	def := sku.Definition{CampaignID: campaignID, SKUID: skuID, IDKey: [16]byte{byte(len(m.skus) + 1)},
		StartAt: 1_767_225_600_000, EndAt: 1_767_229_200_000, PaymentWindowMs: 900_000, SaleLimit: 10}
	s := &memSKU{def: def, log: NewMemLog(), dir: m.t.TempDir(), open: true, views: map[uint32]sku.View{}}
	s.log.Append(sku.Record{Type: sku.RecordDefine, At: def.StartAt, Def: def})
	s.log.Sync()
	m.skus[campaignID+"/"+skuID] = s
	return s
}

func (m *memSource) get(campaignID, skuID string) *memSKU {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.skus[campaignID+"/"+skuID]
}

func (m *memSource) Definition(campaignID, skuID string) (sku.Definition, bool) {
	s := m.get(campaignID, skuID)
	if s == nil {
		return sku.Definition{}, false
	}
	return s.def, true
}

func (m *memSource) CampaignSKUs(campaignID string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for _, s := range m.skus {
		if s.def.CampaignID == campaignID {
			ids = append(ids, s.def.SKUID)
		}
	}
	slices.Sort(ids)
	return ids
}

func (m *memSource) FeedLog(campaignID, skuID string) (Log, string, bool) {
	s := m.get(campaignID, skuID)
	if s == nil || !s.open {
		return nil, "", false
	}
	return s.log, s.dir, true
}

func (m *memSource) Reservations(ctx context.Context, campaignID, skuID string, seqs []uint32) ([]sku.View, error) {
	m.mu.Lock()
	m.lookups++
	err := m.lookupErr
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	s := m.get(campaignID, skuID)
	views := make([]sku.View, len(seqs))
	for i, seq := range seqs {
		views[i] = s.views[seq]
	}
	return views, nil
}

func (m *memSource) DurableState(campaignID, skuID string) (*sku.Machine, uint64, error) {
	s := m.get(campaignID, skuID)
	return nil, s.log.DurableIndex(), nil
}

// reserve appends (not durable) a RESERVED record of seq and the view its
// later events read.
func (s *memSKU) reserve(seq uint32, user string) uint64 {
	at := s.def.StartAt + int64(seq)
	s.views[seq] = sku.View{RequestID: "r-" + user, UserID: user, TokenID: seq, CreatedAt: at, ExpireAt: at + 900_000}
	return s.log.Append(sku.Record{Type: sku.RecordReserved, At: at, Seq: seq, Token: seq, ExpireAt: at + 900_000, RequestID: "r-" + user, UserID: user})
}

// event is the part of an event the tests read.
type event struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	SeckillIndex uint64         `json:"seckillindex"`
	Data         map[string]any `json:"data"`
}

func decode(t *testing.T, events []*Encoded) []event {
	t.Helper()
	out := make([]event, len(events))
	for i, e := range events {
		if err := json.Unmarshal(e.JSON(), &out[i]); err != nil {
			t.Fatalf("%s: %v", e.JSON(), err)
		}
		if out[i].ID != e.ID() || out[i].Type != e.Type() || out[i].SeckillIndex != e.Index() {
			t.Fatalf("event %s: id %s type %s index %d", e.JSON(), e.ID(), e.Type(), e.Index())
		}
	}
	return out
}

func typesOf(events []event) string {
	var s []string
	for _, e := range events {
		s = append(s, strings.TrimPrefix(e.Type, "seckill."))
	}
	return strings.Join(s, " ")
}

// past is a deadline that has passed: Wait answers at once.
var past = time.Unix(0, 0)

// A reader sends the durable records in log order, each once, with the
// reservation's immutable fields on later events (one look-up per page),
// SOLD_OUT only when asked for, pages of the limit, and a cursor that
// resumes after the last record read.
func TestReaderPages(t *testing.T) {
	src := newMemSource(t)
	s := src.add("c", "s")
	s.reserve(1, "alice")
	s.log.Append(sku.Record{Type: sku.RecordRejected, At: s.def.StartAt + 2, Outcome: sku.OutcomeSoldOut, RequestID: "r-bob", UserID: "bob"},
		sku.Record{Type: sku.RecordPaid, At: s.def.StartAt + 3, Seq: 1, PaymentID: "p-1", Amount: 500})
	s.log.Append(sku.Record{Type: sku.RecordClosed, At: s.def.StartAt + 4, Seq: 1, Reason: sku.ReasonCancelled})
	f := New(src)

	r, err := f.Open("c", "s", "", Params{})
	if err != nil {
		t.Fatal(err)
	}
	page, err := r.Wait(context.Background(), past)
	if err != nil || typesOf(decode(t, page.Events)) != "sku.defined" || page.DurableIndex != 1 || page.FirstIndex != 1 {
		t.Fatalf("before the records are durable: %+v %v", page, err)
	}
	s.log.Sync()
	page, err = r.Wait(context.Background(), past)
	events := decode(t, page.Events)
	if err != nil || typesOf(events) != "reservation.created reservation.paid reservation.closed" {
		t.Fatalf("page: %s %v", typesOf(events), err)
	}
	if paid := events[1]; paid.Data["user_id"] != "alice" || paid.Data["created_at"] == nil || paid.Data["amount"] != 500.0 {
		t.Fatalf("paid: %+v", paid)
	}
	if closed := events[2]; closed.Data["reason"] != "CANCELLED" || closed.Data["token_released"] != false {
		t.Fatalf("closed: %+v", closed)
	}
	if page.NextCursor != events[2].ID || r.Cursor() != page.NextCursor || src.lookups != 1 {
		t.Fatalf("cursor %q after %q; %d look-ups", page.NextCursor, events[2].ID, src.lookups)
	}

	// From the start with types= and a limit of 2: the rejection, and
	// pages that resume where the last ended.
	all, _ := f.Open("c", "s", "", Params{Limit: 2, Types: map[string]bool{eventRequestRejected: true, eventReservationCreated: true}})
	first, _ := all.Wait(context.Background(), past)
	second, _ := all.Wait(context.Background(), past)
	third, _ := all.Wait(context.Background(), past)
	if typesOf(decode(t, first.Events)) != "reservation.created" || typesOf(decode(t, second.Events)) != "request.rejected" ||
		len(third.Events) != 0 || third.NextCursor != page.NextCursor {
		t.Fatalf("pages of 2: %+v %+v %+v", first, second, third)
	}
	// A cursor resumes; the same record has the same event, from the cache.
	again, err := f.Open("c", "s", first.NextCursor, Params{})
	if err != nil {
		t.Fatal(err)
	}
	rest, _ := again.Wait(context.Background(), past)
	if len(rest.Events) != 2 || rest.Events[0] != page.Events[1] {
		t.Fatalf("after %s: %+v", first.NextCursor, rest)
	}
}

// Bad cursors, unknown SKUs and a log not open get their errors.
func TestOpenErrors(t *testing.T) {
	src := newMemSource(t)
	s := src.add("c", "s")
	other := src.add("c", "t")
	f := New(src)
	var bad *BadCursorError
	for _, cursor := range []string{"xyz", "0123456789abcdef-0", "0123456789abcdef-1"} {
		if _, err := f.Open("c", "s", cursor, Params{}); !errors.As(err, &bad) {
			t.Errorf("cursor %q: %v", cursor, err)
		}
	}
	theirs := eventID(RootHistory(other.def.IDKey), 1)
	if _, err := f.Open("c", "s", theirs, Params{}); !errors.As(err, &bad) {
		t.Errorf("another SKU's cursor: %v", err)
	}
	// Each feed's cursor given to the other is named as such.
	mine := eventID(RootHistory(s.def.IDKey), 1)
	if _, err := f.Open("c", "s", CampaignCursor(map[string]string{"s": mine}), Params{}); !errors.As(err, &bad) || !strings.Contains(bad.Detail, "a campaign cursor") {
		t.Errorf("a campaign cursor on a SKU's feed: %v", err)
	}
	if _, err := f.OpenCampaign("c", mine, Params{}); !errors.As(err, &bad) || !strings.Contains(bad.Detail, "is an event id") {
		t.Errorf("an event id on a campaign's feed: %v", err)
	}
	if _, err := f.Open("c", "nope", "", Params{}); !errors.Is(err, ErrUnknownSKU) {
		t.Errorf("unknown SKU: %v", err)
	}
	s.open = false
	if _, err := f.Open("c", "s", "", Params{}); !errors.Is(err, ErrNotOpen) {
		t.Errorf("log not open: %v", err)
	}
	s.open = true
	// A cursor beyond the durable index: this log is an older copy.
	var diverged *DivergedError
	_, err := f.Open("c", "s", eventID(RootHistory(s.def.IDKey), 5), Params{})
	if !errors.As(err, &diverged) || !diverged.BeyondDurable || diverged.ForkIndex != 1 || diverged.SKUID != "s" || !errors.Is(err, ErrDiverged) {
		t.Errorf("beyond durable: %v", err)
	}
	// Its message asks for the new history before the copy records past
	// the cursor (the same history then holds other records there).
	if err == nil || !strings.Contains(err.Error(), "seckillctl restore --until-index 1") {
		t.Errorf("beyond durable: the message names no new history: %v", err)
	}
}

// A restored log (a fork in its history file) refuses the cursors of the
// abandoned history past the fork, and names the new history after it.
func TestDivergedCursor(t *testing.T) {
	src := newMemSource(t)
	s := src.add("c", "s")
	for seq := uint32(1); seq <= 3; seq++ {
		s.reserve(seq, fmt.Sprint("u", seq))
	}
	s.log.Sync()
	root := RootHistory(s.def.IDKey)
	forked := Chain{Root: root, Forks: []Fork{{History: "00000000000000aa", ForkIndex: 2}}}
	if err := forked.Write(s.dir); err != nil {
		t.Fatal(err)
	}
	f := New(src)
	var diverged *DivergedError
	if _, err := f.Open("c", "s", eventID(root, 3), Params{}); !errors.As(err, &diverged) || diverged.ForkIndex != 2 || diverged.History != "00000000000000aa" {
		t.Fatalf("cursor past the fork: %v", err)
	}
	r, err := f.Open("c", "s", eventID(root, 2), Params{})
	if err != nil {
		t.Fatalf("cursor at the fork: %v", err)
	}
	page, _ := r.Wait(context.Background(), past)
	if len(page.Events) != 2 || page.Events[0].ID() != "00000000000000aa-3" {
		t.Fatalf("after the fork: %+v", page.Events)
	}
}

// A cursor before the log's first record is compacted; a reader without a
// cursor that a truncation overtakes starts at the retained log.
func TestCompacted(t *testing.T) {
	src := newMemSource(t)
	s := src.add("c", "s")
	for seq := uint32(1); seq <= 5; seq++ {
		s.reserve(seq, fmt.Sprint("u", seq))
	}
	s.log.Sync()
	f := New(src)
	old, err := f.Open("c", "s", eventID(RootHistory(s.def.IDKey), 1), Params{})
	if err != nil {
		t.Fatal(err)
	}
	fresh, _ := f.Open("c", "s", "", Params{})
	s.log.TruncateFront(4)
	var compacted *CompactedError
	if _, err := old.Wait(context.Background(), past); !errors.As(err, &compacted) || compacted.FirstIndex != 4 || compacted.SKUID != "s" {
		t.Fatalf("compacted cursor: %v", err)
	}
	page, err := fresh.Wait(context.Background(), past)
	if err != nil || len(page.Events) != 3 || page.Events[0].Index() != 4 || page.FirstIndex != 4 {
		t.Fatalf("no cursor, overtaken: %+v %v", page, err)
	}
}

// A long poll wakes at the group commit of the next record, answers at
// its deadline with the cursor it stands at, and at once when ctx ends;
// a log that closes answers ErrLogClosed; a failed look-up its error.
func TestWait(t *testing.T) {
	src := newMemSource(t)
	s := src.add("c", "s")
	f := New(src)
	r, _ := f.Open("c", "s", "", Params{})
	r.Wait(context.Background(), past) // the definition
	got := make(chan *Page)
	go func() {
		page, _ := r.Wait(context.Background(), time.Now().Add(time.Minute))
		got <- page
	}()
	for f.Waiting() != 1 {
		time.Sleep(time.Millisecond)
	}
	s.reserve(1, "alice")
	s.log.Sync()
	if page := <-got; len(page.Events) != 1 || page.Events[0].Index() != 2 {
		t.Fatalf("woken: %+v", page)
	}
	at := r.Cursor()
	if page, err := r.Wait(context.Background(), time.Now().Add(10*time.Millisecond)); err != nil || len(page.Events) != 0 || page.NextCursor != at {
		t.Fatalf("deadline: %+v %v", page, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if page, err := r.Wait(ctx, time.Now().Add(time.Hour)); err != nil || page.NextCursor != at {
		t.Fatalf("ctx done: %+v %v", page, err)
	}
	s.log.Append(sku.Record{Type: sku.RecordReleased, At: s.def.StartAt + 9, Seq: 1})
	s.log.Sync()
	src.lookupErr = errors.New("busy")
	var lookup *LookupError
	if _, err := r.Wait(context.Background(), past); !errors.As(err, &lookup) || lookup.Err != src.lookupErr {
		t.Fatalf("look-up failed: %v", err)
	}
	s.log.Fail(wal.ErrClosed)
	if _, err := r.Wait(context.Background(), past); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("closed log: %v", err)
	}
}

// A campaign reader merges its SKUs' feeds, each SKU's share of the limit
// a page; a SKU defined later is read from its start, at once when the
// feed is told (SKUDefined); each streamed event carries the campaign
// cursor as of it, which resumes there.
func TestCampaignReader(t *testing.T) {
	src := newMemSource(t)
	a, b := src.add("c", "a"), src.add("c", "b")
	for seq := uint32(1); seq <= 4; seq++ {
		a.reserve(seq, fmt.Sprint("u", seq))
	}
	a.log.Sync()
	b.reserve(1, "v")
	b.log.Sync()
	f := New(src)
	c, err := f.OpenCampaign("c", "", Params{Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	before := c.Positions()
	page, err := c.Wait(context.Background(), past)
	if err != nil || len(page.Parts) != 2 || len(page.Parts[0].Events) != 2 || len(page.Parts[1].Events) != 2 {
		t.Fatalf("a page of 4 over 2 SKUs: %+v %v", page, err)
	}
	stream := page.StreamEvents(before)
	if len(stream) != 4 {
		t.Fatalf("stream events: %+v", stream)
	}
	// Resuming at the second streamed event sends the rest.
	resumed, err := f.OpenCampaign("c", stream[1].Cursor, Params{})
	if err != nil {
		t.Fatal(err)
	}
	rest, _ := resumed.Wait(context.Background(), past)
	var ids []string
	for _, part := range rest.Parts {
		for _, e := range part.Events {
			ids = append(ids, e.ID())
		}
	}
	// a's records after its second, and b's from its start (the cursor as
	// of a's second event holds no position of b).
	if len(ids) != 5 || ids[0] != eventID(RootHistory(a.def.IDKey), 3) || ids[3] != eventID(RootHistory(b.def.IDKey), 1) {
		t.Fatalf("resumed: %v", ids)
	}

	got := make(chan *CampaignPage)
	go func() {
		for {
			p, _ := c.Wait(context.Background(), time.Now().Add(time.Minute))
			if len(p.Parts) > 0 && p.Parts[len(p.Parts)-1].SKUID == "n" {
				got <- p
				return
			}
		}
	}()
	for f.Waiting() != 1 {
		time.Sleep(time.Millisecond)
	}
	src.add("c", "n")
	f.SKUDefined()
	if p := <-got; p.Parts[len(p.Parts)-1].Events[0].Type() != eventSKUDefined {
		t.Fatalf("the new SKU: %+v", p.Parts)
	}

	if _, err := f.OpenCampaign("nope", "", Params{}); !errors.Is(err, ErrUnknownCampaign) {
		t.Fatalf("unknown campaign: %v", err)
	}
	var bad *BadCursorError
	if _, err := f.OpenCampaign("c", CampaignCursor(map[string]string{"x": "0123456789abcdef-1"}), Params{}); !errors.As(err, &bad) {
		t.Fatalf("a position of no SKU's history: %v", err)
	}
	for i := range CampaignFeedMaxSKUs {
		src.add("w", fmt.Sprint("s", i))
	}
	if _, err := f.OpenCampaign("w", "", Params{}); err != nil {
		t.Fatalf("the widest campaign: %v", err)
	}
	src.add("w", "one-more")
	var tooWide *TooWideError
	if _, err := f.OpenCampaign("w", "", Params{}); !errors.As(err, &tooWide) || tooWide.SKUs != CampaignFeedMaxSKUs+1 {
		t.Fatalf("one SKU more: %v", err)
	}
}

// The export is as of the durable index, and its cursor resumes the feed
// there.
func TestExport(t *testing.T) {
	src := newMemSource(t)
	s := src.add("c", "s")
	s.reserve(1, "alice")
	s.log.Sync()
	s.reserve(2, "bob") // not durable
	f := New(src)
	e, err := f.Export("c", "s")
	if err != nil || e.AsOf != 2 || e.NextCursor != eventID(RootHistory(s.def.IDKey), 2) {
		t.Fatalf("export: %+v %v", e, err)
	}
	if _, err := f.Open("c", "s", e.NextCursor, Params{}); err != nil {
		t.Fatalf("the export's cursor: %v", err)
	}
	if _, err := f.Export("c", "nope"); !errors.Is(err, ErrUnknownSKU) {
		t.Fatalf("unknown SKU: %v", err)
	}
}
