package etcdtest

import (
	"os"
	"path/filepath"
	"testing"
)

// writeModule writes a tiny main module with the files cachePath hashes.
func writeModule(t *testing.T, dir, body string) {
	t.Helper()
	files := map[string]string{
		"go.mod":  "module example.com/tiny\n\ngo 1.21\n",
		"go.sum":  "",
		"main.go": "package main\n\nfunc main() {" + body + "}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBuildIntoCachesByContent(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	writeModule(t, dir, "")
	path, err := buildInto(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode()&0o100 == 0 {
		t.Fatalf("binary %s: %v, mode %v", path, err, info)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("cache dir holds %d entries, want the binary only (no temp files)", len(entries))
	}

	// A second build reuses the cached file: it must not even run go
	// build, which fails with no go on PATH.
	goPath := os.Getenv("PATH")
	t.Setenv("PATH", "")
	again, err := buildInto(root, dir)
	if err != nil || again != path {
		t.Fatalf("second build = %q, %v; want cached %q", again, err, path)
	}
	t.Setenv("PATH", goPath)

	// Changing the module names a new binary.
	writeModule(t, dir, "println()")
	changed, err := buildInto(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	if changed == path {
		t.Fatalf("module changed but binary path stayed %s", path)
	}
}

func TestBuildIntoFailureLeavesNothing(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	writeModule(t, dir, "undefinedName()")
	path, err := buildInto(root, dir)
	if err == nil {
		t.Fatalf("build of broken module succeeded: %s", path)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "seckill"))
	if len(entries) != 0 {
		t.Fatalf("failed build left %d entries in the cache", len(entries))
	}
}
