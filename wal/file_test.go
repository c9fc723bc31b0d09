package wal

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile replaces the file whole, with the mode asked, and leaves no
// temporary file beside it; a folder that does not exist is an error,
// not a file written elsewhere.
func TestWriteFileReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	for _, body := range []string{"first\n", "second, longer than the first\n", "3\n"} {
		if err := WriteFile(dir, "state", []byte(body), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, "state"))
		if err != nil || string(got) != body {
			t.Fatalf("after writing %q: %q %v", body, got, err)
		}
	}
	st, err := os.Stat(filepath.Join(dir, "state"))
	if err != nil || st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v %v, want 0640", st.Mode().Perm(), err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("the folder holds %d entries (%v), want only the file", len(entries), err)
	}
	if err := WriteFile(filepath.Join(dir, "missing"), "state", []byte("x"), 0o640); err == nil {
		t.Fatal("a write into a missing folder succeeded")
	}
}
