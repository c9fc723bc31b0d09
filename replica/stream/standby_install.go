package stream

import (
	"fmt"
	"os"

	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/snapshot"
)

// A snapshot received by a standby: a base copy's (its log closed
// meanwhile) or a new one of the primary's, written chunk by chunk into
// the SKU's folder and installed once whole.

// install is a snapshot being received: a base copy's (the copy's log
// is closed meanwhile), or a new one of the primary's, beside the log.
type install struct {
	index, size, written uint64
	file                 *os.File
	base                 bool
	keepFrom             uint64 // a new snapshot: the primary's first record
}

// dropInstall removes a snapshot being received that will not be
// finished (its connection ended).
func (s *Standby) dropInstall(x *standbySKU) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dropInstallLocked(x)
}

func dropInstallLocked(x *standbySKU) {
	if x.install != nil {
		x.install.file.Close()
		os.Remove(x.install.file.Name())
		x.install = nil
	}
}

// startInstall begins a base copy: its snapshot follows in chunks (none
// for a copy from record 1).
func (s *Standby) startInstall(x *standbySKU, index, size uint64, acks *acker) error {
	if size == 0 {
		return s.finishInstall(x, index, "", nil, acks)
	}
	return s.receive(x, &install{index: index, size: size, base: true})
}

// receive starts receiving a snapshot into a temporary file of the SKU's
// snapshots folder (removed by the next recovery if a crash leaves it).
func (s *Standby) receive(x *standbySKU, in *install) error {
	snaps := skudir.Dir(x.dir).Snapshots()
	if err := os.MkdirAll(snaps, 0o750); err != nil {
		return err
	}
	f, err := os.CreateTemp(snaps, snapshot.Name(in.index)+".*.tmp")
	if err != nil {
		return err
	}
	in.file = f
	x.install = in
	return nil
}

// offer starts receiving a snapshot the primary wrote, of records this
// copy holds.
func (s *Standby) offer(d *decoder) error {
	o, err := decodeInstall(d)
	if err != nil {
		return err
	}
	s.mu.Lock()
	x := s.skus[o.key]
	s.mu.Unlock()
	if x == nil || x.log == nil || x.install != nil || o.index > x.log.LastIndex() {
		return fmt.Errorf("%w: a snapshot of %s at %d out of place", errProtocol, o.key, o.index)
	}
	return s.receive(x, &install{index: o.index, size: o.size, keepFrom: o.keepFrom})
}

// snapshotChunk writes a chunk of a base copy's snapshot; the last one
// installs it.
func (s *Standby) snapshotChunk(d *decoder, acks *acker) error {
	k, offset, chunk, err := decodeSnapshotChunk(d)
	if err != nil {
		return err
	}
	s.mu.Lock()
	x := s.skus[k]
	s.mu.Unlock()
	if x == nil || x.install == nil || offset != x.install.written || offset+uint64(len(chunk)) > x.install.size {
		return fmt.Errorf("%w: a snapshot chunk of %s at %d out of place", errProtocol, k, offset)
	}
	in := x.install
	if _, err := in.file.Write(chunk); err != nil {
		return err
	}
	in.written += uint64(len(chunk))
	if in.written < in.size {
		return nil
	}
	x.install = nil
	path := in.file.Name()
	err = in.file.Sync()
	if cerr := in.file.Close(); err == nil {
		err = cerr
	}
	var b []byte
	if err == nil {
		b, err = os.ReadFile(path)
	}
	switch {
	case err != nil:
	case in.base:
		err = s.finishInstall(x, in.index, path, b, acks)
	default:
		err = InstallSnapshot(standbyCopy{s: s, x: x, received: path}, in.index, in.keepFrom, b)
	}
	if err != nil {
		os.Remove(path) // gone already once installed
		return err
	}
	return nil
}

// finishInstall ends a base copy (FinishBase: the snapshot received at
// path, snap its bytes, put in place; the copy's log started after it)
// and acknowledges it.
func (s *Standby) finishInstall(x *standbySKU, index uint64, path string, snap []byte, acks *acker) error {
	if err := FinishBase(standbyCopy{s: s, x: x, received: path}, index, snap); err != nil {
		return err
	}
	s.metrics.bases.Inc()
	s.logger.Info("replica: base copy installed", "sku", x.key.String(), "snapshot_index", index)
	acks.note(x.key, index)
	return nil
}
