package actors

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
)

// pendingFiles lists the pending files of a data dir.
func pendingFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pendingPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// MakeRoom of many SKUs keeps them pending until release; a definition
// cut before release (a crash: the engine closed, release never called)
// is finished by FinishPending on the next engine, oldest first, and its
// file removed. A single SKU needs no pending file; a temp file (cut
// before its rename) and a damaged file are removed, defining nothing.
func TestFinishPendingCompletesACutDefinition(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, err := openMax(t, dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	release, err := e.MakeRoom([]sku.Definition{defOf("one")})
	if err != nil || len(pendingFiles(t, dir)) != 0 {
		t.Fatalf("MakeRoom of one SKU: %v, %v", err, pendingFiles(t, dir))
	}
	release(false)
	release, err = e.MakeRoom([]sku.Definition{defOf("a"), defOf("b")})
	if err != nil || len(pendingFiles(t, dir)) != 1 {
		t.Fatalf("MakeRoom of two SKUs: %v, %v", err, pendingFiles(t, dir))
	}
	release(false)
	if p := pendingFiles(t, dir); len(p) != 0 {
		t.Fatalf("release left %v", p)
	}

	defs := []sku.Definition{defOf("a"), defOf("b"), defOf("c")}
	if _, err := e.MakeRoom(defs); err != nil { // never released: the crash
		t.Fatal(err)
	}
	if err := e.Define(ctx, defs[0]); err != nil {
		t.Fatal(err)
	}
	e.Close()
	if err := os.WriteFile(filepath.Join(dir, pendingPrefix+"9-9.tmp"), []byte("cut"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, pendingPrefix+"99999999999999999999-1"), []byte(pendingMagic+"damaged"), 0o640); err != nil {
		t.Fatal(err)
	}

	e, err = openMax(t, dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	if e.SKU("c1", "b") != nil {
		t.Fatal("b defined before FinishPending")
	}
	finished, err := e.FinishPending(ctx)
	if err != nil || len(finished) != 2 || finished[0] != "c1/b" || finished[1] != "c1/c" {
		t.Fatalf("FinishPending: %v, %v", finished, err)
	}
	for _, d := range defs {
		if h := e.SKU(d.CampaignID, d.SKUID); h == nil || !d.Repeats(*h.Stats().Definition) {
			t.Fatalf("%s after FinishPending: %v", d.SKUID, h)
		}
	}
	if p := pendingFiles(t, dir); len(p) != 0 {
		t.Fatalf("FinishPending left %v", p)
	}

	// A replica that follows a primary drops its own, unread.
	if _, err := e.MakeRoom([]sku.Definition{defOf("d"), defOf("e")}); err != nil {
		t.Fatal(err)
	}
	if n, err := DropPending(dir); err != nil || n != 1 || len(pendingFiles(t, dir)) != 0 {
		t.Fatalf("DropPending: %d %v, left %v", n, err, pendingFiles(t, dir))
	}
}

// A definition an error cut short (release(true)) keeps its pending file,
// as a crash would: the next start finishes it. A later definition of the
// same campaign that completes (release(false)), the operator's PUT sent
// instead, supersedes it: its file goes, and a SKU that definition left
// out is not defined at the next start. A definition that applied nothing
// keeps nothing.
func TestCutDefinitionIsFinishedAtTheNextStart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	e, err := openMax(t, dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	release, err := e.MakeRoom([]sku.Definition{defOf("a"), defOf("b")})
	if err != nil {
		t.Fatal(err)
	}
	release(false) // the first Define failed, nothing applied
	if p := pendingFiles(t, dir); len(p) != 0 {
		t.Fatalf("a definition that applied nothing left %v", p)
	}

	cut := func(defs []sku.Definition) {
		t.Helper()
		release, err := e.MakeRoom(defs)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Define(ctx, defs[0]); err != nil {
			t.Fatal(err)
		}
		release(true) // the second Define failed: a full disk
		if p := pendingFiles(t, dir); len(p) != 1 {
			t.Fatalf("a definition cut short keeps its pending file: %v", p)
		}
	}
	// Superseded: the operator sends a and b only, which completes.
	cut([]sku.Definition{defOf("a"), defOf("b"), defOf("c")})
	release, err = e.MakeRoom([]sku.Definition{defOf("a"), defOf("b")})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []sku.Definition{defOf("a"), defOf("b")} {
		if err := e.Define(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	release(false)
	if p := pendingFiles(t, dir); len(p) != 0 {
		t.Fatalf("a completed definition of the campaign left the file it supersedes: %v", p)
	}

	// Not superseded: the next start finishes it.
	cut([]sku.Definition{defOf("d"), defOf("e")})
	e.Close()
	e, err = openMax(t, dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	finished, err := e.FinishPending(ctx)
	if err != nil || len(finished) != 1 || finished[0] != "c1/e" {
		t.Fatalf("FinishPending: %v, %v, want c1/e", finished, err)
	}
	if e.SKU("c1", "c") != nil {
		t.Fatal("c, left out of the definition that superseded its own, was defined at the next start")
	}
	if p := pendingFiles(t, dir); len(p) != 0 {
		t.Fatalf("FinishPending left %v", p)
	}
}

// memPending is a PendingStore outside any data dir, shared by engines
// (as a replica set's list in etcd is by its primaries).
type memPending struct {
	mu     sync.Mutex
	seq    int
	lists  map[string][]sku.Definition
	putErr error
}

func (m *memPending) Put(defs []sku.Definition) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.putErr != nil {
		return "", m.putErr
	}
	m.seq++
	key := fmt.Sprintf("%04d", m.seq)
	m.lists[key] = defs
	return key, nil
}

func (m *memPending) Remove(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.lists, key)
	return nil
}

func (m *memPending) List(context.Context) ([]PendingList, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []PendingList
	for k, d := range m.lists {
		out = append(out, PendingList{Key: k, Defs: d})
	}
	slices.SortFunc(out, func(a, b PendingList) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

func (m *memPending) Finisher() Finisher { return FinishedByNextPrimary }

func (m *memPending) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.lists)
}

// An engine given a PendingStore (Config.Pending) keeps its lists there,
// not in its data dir, and finishes those another engine left: loaded
// (LoadPending), their campaigns are PartlyDefined until FinishPending
// defines the rest; a list superseded by a definition that completed
// after it was loaded is not finished over it. A store that cannot keep
// the list fails MakeRoom, holding nothing.
func TestAnotherEnginesPendingListIsFinished(t *testing.T) {
	ctx := context.Background()
	store := &memPending{lists: map[string][]sku.Definition{}}
	open := func(dir string) *Engine {
		t.Helper()
		e, err := Open(Config{DataDir: dir, MaxSKUs: 100, ExpiryInterval: time.Hour, Logger: quiet, Pending: store})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	cutOn := func(e *Engine, defs []sku.Definition) {
		t.Helper()
		if _, err := e.MakeRoom(defs); err != nil { // never released: the crash
			t.Fatal(err)
		}
		if err := e.Define(ctx, defs[0]); err != nil {
			t.Fatal(err)
		}
	}
	firstDir := t.TempDir()
	first := open(firstDir)
	cutOn(first, []sku.Definition{defOf("a"), defOf("b"), defOf("c")})
	if store.len() != 1 || len(pendingFiles(t, firstDir)) != 0 {
		t.Fatalf("the list: %d in the store, files %v", store.len(), pendingFiles(t, firstDir))
	}
	first.Close()

	next := open(t.TempDir())
	if next.PartlyDefined("c1") {
		t.Fatal("partly defined before the lists were read")
	}
	if err := next.LoadPending(ctx); err != nil {
		t.Fatal(err)
	}
	if !next.PartlyDefined("c1") || next.PartlyDefined("c2") {
		t.Fatalf("after LoadPending: c1 partly defined %v, c2 %v", next.PartlyDefined("c1"), next.PartlyDefined("c2"))
	}
	finished, err := next.FinishPending(ctx)
	if err != nil || len(finished) != 3 {
		t.Fatalf("FinishPending: %v, %v", finished, err)
	}
	if next.PartlyDefined("c1") || store.len() != 0 {
		t.Fatalf("after FinishPending: partly defined %v, %d lists left", next.PartlyDefined("c1"), store.len())
	}

	// Superseded once loaded: the operator's PUT of a and b completes.
	cutOn(next, []sku.Definition{defOf("d"), defOf("e"), defOf("f")})
	next.Close()
	third := open(t.TempDir())
	if err := third.LoadPending(ctx); err != nil {
		t.Fatal(err)
	}
	stated := []sku.Definition{defOf("d"), defOf("e")}
	release, err := third.MakeRoom(stated)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range stated {
		if err := third.Define(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	release(false)
	if finished, err := third.FinishPending(ctx); err != nil || len(finished) != 0 || third.SKU("c1", "f") != nil {
		t.Fatalf("FinishPending of a superseded list: %v, %v, f defined %v", finished, err, third.SKU("c1", "f") != nil)
	}
	if third.PartlyDefined("c1") || store.len() != 0 {
		t.Fatalf("after the superseding PUT: partly defined %v, %d lists left", third.PartlyDefined("c1"), store.len())
	}

	store.putErr = errors.New("the store is gone")
	if _, err := third.MakeRoom([]sku.Definition{defOf("g"), defOf("h")}); err == nil {
		t.Fatal("MakeRoom without its list kept succeeded")
	}
	if n := third.SKUCount(); n != 2 {
		t.Fatalf("a failed MakeRoom holds places: %d SKUs counted, want 2", n)
	}
}

// blockingRemove is a memPending whose Remove, once entered (removing),
// waits until release is closed.
type blockingRemove struct {
	*memPending
	once              sync.Once
	removing, release chan struct{}
}

func (b *blockingRemove) Remove(key string) error {
	b.once.Do(func() { close(b.removing) })
	<-b.release
	return b.memPending.Remove(key)
}

// A definition an operator states while a list is being finished (a
// replica set's new primary finishes lists while it serves) waits for it
// in MakeRoom, so that no finishing step defines a SKU over what the
// operator stated: the finishing holds Engine.stating alone until its
// list is removed, and a definition holds it shared until its release.
func TestFinishingAListExcludesStatedDefinitions(t *testing.T) {
	ctx := context.Background()
	store := &blockingRemove{memPending: &memPending{lists: map[string][]sku.Definition{}}, removing: make(chan struct{}), release: make(chan struct{})}
	open := func() *Engine {
		t.Helper()
		e, err := Open(Config{DataDir: t.TempDir(), MaxSKUs: 100, ExpiryInterval: time.Hour, Logger: quiet, Pending: store})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	first := open()
	if _, err := first.MakeRoom([]sku.Definition{defOf("a"), defOf("b")}); err != nil { // never released: the crash
		t.Fatal(err)
	}
	if first.stating.TryLock() {
		t.Fatal("an unreleased definition does not hold stating: a finishing could interleave with it")
	}
	first.Close()

	next := open()
	finished := make(chan error, 1)
	go func() {
		_, err := next.FinishPending(ctx)
		finished <- err
	}()
	select {
	case <-store.removing:
	case err := <-finished:
		t.Fatalf("FinishPending ended before it removed its list: %v", err)
	}
	if next.stating.TryRLock() {
		t.Fatal("a definition could begin while a list is being finished")
	}
	close(store.release)
	if err := <-finished; err != nil {
		t.Fatal(err)
	}
	release, err := next.MakeRoom([]sku.Definition{defOf("a"), defOf("b")})
	if err != nil {
		t.Fatal(err)
	}
	release(false)
	if !next.stating.TryLock() {
		t.Fatal("a released definition still holds stating")
	}
	next.stating.Unlock()
}

// A pending file that cannot be written (a full disk, a data dir gone)
// fails the definition before its first SKU: the error is ErrUnavailable,
// which the API answers 503 with nothing defined, not an internal error.
func TestPendingFileNotWrittenIsUnavailable(t *testing.T) {
	t.Parallel()
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	defs := []sku.Definition{{CampaignID: "c", SKUID: "a", SaleLimit: 1}, {CampaignID: "c", SKUID: "b", SaleLimit: 1}}
	_, err := dirPending{dir: notDir}.Put(defs)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "recording the pending definitions") {
		t.Fatalf("Put in a folder that cannot hold it: %v, want ErrUnavailable recording the pending definitions", err)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(notDir), "*")); len(m) != 1 {
		t.Fatalf("files left beside it: %v", m)
	}
}

// A cut list whose middle definition no longer applies (a sale_limit
// lowered below the SKU's since) is finished around it: FinishPending
// defines the SKUs before and after it, leaves that SKU as it is, and
// removes the list. DefineAll stops at the refused definition; the
// next round defines the rest.
func TestFinishPendingDefinesAroundADefinitionThatNoLongerApplies(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, err := openMax(t, dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	b := defOf("b")
	if err := e.Define(ctx, b); err != nil {
		t.Fatal(err)
	}
	lowered := b
	lowered.SaleLimit = b.SaleLimit - 1
	defs := []sku.Definition{defOf("a"), lowered, defOf("c"), defOf("d")}
	if _, err := e.MakeRoom(defs); err != nil { // never released: the crash
		t.Fatal(err)
	}
	e.Close()

	e, err = openMax(t, dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	finished, err := e.FinishPending(ctx)
	if err != nil || !slices.Equal(finished, []string{"c1/a", "c1/c", "c1/d"}) {
		t.Fatalf("FinishPending: %v, %v; want a, c and d defined around b", finished, err)
	}
	if got := e.SKU("c1", "b").Stats().Definition.SaleLimit; got != b.SaleLimit {
		t.Fatalf("b's sale_limit %d after FinishPending, want %d as it was", got, b.SaleLimit)
	}
	if p := pendingFiles(t, dir); len(p) != 0 || e.PartlyDefined("c1") {
		t.Fatalf("FinishPending left %v (partly defined: %v)", p, e.PartlyDefined("c1"))
	}
}
