package recovery

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/snapshot"
)

const (
	historyRecords = 30
	startAt        = 1_000 // Unix ms of record 1; record i is decided at startAt+10*(i-1)
)

var testDef = sku.Definition{CampaignID: "c1", SKUID: "s1", StartAt: startAt, EndAt: 1 << 40,
	PaymentWindowMs: sku.MaxPaymentWindowMs, SaleLimit: 100, ReleaseOnClose: true}

// testHistory returns the records of a SKU: its definition, then
// reservations, one per 10 ms.
func testHistory(t testing.TB) []sku.Record {
	t.Helper()
	m := sku.New()
	_, log, err := m.Define(startAt, testDef, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; len(log) < historyRecords; i++ {
		_, log = m.Reserve(startAt+int64(10*len(log)), fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i), log)
	}
	for i := range log {
		if want := startAt + int64(10*i); log[i].At != want {
			t.Fatalf("record %d decided at %d, want %d", i+1, log[i].At, want)
		}
	}
	return log
}

// stateAt replays records 1..index.
func stateAt(t testing.TB, records []sku.Record, index uint64) *sku.Machine {
	t.Helper()
	m := sku.New()
	for i := range records[:index] {
		if err := m.Apply(&records[i]); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// memLog is the in-memory Log: records first..last of a history.
type memLog struct {
	records     []sku.Record // the whole history, record i at [i-1]
	first, last uint64       // first = last+1 when it holds none
}

func (l *memLog) FirstIndex() uint64 {
	if l.first > l.last {
		return 0
	}
	return l.first
}

func (l *memLog) LastIndex() uint64 { return l.last }

func (l *memLog) Replay(from uint64, fn func(uint64, byte, []byte) error) error {
	for index := max(from, l.first); index <= l.last; index++ {
		r := &l.records[index-1]
		if err := fn(index, byte(r.Type), r.AppendPayload(nil)); err != nil {
			return err
		}
	}
	return nil
}

// fixture is a log and snapshots of one history.
type fixture struct {
	records []sku.Record
	log     *memLog
	snaps   *snapshot.Memory
}

func newFixture(t testing.TB, first, last uint64, snapshotAt ...uint64) *fixture {
	t.Helper()
	records := testHistory(t)
	f := &fixture{records: records, log: &memLog{records: records, first: first, last: last}, snaps: &snapshot.Memory{}}
	for _, index := range snapshotAt {
		f.putSnapshot(t, index, stateAt(t, records, index))
	}
	return f
}

// putSnapshot stores a snapshot of m labelled index.
func (f *fixture) putSnapshot(t testing.TB, index uint64, m *sku.Machine) {
	t.Helper()
	b, _, err := snapshot.Marshal(m.Freeze(), index, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.snaps.Put(index, b)
}

// tear cuts the snapshot at index in half (its header still reads).
func (f *fixture) tear(index uint64) {
	b, _ := f.snaps.Get(index)
	f.snaps.Put(index, b[:len(b)/2])
}

// verdicts renders the verdicts as "index:verdict ...".
func verdicts(res *Result) string {
	var parts []string
	for _, s := range res.Snapshots {
		parts = append(parts, fmt.Sprintf("%d:%v", s.Index, s.Verdict))
	}
	return strings.Join(parts, " ")
}

func TestPlan(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T) *fixture
		o     Options
		// want
		base        uint64 // 0: record 1
		lastApplied uint64
		verdicts    string
		problems    int
		shortLog    bool
	}{
		{
			name:  "newest usable snapshot",
			setup: func(t *testing.T) *fixture { return newFixture(t, 1, 30, 10, 20) },
			base:  20, lastApplied: 30, verdicts: "10:usable 20:base",
		},
		{
			name:  "no snapshot: from record 1",
			setup: func(t *testing.T) *fixture { return newFixture(t, 1, 30) },
			base:  0, lastApplied: 30, verdicts: "",
		},
		{
			name: "damaged newest falls back",
			setup: func(t *testing.T) *fixture {
				f := newFixture(t, 1, 30, 10, 20)
				f.tear(20)
				return f
			},
			base: 10, lastApplied: 30, verdicts: "10:base 20:corrupt", problems: 1,
		},
		{
			name: "truncated log: an older snapshot cannot start it",
			setup: func(t *testing.T) *fixture {
				return newFixture(t, 15, 30, 10, 20)
			},
			base: 20, lastApplied: 30, verdicts: "10:older than log 20:base",
		},
		{
			name: "snapshot of another SKU is not used",
			setup: func(t *testing.T) *fixture {
				f := newFixture(t, 1, 30, 10)
				other := sku.New()
				def := testDef
				def.SKUID = "s2"
				if _, _, err := other.Define(startAt, def, nil); err != nil {
					t.Fatal(err)
				}
				f.putSnapshot(t, 20, other)
				return f
			},
			o:    Options{CampaignID: "c1", SKUID: "s1"},
			base: 10, lastApplied: 30, verdicts: "10:base 20:other SKU",
		},
		{
			name: "a file holding another index is corrupt",
			setup: func(t *testing.T) *fixture {
				f := newFixture(t, 1, 30, 10)
				b, _ := f.snaps.Get(10)
				f.snaps.Put(20, b)
				return f
			},
			base: 10, lastApplied: 30, verdicts: "10:base 20:corrupt", problems: 1,
		},
		{
			name:  "until-index passes over later snapshots",
			setup: func(t *testing.T) *fixture { return newFixture(t, 1, 30, 10, 20) },
			o:     Options{UntilIndex: 15},
			base:  10, lastApplied: 15, verdicts: "10:base 20:after point",
		},
		{
			name:  "until-time stops before the first later record",
			setup: func(t *testing.T) *fixture { return newFixture(t, 1, 30, 10, 20) },
			o:     Options{UntilTime: startAt + 10*11 + 5}, // record 12 at +110, record 13 at +120
			base:  10, lastApplied: 12, verdicts: "10:base 20:after point",
		},
		{
			name: "a damaged snapshot beyond the log proves nothing",
			setup: func(t *testing.T) *fixture {
				f := newFixture(t, 1, 15, 10, 20)
				f.tear(20)
				return f
			},
			base: 10, lastApplied: 15, verdicts: "10:base 20:corrupt", problems: 1,
		},
		{
			name:  "verify: from record 1, every snapshot compared",
			setup: func(t *testing.T) *fixture { return newFixture(t, 1, 30, 10, 20) },
			o:     Options{Verify: true},
			base:  0, lastApplied: 30, verdicts: "10:matches 20:matches",
		},
		{
			name: "verify: a snapshot that differs from the log",
			setup: func(t *testing.T) *fixture {
				f := newFixture(t, 1, 30, 10)
				f.putSnapshot(t, 20, stateAt(t, f.records, 19)) // the state at 19, labelled 20
				return f
			},
			o:    Options{Verify: true},
			base: 0, lastApplied: 30, verdicts: "10:matches 20:differs", problems: 1,
		},
		{
			name:  "verify: a truncated log starts from the oldest base",
			setup: func(t *testing.T) *fixture { return newFixture(t, 8, 30, 10, 20, 25) },
			o:     Options{Verify: true},
			base:  10, lastApplied: 30, verdicts: "10:base 20:matches 25:matches",
		},
		{
			name:  "verify: a short log is a problem, not a refusal",
			setup: func(t *testing.T) *fixture { return newFixture(t, 1, 15, 10, 20) },
			o:     Options{Verify: true},
			base:  0, lastApplied: 15, verdicts: "10:matches 20:proves short log", problems: 1, shortLog: true,
		},
		{
			name:  "empty log, no snapshot",
			setup: func(t *testing.T) *fixture { return newFixture(t, 1, 0) },
			base:  0, lastApplied: 0, verdicts: "",
		},
		{
			name:  "log truncated past its end, snapshot at its end",
			setup: func(t *testing.T) *fixture { return newFixture(t, 31, 30, 30) },
			base:  30, lastApplied: 30, verdicts: "30:base",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.setup(t)
			res, err := Plan(f.log, f.snaps, c.o)
			if err != nil {
				t.Fatal(err)
			}
			if got := verdicts(res); got != c.verdicts {
				t.Errorf("verdicts %q, want %q", got, c.verdicts)
			}
			if res.Base.Index != c.base || (c.base == 0) != (res.Base.Path == "") || res.LastApplied != c.lastApplied {
				t.Errorf("base %+v, last applied %d; want base %d, last applied %d", res.Base, res.LastApplied, c.base, c.lastApplied)
			}
			if want := int(c.lastApplied - c.base); res.Replayed != want {
				t.Errorf("replayed %d, want %d", res.Replayed, want)
			}
			if len(res.Problems) != c.problems || (res.ShortLog != nil) != c.shortLog {
				t.Errorf("problems %q, short log %v", res.Problems, res.ShortLog)
			}
			if want := stateAt(t, f.records, c.lastApplied); res.Machine.Hash() != want.Hash() {
				t.Errorf("state differs from a replay of records 1..%d", c.lastApplied)
			}
		})
	}
}

func TestPlanRefuses(t *testing.T) {
	// A whole snapshot beyond the log's end: records were lost.
	f := newFixture(t, 1, 15, 10, 20)
	res, err := Plan(f.log, f.snaps, Options{})
	var short *ShortLogError
	if !errors.As(err, &short) || !errors.Is(err, ErrShortLog) || short.Snapshot.Index != 20 || short.LogLast != 15 ||
		!strings.Contains(err.Error(), "taken at record 20") || !strings.Contains(err.Error(), "durable records are missing from the log") {
		t.Fatalf("short log: %v", err)
	}
	if res == nil || res.Machine != nil || verdicts(res) != "10:usable 20:proves short log" {
		t.Fatalf("short log result: %+v", res)
	}

	// The log starts after record 1 and no snapshot covers 1..first-1.
	for _, snapAt := range [][]uint64{nil, {5}} {
		f = newFixture(t, 11, 30, snapAt...)
		res, err = Plan(f.log, f.snaps, Options{})
		if !errors.Is(err, ErrNoBase) || !strings.Contains(err.Error(), "no usable snapshot") ||
			!strings.Contains(err.Error(), "starts at record 11") || !strings.Contains(err.Error(), "records 1..10") {
			t.Fatalf("no base (snapshots %v): %v", snapAt, err)
		}
		if res == nil || res.Machine != nil {
			t.Fatalf("no base result: %+v", res)
		}
	}
	// The only snapshot that would cover it is damaged.
	f = newFixture(t, 11, 30, 20)
	f.tear(20)
	if _, err := Plan(f.log, f.snaps, Options{}); !errors.Is(err, ErrNoBase) {
		t.Fatalf("no base with a damaged snapshot: %v", err)
	}

	// A point beyond the log.
	f = newFixture(t, 1, 30)
	if _, err := Plan(f.log, f.snaps, Options{UntilIndex: 31}); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("until-index beyond the log: %v", err)
	}

	// A record that does not apply.
	f = newFixture(t, 1, 30)
	f.log.records = append([]sku.Record(nil), f.records...)
	f.log.records[4] = f.records[0] // a second DEFINE of the same SKU at a lower time
	f.log.records[4].At = 0
	if _, err := Plan(f.log, f.snaps, Options{}); err == nil || !strings.HasPrefix(err.Error(), "record 5: ") {
		t.Fatalf("bad record: %v", err)
	}
}

// vanishing lists one snapshot more than it holds: pruned between the
// listing and the read.
type vanishing struct{ *snapshot.Memory }

func (v vanishing) List() ([]snapshot.File, error) {
	files, err := v.Memory.List()
	return append(files, snapshot.File{Path: "memory:" + snapshot.Name(29), Index: 29}), err
}

func TestPlanSnapshotRemovedWhileReading(t *testing.T) {
	f := newFixture(t, 1, 30, 10)
	res, err := Plan(f.log, vanishing{f.snaps}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := verdicts(res); got != "10:base 29:removed" || len(res.Problems) != 0 ||
		!errors.Is(res.Snapshots[1].Err, os.ErrNotExist) || res.Snapshots[1].Status != "removed while reading (pruned by the engine)" {
		t.Fatalf("verdicts %q, problems %q, status %q", got, res.Problems, res.Snapshots[1].Status)
	}
}

func TestReplay(t *testing.T) {
	f := newFixture(t, 1, 30)
	m := stateAt(t, f.records, 12)
	last, err := Replay(f.log, m, 13)
	if err != nil || last != 30 || m.Hash() != stateAt(t, f.records, 30).Hash() {
		t.Fatalf("Replay = %d, %v", last, err)
	}
}
