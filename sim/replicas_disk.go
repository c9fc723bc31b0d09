package sim

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/seckill/seckill/actors/core"
	"github.com/seckill/seckill/actors/shell"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

// A replica's disk and process in replica-set mode: its SKU log is a
// real wal.Log over the simulated directory (store.go, disk.go), its
// primary's records are made by the engine's shell (actors/shell) over
// the SKU core, and a rejoin cuts its tail with wal.CutSegments.

// walName names a replica's SKU log in messages.
func walName(rep *rsReplica, k *rsSKU) string { return "sim/" + rep.name + "/" + k.id + "/wal" }

// openCopy opens a replica's SKU log over its directory as a standby's
// copy (not replicated: its records are the primary's).
func (s *rsRun) openCopy(rep *rsReplica, k *rsSKU) {
	l, err := wal.OpenOver(walName(rep, k), s.store(k.dir, &k.storeFaults),
		wal.Options{Stepped: true, SegmentSize: segmentSize, Logger: quiet})
	if err != nil {
		panic(fmt.Sprintf("replica %s: open its copy of %s: %v", rep.name, k.id, err))
	}
	k.log = l
}

// store is a replica's log store over its directory. It hides the
// store's segment starts (wal.SegmentedStore): the wal then reads records
// for the stream and the feed (ReadLocal, ReadDurable) through the store,
// as there are no files to read, and TruncateBefore cuts at the record
// asked (no segment boundary to round to).
func (s *rsRun) store(dir *directory, faults *storeFaults) wal.SegmentStore {
	return struct{ wal.SegmentStore }{openLogStore(dir, segmentSize, faults, &s.now)}
}

// shellConfig is the engine's shell over a primary's directory: its log
// Replicated (commits wait for Confirm) with rep as its Shipper, as the
// stream's Primary.Replication makes it in seckilld.
func (s *rsRun) shellConfig(rep *rsReplica, k *rsSKU) shell.Config {
	return shell.Config{
		CampaignID: campaignID,
		SKUID:      k.id,
		Core: core.Config{
			Rand:            randReader{&s.g},
			SnapshotEvery:   s.snapshotEvery,
			LogFailureRetry: 2 * time.Second,
			Verify:          true,
		},
		OpenLog: func() (*wal.Log, error) {
			return wal.OpenOver(walName(rep, k), s.store(k.dir, &k.storeFaults),
				wal.Options{Stepped: true, SegmentSize: segmentSize, Logger: quiet, Replicated: true, Shipper: rsShipper{s, rep, k}})
		},
		Snapshots:    &k.snaps,
		Executor:     &k.exec,
		Host:         rsHost{s, rep, k},
		SnapshotKeep: s.snapshotKeep,
		RetainFrom:   func() uint64 { return s.retainFrom(rep, k) },
		Logger:       quiet,
	}
}

// retainFrom is the first record of a primary's SKU log its standbys
// connected or waited for still need (Primary.retainFrom's rule): their
// acknowledged index + 1, bounded by maxRetain records behind the durable
// index; a standby further behind gets a base copy when it comes back.
func (s *rsRun) retainFrom(rep *rsReplica, k *rsSKU) uint64 {
	if !rep.primary || k.log == nil {
		return 0
	}
	i := slices.Index(rep.skus, k)
	var bound uint64 = 1
	if d := k.log.DurableIndex(); d+1 > s.maxRetain {
		bound = d + 1 - s.maxRetain
	}
	names := rep.waits.Waited()
	for name, c := range rep.copies {
		if c.connected && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	var need uint64
	for _, name := range names {
		var want uint64 = 1
		if c := rep.copies[name]; c != nil {
			want = c.skus[i].acked + 1
		}
		if want < bound {
			s.faults["beyond_retention"]++
			want = bound
		}
		if need == 0 || want < need {
			need = want
		}
	}
	return need
}

// rsShipper is a primary log's wal.Shipper: each batch goes, before it is
// written here, to every standby whose copy is live (Primary.Ship).
type rsShipper struct {
	s   *rsRun
	rep *rsReplica
	k   *rsSKU
}

func (h rsShipper) Ship(b *wal.Batch) {
	rep, k := h.rep, h.k
	if !rep.primary {
		return // a demoted primary's log flushing at its close ships nothing
	}
	k.shipped = b.LastIndex()
	i := slices.Index(rep.skus, k)
	frames := make([][]byte, b.Len())
	for j := range frames {
		frames[j] = append([]byte(nil), b.Frame(j)...)
	}
	for _, name := range rsNames {
		c := rep.copies[name]
		if c == nil || !c.connected || !c.skus[i].live {
			continue
		}
		cs := &c.skus[i]
		if cs.next != b.FirstIndex() || cs.next > cs.acked+rsSendWindow {
			// Out of step, or its send queue full (the standby takes the
			// bytes no faster than it acknowledges them): it catches up
			// from the log's files, at the standby's pace.
			cs.live = false
			continue
		}
		h.s.send(rsMsg{kind: msgRecords, from: rep.name, to: name, conn: c.conn, epoch: rep.holding.Epoch, sku: i, index: cs.next, frames: frames})
		cs.next = b.LastIndex() + 1
	}
}

// rsHost is a primary's shell.Host: it counts the replies the shell
// releases (the commit index covers their records) and brings back the
// log failures.
type rsHost struct {
	s   *rsRun
	rep *rsReplica
	k   *rsSKU
}

func (h rsHost) Appending(*sku.Machine, uint64, []sku.Record) {}

func (h rsHost) Answer(calls []*core.Call) {
	h.s.replies["answered at once"] += len(calls)
	for _, c := range calls {
		if c == h.s.finalCall {
			h.s.finalCall = nil // the final phase asks again
		}
	}
}

func (h rsHost) Release(rel *shell.Release) {
	for _, c := range rel.Calls {
		if rel.Durable && c.Err == nil {
			if c.Kind == core.KindReserve {
				h.s.replies["reserve "+c.Result.Outcome.String()]++
			}
			if c == h.s.finalCall {
				h.s.finalDone = true
			}
		} else if c == h.s.finalCall {
			h.s.finalCall = nil // failed, or its primary closed: the final phase asks again
		}
	}
	if rel.Durable {
		if commit := rel.Log.CommitIndex(); commit > h.k.confirmed {
			panic(fmt.Sprintf("replica %s released replies of %s at commit index %d, confirmed %d", h.rep.name, h.k.id, commit, h.k.confirmed))
		}
	}
	if rel.Failure != nil {
		h.k.inputs = append(h.k.inputs, logFailure{log: rel.Log, err: rel.Failure})
	}
}

func (h rsHost) Ticked(int, int64)         {}
func (h rsHost) Recovered(*shell.Recovery) {}
func (h rsHost) Failed(error)              {}

// SnapshotWritten is actors.Replication.SnapshotWritten: the stream ships
// the snapshot to the standbys whose copies it covers.
func (h rsHost) SnapshotWritten(info shell.SnapshotInfo) {
	h.s.faults["snapshot"]++
	h.k.snapshot = max(h.k.snapshot, info.Index)
}
func (h rsHost) SnapshotDone(shell.SnapshotInfo, error) {}

// rsExecutor keeps a primary shell's jobs; each runs at its replica's
// turn once due.
type rsExecutor struct{ jobs []pendingJob }

func (x *rsExecutor) Go(j *shell.Job) {
	x.jobs = append(x.jobs, pendingJob{job: j, due: j.At.UnixMilli()})
}

func (x *rsExecutor) After(d time.Duration, j *shell.Job) {
	x.jobs = append(x.jobs, pendingJob{job: j, due: j.At.UnixMilli() + d.Milliseconds()})
}

// runJobs runs a SKU shell's jobs due by the replica's clock.
func (s *rsRun) runJobs(rep *rsReplica, k *rsSKU) {
	now := s.clock(rep)
	for i := 0; i < len(k.exec.jobs); {
		p := k.exec.jobs[i]
		if p.due > now.UnixMilli() {
			i++
			continue
		}
		k.exec.jobs = slices.Delete(k.exec.jobs, i, i+1)
		p.job.Run()
		k.sh.Done(now, p.job)
		i = 0
	}
}

// segmentFiles are a replica's log segments on its simulated directory,
// for wal.CutSegments.
type segmentFiles struct{ dir *directory }

func (f segmentFiles) Segments() ([]wal.Segment, error) {
	var segs []wal.Segment
	for _, name := range f.dir.names() {
		if index, err := strconv.ParseUint(name, 10, 64); len(name) == 20 && err == nil && index > 0 {
			segs = append(segs, wal.Segment{Path: name, FirstIndex: index})
		}
	}
	return segs, nil
}

func (f segmentFiles) ReadSegment(seg wal.Segment) ([]byte, error) {
	return f.dir.entries[seg.Path].cache, nil
}

func (f segmentFiles) RemoveSegment(seg wal.Segment) error {
	f.dir.change(func(e map[string]*file) { delete(e, seg.Path) })
	return nil
}

func (f segmentFiles) TruncateSegment(seg wal.Segment, size int64) error {
	f.dir.entries[seg.Path].truncate(int(size))
	return nil
}

func (f segmentFiles) SyncDir() error {
	f.dir.syncDir()
	return nil
}

// durableFrames returns the frames a power loss keeps of a directory's
// log now, by index: the fsynced bytes of the segment files whose names
// are durable, each entry a valid frame of its index, up to the first
// that is not.
func durableFrames(dir *directory) map[uint64][]byte {
	out := map[uint64][]byte{}
	names := maps.Clone(dir.synced)
	segs, _ := segmentFiles{&directory{entries: names}}.Segments()
	for _, seg := range segs {
		data := names[seg.Path].disk
		index, pos := seg.FirstIndex, 0
		for pos < len(data) {
			size, n := binary.Uvarint(data[pos:])
			if n <= 0 || size > uint64(len(data)-pos-n) {
				break
			}
			frame := data[pos+n : pos+n+int(size)]
			if _, i, _, err := wal.DecodeFrame(frame); err != nil || i != index {
				break
			}
			out[index] = frame
			index++
			pos += n + int(size)
		}
	}
	return out
}
