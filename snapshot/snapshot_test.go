package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"pgregory.net/rapid"
)

var testDef = sku.Definition{CampaignID: "c1", SKUID: "s1", StartAt: 1_000, EndAt: 1 << 40,
	PaymentWindowMs: 30, SaleLimit: 5, ReleaseOnClose: true}

// history is a Machine and the records that built it.
type history struct {
	m   *sku.Machine
	now int64
	log []sku.Record
}

func newHistory(def sku.Definition) *history {
	h := &history{m: sku.New(), now: def.StartAt}
	_, h.log, _ = h.m.Define(h.now, def, nil)
	return h
}

// step runs one random command.
func (h *history) step(t *rapid.T) {
	m := h.m
	seq := uint32(rapid.IntRange(1, int(m.Counts().Reservations)+1).Draw(t, "seq"))
	switch rapid.IntRange(0, 6).Draw(t, "action") {
	case 0, 1, 2:
		_, h.log = m.Reserve(h.now, rapid.StringMatching(`r[0-9]{1,2}`).Draw(t, "req"), rapid.StringMatching(`u[0-9]`).Draw(t, "user"), h.log)
	case 3:
		_, h.log = m.Pay(h.now, seq, rapid.SampledFrom([]string{"p1", "p2"}).Draw(t, "payment"), 990, h.log)
	case 4:
		_, h.log = m.Close(h.now, seq, sku.ReasonCancelled, h.log)
	case 5:
		h.log = m.Expire(h.now, 8, h.log)
	default:
		h.now += rapid.Int64Range(0, 20).Draw(t, "dt")
	}
}

func replay(t interface{ Fatalf(string, ...any) }, m *sku.Machine, log []sku.Record) *sku.Machine {
	for i := range log {
		r, err := sku.DecodeRecord(log[i].Type, log[i].AppendPayload(nil))
		if err == nil {
			err = m.Apply(&r)
		}
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	return m
}

// TestSnapshotPlusTailEqualsFullLog: for random histories, the state read
// back from a snapshot file written at a random record index, plus the
// records after that index, hashes the same as the replay of the whole log.
func TestSnapshotPlusTailEqualsFullLog(t *testing.T) {
	dir := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		h := newHistory(testDef)
		at := rapid.IntRange(1, 150).Draw(t, "snapshot_at")
		var f *sku.Frozen
		var index uint64
		for i := 0; i < 200; i++ {
			if len(h.log) >= at && f == nil {
				f, index = h.m.Freeze(), uint64(len(h.log))
			}
			h.step(t)
		}
		if f == nil {
			f, index = h.m.Freeze(), uint64(len(h.log))
		}
		info, err := Write(dir, f, index, Options{NoSync: true})
		if err != nil {
			t.Fatalf("write: %v", err)
		}
		hdr, m, err := Read(info.Path)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if hdr != info.Header || hdr.Index != index || info.Bytes != fileSize(t, info.Path) {
			t.Fatalf("header %+v, info %+v", hdr, info)
		}
		replay(t, m, h.log[index:])
		if m.Hash() != replay(t, sku.New(), h.log).Hash() || m.Hash() != h.m.Hash() {
			t.Fatalf("snapshot at %d + %d records differs from the full log of %d", index, len(h.log)-int(index), len(h.log))
		}
	})
}

func fileSize(t interface{ Fatalf(string, ...any) }, path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return st.Size()
}

// sample returns the bytes of a small snapshot with every kind of row.
func sample(t testing.TB) []byte {
	m := sku.New()
	m.Define(1_000, testDef, nil)
	for i := 1; i <= 7; i++ {
		m.Reserve(1_000+int64(i), fmt.Sprintf("r%d", i), fmt.Sprintf("u%d", i%6), nil)
	}
	m.Pay(1_010, 1, "p1", 990, nil)
	m.Close(1_011, 2, sku.ReasonCancelled, nil)
	m.Pay(1_100, 3, "p3", 990, nil) // late: refund
	var buf bytes.Buffer
	if _, _, err := Encode(&buf, m.Freeze(), 42, 1_700_000_000_000); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeRoundTripAndHeader(t *testing.T) {
	b := sample(t)
	h, m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Counts()
	if h.CampaignID != "c1" || h.SKUID != "s1" || h.Index != 42 || h.CreatedAt != 1_700_000_000_000 ||
		h.Reservations != c.Reservations || h.Rejections != c.Rejected || h.Refunds != 1 || h.LastAt != m.LastAt() {
		t.Fatalf("header %+v, counts %+v", h, c)
	}
	if string(b[:8]) != Magic || b[8] != 1 {
		t.Fatalf("magic or version bytes %q", b[:10])
	}
}

// Every flipped byte and every truncation is refused: the CRC covers the
// whole file.
func TestDecodeRefusesDamage(t *testing.T) {
	b := sample(t)
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0x5a
		if _, _, err := Decode(c); err == nil {
			t.Fatalf("flip at %d accepted", i)
		}
	}
	for n := 0; n < len(b); n++ {
		if _, _, err := Decode(b[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut at %d: %v", n, err)
		}
	}
	c := bytes.Clone(b)
	c[offVersion] = 9
	if _, _, err := Decode(c); !errors.Is(err, ErrVersion) {
		t.Fatalf("version 9: %v", err)
	}
}

func writeAt(t *testing.T, dir string, m *sku.Machine, index uint64) Info {
	t.Helper()
	info, err := Write(dir, m.Freeze(), index, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// A corrupt newest snapshot is refused and the previous one loaded; accept
// can refuse one too; Prune keeps the newest K.
func TestLoadNewestFallsBack(t *testing.T) {
	dir := t.TempDir()
	h := newHistory(testDef)
	h.m.Reserve(h.now, "r1", "u1", nil)
	first := writeAt(t, dir, h.m, 2)
	h.m.Reserve(h.now, "r2", "u2", nil)
	second := writeAt(t, dir, h.m, 3)
	h.m.Reserve(h.now, "r3", "u3", nil)
	third := writeAt(t, dir, h.m, 4)

	got, refused, err := LoadNewest(dir, nil)
	if err != nil || got == nil || got.Index != 4 || len(refused) != 0 || got.Machine.Hash() != h.m.Hash() {
		t.Fatalf("newest: %+v %v %v", got, refused, err)
	}
	// Damage the newest in the middle (a torn write would cut it).
	b, _ := os.ReadFile(third.Path)
	b[len(b)/2] ^= 1
	os.WriteFile(third.Path, b, 0o640)
	got, refused, err = LoadNewest(dir, nil)
	if err != nil || got == nil || got.Index != 3 || len(refused) != 1 || !errors.Is(refused[0].Err, ErrCorrupt) {
		t.Fatalf("after damage: %+v %v %v", got, refused, err)
	}
	// The log may not reach back to a snapshot: accept refuses it.
	got, refused, _ = LoadNewest(dir, func(h Header) error {
		if h.Index >= 3 {
			return errors.New("beyond the log")
		}
		return nil
	})
	if got == nil || got.Index != 2 || len(refused) != 2 {
		t.Fatalf("with accept: %+v %v", got, refused)
	}
	oldest, removed, err := Prune(dir, "c1", "s1", 2, true)
	if err != nil || oldest != 3 || len(removed) != 1 || removed[0] != first.Path {
		t.Fatalf("prune: %d %v %v", oldest, removed, err)
	}
	files, _ := List(dir)
	if len(files) != 2 || files[0].Path != second.Path || files[1].Path != third.Path {
		t.Fatalf("after prune: %+v", files)
	}
	if got, _, _ := LoadNewest(filepath.Join(dir, "missing"), nil); got != nil {
		t.Fatal("snapshot in a missing dir")
	}
}

// An interrupted write leaves only a temp file, which RemoveTemp deletes
// and List ignores; a failing writer leaves nothing.
func TestWriteIsAtomic(t *testing.T) {
	dir := t.TempDir()
	h := newHistory(testDef)
	os.WriteFile(filepath.Join(dir, Name(9)+".123"+tempSuffix), []byte("half"), 0o640)
	if files, _ := List(dir); len(files) != 0 {
		t.Fatalf("temp file listed: %v", files)
	}
	removed, err := RemoveTemp(dir)
	if err != nil || len(removed) != 1 {
		t.Fatalf("remove temp: %v %v", removed, err)
	}
	if _, err := Write(dir, sku.New().Freeze(), 1, Options{}); err == nil {
		t.Fatal("snapshot of an undefined SKU written")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
	info := writeAt(t, dir, h.m, 1)
	if filepath.Base(info.Path) != "00000000000000000001.snap" {
		t.Fatalf("name %s", info.Path)
	}
	if !strings.HasPrefix(time.UnixMilli(info.CreatedAt).Format("2006"), "20") {
		t.Fatalf("created_at %d", info.CreatedAt)
	}
}

// FuzzDecodeSnapshot: Decode never panics; what it accepts re-encodes to
// a snapshot with the same header and state hash.
func FuzzDecodeSnapshot(f *testing.F) {
	b := sample(f)
	f.Add(b)
	f.Add(b[:FixedHeaderSize+10])
	f.Add([]byte(Magic))
	c := bytes.Clone(b)
	c[len(c)/2] ^= 0xff
	f.Add(c)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, m, err := Decode(b)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if _, _, err := Encode(&buf, m.Freeze(), h.Index, h.CreatedAt); err != nil {
			t.Fatal(err)
		}
		h2, m2, err := Decode(buf.Bytes())
		if err != nil || h2.Index != h.Index || h2.CampaignID != h.CampaignID || m2.Hash() != m.Hash() {
			t.Fatalf("re-encoding: %v", err)
		}
	})
}

// TestReadRefusesAFileByItsHeader: a file that is not a snapshot (a wrong
// `seckillctl restore --from`, a device, a pipe, a multi-gigabyte dump) is
// refused from its first bytes, never read whole into memory first. The
// pipe here stays open after its first bytes: a Read that waits for its end
// never answers.
func TestReadRefusesAFileByItsHeader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "not-a-snapshot")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	writerDone := make(chan struct{})
	defer close(writerDone)
	go func() {
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		w.Write(bytes.Repeat([]byte("root:x:0:0:root:/root:/bin/bash\n"), 128))
		<-writerDone
	}()
	read := make(chan error, 1)
	go func() {
		_, _, err := Read(path)
		read <- err
	}()
	select {
	case err := <-read:
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "no snapshot header") {
			t.Fatalf("Read of a file that is not a snapshot: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Read of a file that is not a snapshot waited for the whole file")
	}
}

// Prune counts and removes the snapshots of its SKU only: a snapshot of
// another SKU (even the newest) and a file whose header does not read are
// left in place and never stand for one of the SKU's own.
func TestPruneKeepsTheSKUsOwn(t *testing.T) {
	dir := t.TempDir()
	h := newHistory(testDef)
	own := []Info{writeAt(t, dir, h.m, 2)}
	h.m.Reserve(h.now, "r1", "u1", nil)
	own = append(own, writeAt(t, dir, h.m, 3))
	otherDef := testDef
	otherDef.SKUID = "s2"
	other := newHistory(otherDef)
	foreign := writeAt(t, dir, other.m, 9)
	garbage := filepath.Join(dir, Name(8))
	if err := os.WriteFile(garbage, []byte("not a snapshot"), 0o640); err != nil {
		t.Fatal(err)
	}
	oldest, removed, err := Prune(dir, "c1", "s1", 1, true)
	if err != nil || oldest != 3 || len(removed) != 1 || removed[0] != own[0].Path {
		t.Fatalf("prune: oldest kept %d, removed %v, %v", oldest, removed, err)
	}
	files, _ := List(dir)
	if len(files) != 3 || files[0].Path != own[1].Path || files[1].Path != garbage || files[2].Path != foreign.Path {
		t.Fatalf("after prune: %+v", files)
	}
}
