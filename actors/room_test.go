package actors

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
)

func openMax(t *testing.T, dir string, maxSKUs int) (*Engine, error) {
	t.Helper()
	e, err := Open(Config{DataDir: dir, MaxSKUs: maxSKUs, ExpiryInterval: time.Hour, Logger: quiet})
	if err == nil {
		t.Cleanup(func() { e.Close() })
	}
	return e, err
}

func defOf(skuID string) sku.Definition {
	d := testDef(10)
	d.SKUID = skuID
	return d
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// A Define of a new SKU beyond MaxSKUs fails with ErrTooManySKUs before
// its folder is made; SKUs already there may still be redefined.
func TestDefineBeyondMaxSKUs(t *testing.T) {
	dir := t.TempDir()
	e, err := openMax(t, dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if err := e.Define(ctxT(t), defOf(id)); err != nil {
			t.Fatal(err)
		}
	}
	err = e.Define(ctxT(t), defOf("c"))
	if !errors.Is(err, ErrTooManySKUs) {
		t.Fatalf("third SKU of at most 2: %v", err)
	}
	if exists(t, filepath.Join(dir, "c1", "c")) || e.handle("c1", "c") != nil {
		t.Fatal("the refused SKU got a folder or a handle")
	}
	raised := defOf("a")
	raised.SaleLimit = 20
	if err := e.Define(ctxT(t), raised); err != nil {
		t.Fatalf("redefining a SKU at the limit: %v", err)
	}
	if n := e.SKUCount(); n != 2 || e.MaxSKUs() != 2 {
		t.Fatalf("SKUCount %d, MaxSKUs %d", n, e.MaxSKUs())
	}
}

// Open refuses a data dir that holds more SKU folders than MaxSKUs, before
// starting any, and leaves the data dir unlocked.
func TestOpenBeyondMaxSKUs(t *testing.T) {
	dir := t.TempDir()
	e, err := openMax(t, dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if err := e.Define(ctxT(t), defOf(id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = openMax(t, dir, 2)
	if !errors.Is(err, ErrTooManySKUs) || !strings.Contains(err.Error(), "holds 3 SKUs, more than the limit of 2") {
		t.Fatalf("Open of 3 SKUs with MaxSKUs 2: %v", err)
	}
	if _, err := openMax(t, dir, 3); err != nil {
		t.Fatalf("Open with room after the refusal: %v", err)
	}
}

// MakeRoom holds the places of a whole campaign's new SKUs before any is
// defined, or refuses it whole; a SKU folder left undefined by a crash
// counts until it is defined.
func TestMakeRoom(t *testing.T) {
	dir := t.TempDir()
	// A crash between a SKU's folder and its definition left an empty log.
	if err := os.MkdirAll(filepath.Join(dir, "c1", "left", "wal"), 0o750); err != nil {
		t.Fatal(err)
	}
	e, err := openMax(t, dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Define(ctxT(t), defOf("a")); err != nil {
		t.Fatal(err)
	}
	if n := e.SKUCount(); n != 2 {
		t.Fatalf("SKUCount %d, want 2 (a and the folder left)", n)
	}
	three := []sku.Definition{defOf("a"), defOf("x"), defOf("y"), defOf("z")}
	if _, err := e.MakeRoom(three); !errors.Is(err, ErrTooManySKUs) || !strings.Contains(err.Error(), "3 new SKUs, room for 2 more") {
		t.Fatalf("3 new SKUs with room for 2: %v", err)
	}
	if n := e.SKUCount(); n != 2 {
		t.Fatalf("a refused MakeRoom holds places: SKUCount %d", n)
	}
	release, err := e.MakeRoom([]sku.Definition{defOf("a"), defOf("x"), defOf("y"), defOf("x")})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Define(ctxT(t), defOf("other")); !errors.Is(err, ErrTooManySKUs) {
		t.Fatalf("a SKU beyond the places held: %v", err)
	}
	if err := e.Define(ctxT(t), defOf("x")); err != nil {
		t.Fatalf("a SKU with a place held: %v", err)
	}
	release(false) // y was never defined: its place is free again
	if n := e.SKUCount(); n != 3 {
		t.Fatalf("SKUCount %d after release, want 3", n)
	}
	if err := e.Define(ctxT(t), defOf("left")); err != nil {
		t.Fatalf("defining the folder left: %v", err)
	}
	if err := e.Define(ctxT(t), defOf("other")); err != nil {
		t.Fatal(err)
	}
	if err := e.Define(ctxT(t), defOf("y")); !errors.Is(err, ErrTooManySKUs) {
		t.Fatalf("a fifth SKU: %v", err)
	}
}
