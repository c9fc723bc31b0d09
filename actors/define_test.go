package actors

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/internal/skudir"
	"github.com/seckill/seckill/wal"
)

// listDefs is a campaign's list of n new SKUs, prefix0..prefix<n-1>.
func listDefs(campaignID, prefix string, n int, scope sku.PurchaseLimit) []sku.Definition {
	defs := make([]sku.Definition, n)
	for i := range defs {
		d := testDef(5)
		d.CampaignID, d.SKUID, d.PurchaseLimit = campaignID, fmt.Sprintf("%s%d", prefix, i), scope
		defs[i] = d
	}
	return defs
}

// TestDefineAllPurchaseLimitRace: two lists of one new campaign, one with
// purchase_limit "campaign" and one with "sku", sent at once: exactly one
// is defined whole; the other is refused at its first definition with the
// purchase_limit error, and defines nothing. The campaign's SKUs all have
// the winner's purchase_limit. Each list's SKUs are its own: a check that
// let both through before either was defined would define both.
func TestDefineAllPurchaseLimitRace(t *testing.T) {
	t.Parallel()
	e := openTest(t, t.TempDir(), &fakeClock{}, nil)
	const rounds, skus = 6, 12
	for r := range rounds {
		campaign := fmt.Sprintf("race%d", r)
		lists := [2][]sku.Definition{
			listDefs(campaign, "a", skus, sku.PurchaseLimitCampaign),
			listDefs(campaign, "b", skus, sku.PurchaseLimitSKU),
		}
		var errs [2][]error
		var start, done sync.WaitGroup
		start.Add(1)
		for i := range lists {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				errs[i] = e.DefineAll(ctxT(t), lists[i], 0)
			}()
		}
		start.Done()
		done.Wait()
		won := -1
		for i := range lists {
			if _, err := firstError(errs[i]); err == nil {
				if won >= 0 {
					t.Fatalf("%s: both lists defined, with purchase_limits %s and %s", campaign, lists[0][0].PurchaseLimit, lists[1][0].PurchaseLimit)
				}
				won = i
			}
		}
		if won < 0 {
			t.Fatalf("%s: neither list defined: %v / %v", campaign, errs[0], errs[1])
		}
		lost := 1 - won
		if at, err := firstError(errs[lost]); at != 0 || !errors.Is(err, sku.ErrInvalidDefinition) || !strings.Contains(err.Error(), "purchase_limit") {
			t.Fatalf("%s: the losing list's first error %v at %d, want the purchase_limit refusal at 0", campaign, err, at)
		}
		for _, err := range errs[lost][1:] {
			if !errors.Is(err, ErrNotBegun) {
				t.Fatalf("%s: the losing list: %v, want the rest not begun", campaign, errs[lost])
			}
		}
		n := 0
		for _, st := range e.AllStats() {
			if st.CampaignID != campaign {
				continue
			}
			n++
			if st.Definition.PurchaseLimit != lists[won][0].PurchaseLimit {
				t.Fatalf("%s: SKU %s has purchase_limit %s, the winning list %s", campaign, st.SKUID, st.Definition.PurchaseLimit, lists[won][0].PurchaseLimit)
			}
		}
		if n != skus {
			t.Fatalf("%s: %d SKUs defined, want the winning list's %d", campaign, n, skus)
		}
	}
}

// firstError is the first error of a DefineAll answer and its index; -1
// and nil when every definition is durable.
func firstError(errs []error) (int, error) {
	for i, err := range errs {
		if err != nil {
			return i, err
		}
	}
	return -1, nil
}

// TestDefineAllStopsAtABadDefinition: a list with a definition the engine
// refuses in its middle is answered as one Define after another would
// answer it: those before it are defined, it gets its refusal, and those
// after it are not begun (no SKU, no folder), however many run at once.
func TestDefineAllStopsAtABadDefinition(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		bad  func(d *sku.Definition)
	}{
		{"invalid", func(d *sku.Definition) { d.SaleLimit = 0 }},
		{"a redefinition not allowed", func(d *sku.Definition) { d.SKUID, d.SaleLimit = "old", 3 }},
		{"the list disagrees on purchase_limit", func(d *sku.Definition) { d.PurchaseLimit = sku.PurchaseLimitCampaign }},
		{"a SKU named twice", func(d *sku.Definition) { d.SKUID = "s0" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			old := testDef(5)
			old.SKUID = "old"
			e := openTest(t, dir, &fakeClock{}, &old)
			defs := listDefs("c1", "s", 40, sku.PurchaseLimitSKU)
			const at = 20
			c.bad(&defs[at])
			errs := e.DefineAll(ctxT(t), defs, 0)
			if i, err := firstError(errs); i != at || !errors.Is(err, sku.ErrInvalidDefinition) {
				t.Fatalf("first error %v at %d, want the refusal of definition %d", err, i, at)
			}
			for i, d := range defs {
				switch {
				case i < at:
					if errs[i] != nil || e.SKU(d.CampaignID, d.SKUID) == nil {
						t.Fatalf("definition %d before the refused one: %v", i, errs[i])
					}
				case i > at:
					if !errors.Is(errs[i], ErrNotBegun) || e.handle(d.CampaignID, d.SKUID) != nil {
						t.Fatalf("definition %d after the refused one: %v, want it not begun", i, errs[i])
					}
					if _, err := os.Stat(skudir.Of(dir, d.CampaignID, d.SKUID).String()); !os.IsNotExist(err) {
						t.Fatalf("definition %d after the refused one has a folder: %v", i, err)
					}
				}
			}
			if got := e.SKU("c1", "old").Stats().Definition.SaleLimit; got != 5 {
				t.Fatalf("the SKU of the refused redefinition has sale_limit %d, want 5", got)
			}
		})
	}
}

// failingStore is a log store whose writes fail (a full disk); failed
// says one did.
type failingStore struct {
	wal.Store
	failed *atomic.Bool
}

func (s failingStore) WriteBatch(*wal.Batch) (int, error) {
	s.failed.Store(true)
	return 0, errInjected
}

// TestDefineAllStopsAtAFailedCommit: a list whose one SKU's log fails to
// write its definition, while others are committed beside it, answers
// that SKU's failure first and every definition before it durable; none
// after it is begun once it failed, and the failed new SKU leaves nothing
// behind. The list repeated on a working log defines the rest.
func TestDefineAllStopsAtAFailedCommit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var fail sync.Map // SKU folders whose log fails
	var holding, failed atomic.Bool
	cfg := Config{DataDir: dir, Clock: (&fakeClock{}).Now, ExpiryInterval: time.Hour, Logger: quiet, LogFailureRetry: -1}
	var e *Engine
	defs := listDefs("c1", "s", 40, sku.PurchaseLimitSKU)
	const at = 10
	held := make(map[string]bool, len(defs)) // the logs after the failing one: opened once it failed and was discarded
	for _, d := range defs[at+1:] {
		held[skudir.Of(dir, "c1", d.SKUID).WAL()] = true
	}
	cfg.WAL.OpenStore = func(d string, o wal.StoreOptions) (wal.Store, error) {
		// On the SKU's actor: no t.Fatal here, an error fails its log.
		for deadline := time.Now().Add(time.Minute); holding.Load() && held[d] && (!failed.Load() || e.handle("c1", defs[at].SKUID) != nil); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				return nil, errors.New("the failing SKU was not discarded in a minute")
			}
		}
		st, err := wal.OpenTidwallStore(d, o)
		if _, ok := fail.Load(d); ok && err == nil {
			return failingStore{st, &failed}, nil
		}
		return st, err
	}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	fail.Store(skudir.Of(dir, "c1", defs[at].SKUID).WAL(), true)
	holding.Store(true)
	errs := e.DefineAll(ctxT(t), defs, 0)
	i, err := firstError(errs)
	if i != at || err == nil || errors.Is(err, ErrNotBegun) {
		t.Fatalf("first error %v at %d, want the failed log's at %d", err, i, at)
	}
	for i, d := range defs {
		h := e.SKU(d.CampaignID, d.SKUID)
		switch {
		case i >= at+skudir.AtOnce && !errors.Is(errs[i], ErrNotBegun):
			// At most skudir.AtOnce-1 SKUs after the failing one were in
			// flight when it failed (their logs held until then).
			t.Fatalf("definition %d: %v, want it not begun after %d failed", i, errs[i], at)
		case errs[i] == nil:
			if h == nil {
				t.Fatalf("definition %d answered durable, not defined", i)
			}
		case errors.Is(errs[i], ErrNotBegun):
			if e.handle(d.CampaignID, d.SKUID) != nil {
				t.Fatalf("definition %d not begun has a SKU", i)
			}
		case i == at:
			if h != nil {
				t.Fatalf("the failed definition left a SKU: %+v", h.Stats().Definition)
			}
		default:
			t.Fatalf("definition %d: %v, want durable or not begun", i, errs[i])
		}
	}
	fail.Clear()
	holding.Store(false)
	for i, err := range e.DefineAll(ctxT(t), defs, 0) {
		if err != nil {
			t.Fatalf("the list repeated: definition %d: %v", i, err)
		}
	}
}

// heldGroup is a definitionGroup twin that starts each definition's
// goroutine at its Go, in the list's order, as errgroup does with a free
// slot, but holds its first statement until the test lets it run (run),
// which then waits until the definition returned: the order the scheduler
// may pick between a goroutine's start and its first statement, reached
// on purpose.
type heldGroup struct {
	wg        sync.WaitGroup
	next      int
	may, done []chan struct{}
}

func newHeldGroup(n int) *heldGroup {
	g := &heldGroup{may: make([]chan struct{}, n), done: make([]chan struct{}, n)}
	for i := range n {
		g.may[i], g.done[i] = make(chan struct{}), make(chan struct{})
	}
	return g
}

func (g *heldGroup) Go(f func() error) {
	i := g.next
	g.next++
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer close(g.done[i])
		<-g.may[i]
		f()
	}()
}

func (g *heldGroup) Wait() error {
	g.wg.Wait()
	return nil
}

// run lets definition i begin and waits until it returned.
func (g *heldGroup) run(t *testing.T, i int) {
	close(g.may[i])
	select {
	case <-g.done[i]:
	case <-time.After(time.Minute):
		t.Errorf("definition %d did not return within a minute", i)
	}
}

// heldStore is a log whose first write waits until released, then fails.
type heldStore struct {
	wal.Store
	writing, release chan struct{}
}

func (s heldStore) WriteBatch(*wal.Batch) (int, error) {
	close(s.writing)
	select {
	case <-s.release:
	case <-time.After(time.Minute):
	}
	return 0, errInjected
}

// TestDefineAllKeepsTheLeastFailure: the goroutines of a list start in
// its order but run in any, so DefineAll decides whether a definition
// begins from the least index that failed, whenever its goroutine runs.
// Here definition 3 begins, 1 fails, then 3 fails: 2, run next, is after
// the least failure (1), not begun, although the last to fail (3) is
// after it; 0, run last, after two failures, is before both: defined, as
// Define one after another would have. With a flag "a definition failed"
// 0 was not begun; with the last failure kept rather than the least, 2
// was begun after 1 failed.
func TestDefineAllKeepsTheLeastFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	defs := listDefs("c1", "s", 4, sku.PurchaseLimitSKU)
	var failed atomic.Bool
	held := heldStore{writing: make(chan struct{}), release: make(chan struct{})}
	cfg := Config{DataDir: dir, Clock: (&fakeClock{}).Now, ExpiryInterval: time.Hour, Logger: quiet, LogFailureRetry: -1}
	cfg.WAL.OpenStore = func(d string, o wal.StoreOptions) (wal.Store, error) {
		st, err := wal.OpenTidwallStore(d, o)
		switch {
		case err != nil:
			return st, err
		case d == skudir.Of(dir, "c1", defs[1].SKUID).WAL():
			return failingStore{st, &failed}, nil
		case d == skudir.Of(dir, "c1", defs[3].SKUID).WAL():
			held.Store = st
			return held, nil
		}
		return st, nil
	}
	e, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	g := newHeldGroup(len(defs))
	e.definitionGroup = func(int) definitionGroup { return g }
	answered := make(chan []error, 1)
	go func() { answered <- e.DefineAll(ctxT(t), defs, 0) }()

	close(g.may[3]) // 3 begins: its log's write waits
	select {
	case <-held.writing:
	case <-time.After(time.Minute):
		t.Fatal("definition 3 did not write its log within a minute")
	}
	g.run(t, 1) // 1 fails
	close(held.release)
	<-g.done[3] // 3 fails
	g.run(t, 2)
	g.run(t, 0)
	errs := <-answered
	if !failed.Load() {
		t.Fatal("definition 1's log was not written")
	}
	switch {
	case errs[0] != nil:
		t.Errorf("definition 0, before every failure: %v, want it defined", errs[0])
	case errs[1] == nil || errors.Is(errs[1], ErrNotBegun):
		t.Errorf("definition 1: %v, want its log's failure", errs[1])
	case !errors.Is(errs[2], ErrNotBegun):
		t.Errorf("definition 2, after the failure of 1: %v, want %v", errs[2], ErrNotBegun)
	case errs[3] == nil || errors.Is(errs[3], ErrNotBegun):
		t.Errorf("definition 3: %v, want its log's failure", errs[3])
	}
	if e.SKU("c1", defs[0].SKUID) == nil || e.handle("c1", defs[2].SKUID) != nil {
		t.Errorf("SKU 0 defined %v, SKU 2 begun %v; want defined, not begun",
			e.SKU("c1", defs[0].SKUID) != nil, e.handle("c1", defs[2].SKUID) != nil)
	}
}

// A list holds its campaigns' locks only: while one campaign's list is
// defining (its lock held here), a list of another campaign is defined;
// a list of that campaign, or one naming it among others, waits for it
// and is then defined.
func TestDefineAllOfOtherCampaignsRunsBeside(t *testing.T) {
	t.Parallel()
	e := openTest(t, t.TempDir(), &fakeClock{}, nil)
	unlock := e.defining.lock([]string{"busy"})
	if _, err := firstError(e.DefineAll(ctxT(t), listDefs("other", "s", 3, sku.PurchaseLimitSKU), 0)); err != nil {
		t.Fatalf("a list of another campaign while one is defining: %v", err)
	}
	waiting := make(chan []error, 2)
	go func() { waiting <- e.DefineAll(ctxT(t), listDefs("busy", "s", 2, sku.PurchaseLimitSKU), 0) }()
	go func() {
		waiting <- e.DefineAll(ctxT(t), append(listDefs("a-first", "s", 1, sku.PurchaseLimitSKU), listDefs("busy", "t", 1, sku.PurchaseLimitSKU)...), 0)
	}()
	// Both wait for "busy"'s lock: each is counted on it before it waits.
	for users := 0; users != 3; {
		e.defining.mu.Lock()
		if cl := e.defining.held["busy"]; cl != nil {
			users = cl.users
		}
		e.defining.mu.Unlock()
		select {
		case errs := <-waiting:
			t.Fatalf("a list naming a campaign whose lock is held went on: %v", errs)
		default:
		}
		time.Sleep(time.Millisecond)
	}
	if n := len(e.AllStats()); n != 3 {
		t.Fatalf("%d SKUs defined while busy's lock is held, want other's 3", n)
	}
	unlock()
	for range 2 {
		if _, err := firstError(<-waiting); err != nil {
			t.Fatalf("a list that waited for its campaign's lock: %v", err)
		}
	}
	if n := len(e.AllStats()); n != 7 {
		t.Fatalf("%d SKUs defined, want 7", n)
	}
	e.defining.mu.Lock()
	defer e.defining.mu.Unlock()
	if len(e.defining.held) != 0 {
		t.Fatalf("locks left after every list ended: %v", e.defining.held)
	}
}
