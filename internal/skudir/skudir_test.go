package skudir

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// A data dir's SKU folders are the <campaign>/<sku> folders of valid ids
// that hold a wal or a snapshots folder (a lost wal beside snapshots is
// still a SKU), in name order; a SKU folder or its wal folder resolves to
// the SKU folder, and to its log.
func TestLayout(t *testing.T) {
	data := t.TempDir()
	mk := func(parts ...string) {
		if err := os.MkdirAll(filepath.Join(append([]string{data}, parts...)...), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	mk("c", "b", WALName)
	mk("c", "a", SnapshotsName) // its wal was lost
	mk("c", "empty")            // no history: not a SKU
	mk("c", "bad id!", WALName) // not an id
	mk("d", "wal", WALName)     // a SKU named "wal"
	got, err := List(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []Dir{Of(data, "c", "a"), Of(data, "c", "b"), Of(data, "d", "wal")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("List: %v, want %v", got, want)
	}
	if c, s := want[2].IDs(); c != "d" || s != "wal" {
		t.Fatalf("IDs of %s: %s %s", want[2], c, s)
	}
	b := Of(data, "c", "b")
	if b.WAL() != filepath.Join(data, "c", "b", "wal") || b.Snapshots() != filepath.Join(data, "c", "b", "snapshots") {
		t.Fatalf("the folders of %s: %s %s", b, b.WAL(), b.Snapshots())
	}
	for path, want := range map[string]Dir{
		b.String():                    b,
		b.WAL():                       b,
		Of(data, "d", "wal").String(): Of(data, "d", "wal"), // holds a wal folder: a SKU, not a log
	} {
		if got := FromPath(path); got != want {
			t.Errorf("FromPath(%s) = %s, want %s", path, got, want)
		}
	}
	if got := LogOf(b.String()); got != b.WAL() {
		t.Errorf("LogOf(%s) = %s", b, got)
	}
	if got := LogOf(b.WAL()); got != b.WAL() {
		t.Errorf("LogOf(%s) = %s", b.WAL(), got)
	}
	if _, err := List(filepath.Join(data, "missing")); !os.IsNotExist(err) {
		t.Errorf("List of a missing data dir: %v", err)
	}
}
