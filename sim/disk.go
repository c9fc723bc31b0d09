package sim

import (
	"maps"
	"math/rand/v2"
	"slices"
)

// file is one simulated file. cache is what reads see: the page cache over
// the disk. disk is what a power loss keeps. Writes land in cache; a
// successful fsync copies the bytes not yet on disk; a failed fsync loses
// them: the kernel marks the pages clean, so reads still see them but no
// later fsync writes them (Linux's "fsyncgate"), and the disk holds zeros
// there.
type file struct {
	cache []byte
	disk  []byte // len(disk) <= len(cache); equal where fsynced
}

// sync makes the cached bytes durable, or loses them when fail is set.
func (f *file) sync(fail bool) {
	if fail {
		f.disk = append(f.disk, make([]byte, len(f.cache)-len(f.disk))...)
		return
	}
	f.disk = append(f.disk, f.cache[len(f.disk):]...)
}

// truncate cuts the file to size bytes and fsyncs the cut.
func (f *file) truncate(size int) {
	f.cache = f.cache[:size:size]
	f.disk = append(f.disk[:0:0], f.cache...)
}

// crash keeps what the disk holds plus an arbitrary prefix of the bytes
// not yet fsynced (a write torn at any byte), sometimes followed by zeros
// or garbage past the end (blocks allocated but never written). It returns
// the fault drawn: "" (nothing lost), "torn", "zeroed" or "garbage".
func (f *file) crash(r *rand.Rand) string {
	unsynced := len(f.cache) - len(f.disk)
	kept := append([]byte(nil), f.disk...)
	fault := ""
	if unsynced > 0 {
		k := r.IntN(unsynced + 1)
		kept = append(kept, f.cache[len(f.disk):len(f.disk)+k]...)
		if k < unsynced {
			fault = "torn"
		}
	}
	if r.IntN(8) == 0 {
		junk := make([]byte, 1+r.IntN(48))
		if r.IntN(2) == 0 {
			fault = "zeroed"
		} else {
			fault = "garbage"
			for i := range junk {
				junk[i] = byte(r.Uint32())
			}
		}
		kept = append(kept, junk...)
	}
	f.cache, f.disk = kept, append([]byte(nil), kept...)
	return fault
}

// directory is one simulated directory. Creating, removing and renaming
// entries change entries at once; only SyncDir makes them durable. A crash
// keeps the entries as they were after an arbitrary prefix of the changes
// made since the last SyncDir (a journaling file system commits them in
// order).
type directory struct {
	entries map[string]*file
	synced  map[string]*file   // at the last SyncDir
	changes []map[string]*file // entries after each change since
}

func newDirectory() *directory {
	return &directory{entries: map[string]*file{}, synced: map[string]*file{}}
}

// names returns the entries' names in order.
func (d *directory) names() []string { return slices.Sorted(maps.Keys(d.entries)) }

// change applies fn to the entries as one change.
func (d *directory) change(fn func(entries map[string]*file)) {
	fn(d.entries)
	d.changes = append(d.changes, maps.Clone(d.entries))
}

// create adds an empty file (replacing one of the same name) and returns it.
func (d *directory) create(name string) *file {
	f := &file{}
	d.change(func(e map[string]*file) { e[name] = f })
	return f
}

func (d *directory) syncDir() {
	d.synced = maps.Clone(d.entries)
	d.changes = nil
}

// crash applies crash rules to the entries and every file, and returns the
// faults drawn by kind.
func (d *directory) crash(r *rand.Rand, faults map[string]int) {
	k := r.IntN(len(d.changes) + 1)
	if k < len(d.changes) {
		faults["dir_change_lost"]++
	}
	if k == 0 {
		d.entries = maps.Clone(d.synced)
	} else {
		d.entries = maps.Clone(d.changes[k-1])
	}
	for _, name := range d.names() { // in name order: the draws are deterministic
		if fault := d.entries[name].crash(r); fault != "" {
			faults[fault]++
		}
	}
	d.syncDir()
}
