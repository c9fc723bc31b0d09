package recovery

import (
	"errors"
	"fmt"
	"os"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/snapshot"
)

// Options say which state Plan builds. The zero value builds the newest
// state from the newest usable snapshot, accepting a snapshot of any SKU.
type Options struct {
	// CampaignID and SKUID, when set, are the SKU expected: a snapshot of
	// another one is not used (OtherSKU).
	CampaignID, SKUID string
	// UntilIndex is the last record to apply; 0 means the end of the log.
	// Beyond the log's end it is an error wrapping ErrOutOfRange.
	UntilIndex uint64
	// UntilTime, in Unix ms, stops the replay before the first record
	// decided after it, and passes over snapshots whose last record was;
	// 0 means no limit.
	UntilTime int64
	// Verify starts from the oldest base (record 1 when the log has it),
	// checks every snapshot's whole checksum up front, compares every
	// usable snapshot passed on the way with the replayed state, and
	// reports a short log as a problem instead of refusing.
	Verify bool
}

// Result is the state Plan built and what it found on the way.
type Result struct {
	// Machine is the state: the base snapshot's plus the records applied.
	Machine *sku.Machine
	// Base is the snapshot the replay started from; its Path is "" when
	// the replay started at record 1 (Base.Index is then 0).
	Base snapshot.File
	// LastApplied is the index of the last record applied, or Base.Index
	// when none was.
	LastApplied uint64
	// Replayed is the number of records applied.
	Replayed int
	// LogFirst and LogLast are the log's range as Plan saw it (LogFirst =
	// LogLast+1 when the log held no record).
	LogFirst, LogLast uint64
	// Snapshots are the verdicts, oldest first.
	Snapshots []SnapshotStatus
	// Problems are the damage found, one sentence each: corrupt or
	// differing snapshots and, in verify mode, a short log.
	Problems []string
	// ShortLog is set when a whole snapshot proves the log short (Verify
	// mode; otherwise Plan refuses with it).
	ShortLog *ShortLogError
}

// Errors of Plan; test for them with errors.Is.
var (
	// ErrNoBase: the log does not start at record 1 and no usable snapshot
	// covers the records it lacks. Starting empty would forget them.
	ErrNoBase = errors.New("no usable snapshot")
	// ErrShortLog: a whole snapshot was taken at a record after the log's
	// last one (*ShortLogError gives which).
	ErrShortLog = errors.New("durable records are missing from the log")
	// ErrOutOfRange: UntilIndex is beyond the log's last record.
	ErrOutOfRange = errors.New("recovery: point beyond the log")
)

// ShortLogError is the proof that a log lost durable records: a snapshot
// is written only once the log is durable up to its index, so a whole
// snapshot beyond the log's end means that records the engine had
// acknowledged are gone (a truncated or deleted segment). Replaying the
// shorter log would forget reservations and sell their units again.
type ShortLogError struct {
	Snapshot snapshot.File // the whole snapshot beyond the log
	LogLast  uint64        // the log's last index
}

func (e *ShortLogError) Error() string {
	return fmt.Sprintf("the log ends at record %d but the whole snapshot %s was taken at record %d: "+
		"durable records are missing from the log (a truncated or deleted segment); "+
		"restore the SKU from a backup or from that snapshot (seckillctl restore) instead of selling from a shorter history",
		e.LogLast, e.Snapshot.Path, e.Snapshot.Index)
}

// Is makes errors.Is(err, ErrShortLog) hold.
func (e *ShortLogError) Is(target error) bool { return target == ErrShortLog }

// Plan rebuilds a SKU's state from its snapshots and log by the rule in the
// package documentation, and returns it with a verdict on every snapshot.
// It only reads. Errors: ErrOutOfRange, ErrNoBase, *ShortLogError (not in
// verify mode), an error listing the snapshots, and an error of the log's
// Replay or of a record that does not decode or apply ("record N: ...").
// With ErrNoBase and *ShortLogError the Result is returned too, without a
// Machine, for its verdicts on the snapshots.
func Plan(log Log, snaps Snapshots, o Options) (*Result, error) {
	last := log.LastIndex()
	first := log.FirstIndex()
	if first == 0 {
		first = last + 1
	}
	until := last
	if o.UntilIndex > 0 {
		if o.UntilIndex > last {
			return nil, fmt.Errorf("%w: record %d asked for, the log ends at record %d", ErrOutOfRange, o.UntilIndex, last)
		}
		until = o.UntilIndex
	}
	files, err := snaps.List()
	if err != nil {
		return nil, err
	}
	p := &planner{snaps: snaps, o: o, first: first, last: last, until: until,
		res: &Result{LogFirst: first, LogLast: last, Snapshots: make([]SnapshotStatus, len(files))}}
	for i, f := range files {
		p.judge(i, f)
	}
	if err := p.proveShortLog(); err != nil {
		return p.res, err
	}
	if !(o.Verify && first == 1) { // verify replays from record 1 when the log has it
		p.pickBase()
	}
	if p.res.Machine == nil {
		if first > 1 {
			return p.res, fmt.Errorf("%w: the log starts at record %d and no snapshot usable for records 1..%d is among the %d found",
				ErrNoBase, first, first-1, len(files))
		}
		p.res.Machine = sku.New()
	}
	if err := p.replay(log); err != nil {
		return nil, err
	}
	return p.res, nil
}

// planner is one run of Plan.
type planner struct {
	snaps              Snapshots
	o                  Options
	first, last, until uint64
	res                *Result
	next               int // compare's cursor in res.Snapshots
}

// set records a verdict on snapshot i, and a problem for a bad one.
func (p *planner) set(i int, v Verdict, err error) {
	s := &p.res.Snapshots[i]
	s.Verdict, s.Err = v, err
	s.Status = statusText(v, err, p.first, p.last)
	// In verify mode a snapshot of another SKU is a problem too: the
	// engine passes over it, but a misplaced file in a SKU's folder is
	// what the operator should hear of.
	if v == Corrupt || v == Differs || (v == OtherSKU && p.o.Verify) {
		p.res.Problems = append(p.res.Problems, fmt.Sprintf("snapshot %s: %s", s.Path, s.Status))
	}
}

// judge gives snapshot i its verdict from its header (verify: its whole
// checksum).
func (p *planner) judge(i int, f snapshot.File) {
	p.res.Snapshots[i].File = f
	var h snapshot.Header
	var err error
	if p.o.Verify {
		h, err = p.snaps.Check(f)
	} else {
		h, err = p.snaps.ReadHeader(f)
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		p.set(i, Removed, err)
	case err != nil:
		p.set(i, Corrupt, err)
	case h.Index != f.Index:
		p.set(i, Corrupt, fmt.Errorf("the file holds index %d", h.Index))
	case p.o.CampaignID != "" && (h.CampaignID != p.o.CampaignID || h.SKUID != p.o.SKUID):
		p.set(i, OtherSKU, fmt.Errorf("it is of %s/%s", h.CampaignID, h.SKUID))
	case f.Index > p.last:
		p.set(i, BeyondLog, nil) // proveShortLog reads it whole
	case f.Index+1 < p.first:
		p.set(i, OlderThanLog, nil)
	case f.Index > p.until || (p.o.UntilTime != 0 && h.LastAt > p.o.UntilTime):
		p.set(i, AfterPoint, nil)
	default:
		p.set(i, Usable, nil)
	}
}

// proveShortLog reads every snapshot beyond the log whole: the first that
// reads back proves the log short. Outside verify mode that refuses the
// recovery.
func (p *planner) proveShortLog() error {
	for i := range p.res.Snapshots {
		s := &p.res.Snapshots[i]
		if s.Verdict != BeyondLog {
			continue
		}
		if _, _, err := p.snaps.Read(s.File); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				p.set(i, Removed, err)
			} else {
				p.set(i, Corrupt, err) // damaged: no proof of anything
			}
			continue
		}
		p.set(i, ProvesShortLog, nil)
		if p.res.ShortLog == nil {
			p.res.ShortLog = &ShortLogError{Snapshot: s.File, LogLast: p.last}
			p.res.Problems = append(p.res.Problems, p.res.ShortLog.Error())
		}
	}
	if p.res.ShortLog != nil && !p.o.Verify {
		return p.res.ShortLog
	}
	return nil
}

// pickBase loads the snapshot the replay starts from: the newest usable
// one that reads back whole, or in verify mode the oldest. One that does
// not is marked corrupt and the next tried.
func (p *planner) pickBase() {
	n := len(p.res.Snapshots)
	for k := range n {
		i := n - 1 - k
		if p.o.Verify {
			i = k
		}
		s := &p.res.Snapshots[i]
		if s.Verdict != Usable {
			continue
		}
		if m, ok := p.read(i); ok {
			p.set(i, Base, nil)
			p.res.Machine, p.res.Base, p.res.LastApplied = m, s.File, s.Index
			return
		}
	}
}

// read loads snapshot i whole; one that is gone (pruned by a running
// engine) or does not read back is marked so, and ok is false.
func (p *planner) read(i int) (m *sku.Machine, ok bool) {
	_, m, err := p.snaps.Read(p.res.Snapshots[i].File)
	switch {
	case errors.Is(err, os.ErrNotExist):
		p.set(i, Removed, err)
	case err != nil:
		p.set(i, Corrupt, err)
	default:
		return m, true
	}
	return nil, false
}

// errStop ends a replay at the point asked for.
var errStop = errors.New("stop")

// replay applies the records after the base up to the point asked for,
// comparing in verify mode.
func (p *planner) replay(log Log) error {
	r := p.res
	from := r.Base.Index + 1
	if mutantReplayTwice && r.Base.Index > 0 {
		from = r.Base.Index
	}
	err := log.Replay(from, func(index uint64, typ byte, payload []byte) error {
		if index > p.until {
			return errStop
		}
		rec, err := decode(index, typ, payload)
		if err != nil {
			return err
		}
		if p.o.UntilTime != 0 && rec.At > p.o.UntilTime {
			return errStop
		}
		if err := apply(r.Machine, index, &rec); err != nil {
			return err
		}
		r.LastApplied, r.Replayed = index, r.Replayed+1
		if p.o.Verify {
			p.compare(index)
		}
		return nil
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// compare checks the replayed state against every usable snapshot at
// index. Snapshots are sorted by index, so a cursor skips those passed:
// a replay costs one comparison per snapshot, not per record.
func (p *planner) compare(index uint64) {
	for ; p.next < len(p.res.Snapshots) && p.res.Snapshots[p.next].Index < index; p.next++ {
	}
	for i := p.next; i < len(p.res.Snapshots) && p.res.Snapshots[i].Index == index; i++ {
		s := &p.res.Snapshots[i]
		if s.Verdict != Usable {
			continue
		}
		m, ok := p.read(i)
		switch {
		case !ok:
		case m.Hash() != p.res.Machine.Hash():
			p.set(i, Differs, nil)
		default:
			p.set(i, Matches, nil)
		}
	}
}

// Replay applies to m the records of log from index from on, as Plan does
// after its base, and returns the index of the last one applied (0 when
// none). It is for a caller that already holds the state before from.
func Replay(log Log, m *sku.Machine, from uint64) (last uint64, err error) {
	err = log.Replay(from, func(index uint64, typ byte, payload []byte) error {
		rec, err := decode(index, typ, payload)
		if err == nil {
			err = apply(m, index, &rec)
		}
		if err == nil {
			last = index
		}
		return err
	})
	return last, err
}

// decode decodes the record at index.
func decode(index uint64, typ byte, payload []byte) (sku.Record, error) {
	rec, err := sku.DecodeRecord(sku.RecordType(typ), payload)
	if err != nil {
		return rec, fmt.Errorf("record %d: %w", index, err)
	}
	return rec, nil
}

// apply applies the record at index to m.
func apply(m *sku.Machine, index uint64, rec *sku.Record) error {
	if err := m.Apply(rec); err != nil {
		return fmt.Errorf("record %d: %w", index, err)
	}
	return nil
}
