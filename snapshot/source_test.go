package snapshot

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/seckill/seckill/actors/sku"
)

// sampleMachine decodes sample's state.
func sampleMachine(t *testing.T) *sku.Machine {
	t.Helper()
	_, m, err := Decode(sample(t))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Marshal gives the bytes Encode writes, and they decode back.
func TestMarshal(t *testing.T) {
	m := sampleMachine(t)
	b, h, err := Marshal(m.Freeze(), 42, 1_700_000_000_000)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, _, err := Encode(&buf, m.Freeze(), 42, 1_700_000_000_000); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, buf.Bytes()) {
		t.Fatal("Marshal and Encode disagree")
	}
	got, decoded, err := Decode(b)
	if err != nil || got != h || decoded.Hash() != m.Hash() {
		t.Fatalf("Decode(Marshal) = %+v, %v; header %+v", got, err, h)
	}
	if _, _, err := Marshal(sku.New().Freeze(), 1, 0); err == nil {
		t.Fatal("Marshal of an undefined SKU accepted")
	}
}

// Dir and Memory answer alike for the same snapshots: whole, torn, missing.
func TestSources(t *testing.T) {
	m := sampleMachine(t)
	b, _, err := Marshal(m.Freeze(), 42, 1)
	if err != nil {
		t.Fatal(err)
	}
	torn := b[:len(b)-7]
	dir := t.TempDir()
	for index, data := range map[uint64][]byte{42: b, 50: torn} {
		if err := os.WriteFile(filepath.Join(dir, Name(index)), data, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	mem := &Memory{}
	mem.Put(42, b)
	mem.Put(50, torn)
	mem.Put(7, b)
	mem.Remove(7)
	for name, src := range map[string]interface {
		List() ([]File, error)
		ReadHeader(File) (Header, error)
		Check(File) (Header, error)
		Read(File) (Header, *sku.Machine, error)
	}{"Dir": Dir(dir), "Memory": mem} {
		files, err := src.List()
		if err != nil || len(files) != 2 || files[0].Index != 42 || files[1].Index != 50 || files[0].Size != int64(len(b)) {
			t.Fatalf("%s: List = %+v, %v", name, files, err)
		}
		if h, err := src.ReadHeader(files[1]); err != nil || h.Index != 42 {
			t.Fatalf("%s: ReadHeader of the torn one = %+v, %v (its header is whole)", name, h, err)
		}
		if _, err := src.Check(files[1]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: Check of the torn one: %v", name, err)
		}
		if _, _, err := src.Read(files[1]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: Read of the torn one: %v", name, err)
		}
		if h, got, err := src.Read(files[0]); err != nil || h.Index != 42 || got.Hash() != m.Hash() {
			t.Fatalf("%s: Read = %+v, %v", name, h, err)
		}
		gone := File{Path: files[0].Path + "x", Index: 43}
		if name == "Memory" {
			gone.Path = "memory:" + Name(43)
		}
		if _, err := src.ReadHeader(gone); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: ReadHeader of a missing one: %v", name, err)
		}
	}
	if files, err := Dir(filepath.Join(dir, "none")).List(); err != nil || len(files) != 0 {
		t.Fatalf("missing dir: %v, %v", files, err)
	}
}
