package actors

import (
	"errors"
	"os"
	"testing"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/skudir"
)

// TestFailedFirstDefinitionLeavesNothing: the first definition of a SKU
// whose log fails its write or its fsync (a full disk) is not answered as
// done, and leaves no SKU behind: none is listed or found (no SKU with a
// zero sale_limit and start_at), its folder is gone, and the retry on a
// working disk creates it with the retried definition, also after a
// restart.
func TestFailedFirstDefinitionLeavesNothing(t *testing.T) {
	for _, mode := range []string{"write", "sync"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			cfg, fs, clock := faultyConfig(dir, -1)
			e, err := Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if mode == "write" {
				fs.failWriteAt.Store(1)
			} else {
				fs.failSyncAt.Store(1)
			}
			d := testDef(5)
			if err := e.Define(ctxT(t), d); err == nil {
				t.Fatal("a definition whose log failed was answered as durable")
			} else if errors.Is(err, sku.ErrInvalidDefinition) {
				t.Fatalf("a failed log answered as a refusal: %v", err)
			}
			if h := e.SKU("c1", "s1"); h != nil {
				t.Fatalf("the failed definition left a SKU: %+v", h.Stats().Definition)
			}
			if n := len(e.SKUs()); n != 0 {
				t.Fatalf("%d SKUs listed after a failed first definition", n)
			}
			if _, err := os.Stat(skudir.Of(dir, "c1", "s1").String()); !os.IsNotExist(err) {
				t.Fatalf("the failed definition's folder: %v", err)
			}
			fs.failWriteAt.Store(0)
			fs.failSyncAt.Store(0)
			d.SaleLimit = 7
			if err := e.Define(ctxT(t), d); err != nil {
				t.Fatalf("the retry: %v", err)
			}
			if got := e.SKU("c1", "s1").Stats().Definition.SaleLimit; got != 7 {
				t.Fatalf("sale_limit %d after the retry, want 7", got)
			}
			e.Close()
			e2 := openTest(t, dir, clock, nil)
			defer e2.Close()
			if h := e2.SKU("c1", "s1"); h == nil || h.Stats().Definition.SaleLimit != 7 {
				t.Fatal("after a restart the retried definition is not there")
			}
		})
	}
}
