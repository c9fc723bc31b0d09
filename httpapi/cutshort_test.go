package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
)

// TestCampaignPUTCutShort: a campaign PUT whose disk fills after one of
// its three SKUs was defined is not answered as if nothing was done (503
// UNAVAILABLE): it is 504 RESULT_UNKNOWN with the campaign's URL and a
// detail saying it is partly defined and how to finish it, and the
// definition stays pending in the data dir for the next start to finish.
// The PUT repeated on a disk with room defines the rest and removes it.
func TestCampaignPUTCutShort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	faults := &faultEngine{}
	ts := startServer(t, serverOptions{dir: dir, faults: faults})
	pending := func() int {
		m, err := filepath.Glob(filepath.Join(dir, "pending-define-*"))
		if err != nil {
			t.Fatal(err)
		}
		return len(m)
	}
	var defines atomic.Int64
	full := fmt.Errorf("%w: cut/b: wal: fsync failed: %w", actors.ErrUnavailable, syscall.ENOSPC)
	faults.setHooks(hooks{before: func(ctx context.Context, c engineCall) error {
		if c.kind == kindDefine && defines.Add(1) == 2 {
			return full
		}
		return nil
	}})
	body := campaign("cut", "15m", map[string]int{"a": 5, "b": 5, "c": 5})
	r := ts.admin(http.MethodPut, "/admin/campaigns/cut", body)
	want(t, r, http.StatusGatewayTimeout, "RESULT_UNKNOWN")
	if r.str("status_url") != "/admin/campaigns/cut" || !strings.Contains(r.str("detail"), "partly defined: 1 of 3 SKUs") ||
		!strings.Contains(r.str("detail"), "repeat this PUT") {
		t.Fatalf("a PUT cut short: %v, want the campaign's URL and a detail saying it is partly defined and how to finish", r)
	}
	if n := pending(); n != 1 {
		t.Fatalf("%d pending files after a PUT cut short, want 1 for the next start", n)
	}
	if got := ts.admin(http.MethodGet, "/admin/campaigns/cut", nil); len(got.body["skus"].([]any)) != 1 || got.body["partly_defined"] != true {
		t.Fatalf("GET after a PUT cut short: %v, want its 1 SKU defined and partly_defined", got)
	}
	if got := ts.admin(http.MethodGet, "/admin/campaigns", nil); got.body["campaigns"].([]any)[0].(map[string]any)["partly_defined"] != true {
		t.Fatalf("GET /admin/campaigns after a PUT cut short: %v, want the campaign partly_defined", got)
	}
	faults.setHooks(hooks{})
	r = ts.admin(http.MethodPut, "/admin/campaigns/cut", body)
	want(t, r, http.StatusOK, "")
	if skus := r.body["skus"].([]any); len(skus) != 3 || r.body["partly_defined"] != nil {
		t.Fatalf("the PUT repeated: %v, want 3 SKUs, no longer partly_defined", r)
	}
	if n := pending(); n != 0 {
		t.Fatalf("%d pending files once the repeated PUT finished the campaign, want 0", n)
	}
}

// refusingPending is a PendingStore whose Put fails with err, as a
// replica set's does when etcd does not answer or the list is too large
// for it.
type refusingPending struct {
	actors.PendingStore
	err error
}

func (p refusingPending) Put([]sku.Definition) (string, error) { return "", p.err }

// TestCampaignPUTRefusedBeforeItsFirstSKUSaysWhy: a campaign PUT whose
// list of SKUs could not be kept (a replica set's etcd that did not
// answer, a list too large for it) defines nothing, and its answer says
// so and why, with Retry-After for the 503, instead of a bare reason the
// operator cannot act on.
func TestCampaignPUTRefusedBeforeItsFirstSKUSaysWhy(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, reason string
		status       int
		err          error
		detail       string
		retryAfter   string
	}{
		{"etcd does not answer", "UNAVAILABLE", http.StatusServiceUnavailable,
			fmt.Errorf("%w: recording the pending definitions in etcd: context deadline exceeded", actors.ErrUnavailable),
			"nothing was defined: recording the pending definitions in etcd: context deadline exceeded; repeat the PUT", "1"},
		{"list too large", "BAD_REQUEST", http.StatusBadRequest,
			fmt.Errorf("%w: the definitions of 3 SKUs take 2000000 bytes compressed, more than the 1048576 a replica set keeps in etcd: define the campaign in several PUTs", actors.ErrInvalidArgument),
			"define the campaign in several PUTs", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, serverOptions{engine: func(cfg *actors.Config) { cfg.Pending = refusingPending{err: c.err} }})
			r := ts.admin(http.MethodPut, "/admin/campaigns/nb", campaign("nb", "15m", map[string]int{"a": 5, "b": 5, "c": 5}))
			want(t, r, c.status, c.reason)
			if !strings.Contains(r.str("detail"), c.detail) || r.header.Get("Retry-After") != c.retryAfter {
				t.Fatalf("a PUT refused before its first SKU: %v (Retry-After %q), want a detail with %q and Retry-After %q",
					r, r.header.Get("Retry-After"), c.detail, c.retryAfter)
			}
			want(t, ts.admin(http.MethodGet, "/admin/campaigns/nb", nil), http.StatusNotFound, "NOT_FOUND")
		})
	}
}

// setListPending keeps its lists in memory and says what a replica set's
// store says (cmd/seckilld's setPending, in etcd): the set's next
// primary finishes a list left unfinished, not this node's next start.
type setListPending struct {
	mu    sync.Mutex
	seq   int
	lists map[string][]sku.Definition
}

func (p *setListPending) Put(defs []sku.Definition) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	key := fmt.Sprint(p.seq)
	p.lists[key] = defs
	return key, nil
}

func (p *setListPending) Remove(key string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.lists, key)
	return nil
}

func (p *setListPending) List(context.Context) ([]actors.PendingList, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []actors.PendingList
	for k, d := range p.lists {
		out = append(out, actors.PendingList{Key: k, Defs: d})
	}
	return out, nil
}

func (p *setListPending) Finisher() actors.Finisher { return actors.FinishedByNextPrimary }

// TestCampaignPUTCutShortSaysWhoFinishesIt: the 504 of a campaign PUT cut
// short says what is true of the node that answers it: a single node's
// next start finishes the definition (its list is in the data dir); a
// replica set's primary, deposed in the middle of the PUT (its commit
// unacknowledged) or failing otherwise, leaves the list in etcd, where
// the set's next primary finishes it, as does the PUT repeated to the
// primary; never "the next start", which on a replica finishes nothing.
// The reason and status_url stay as they are.
func TestCampaignPUTCutShortSaysWhoFinishesIt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		pending   func() actors.PendingStore
		want, not string
	}{
		{"single node", func() actors.PendingStore { return nil },
			"repeat this PUT to finish it (SKUs already defined as stated are left as they are), or the next start will", "primary"},
		{"replica set", func() actors.PendingStore { return &setListPending{lists: map[string][]sku.Definition{}} },
			"the replica set's next primary finishes it as it takes the lead, or this PUT repeated to the set's primary does (SKUs already defined as stated are left as they are)", "next start"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			faults := &faultEngine{}
			ts := startServer(t, serverOptions{faults: faults, engine: func(cfg *actors.Config) { cfg.Pending = c.pending() }})
			var defines atomic.Int64
			faults.setHooks(hooks{before: func(ctx context.Context, d engineCall) error {
				if d.kind == kindDefine && defines.Add(1) == 2 {
					return fmt.Errorf("%w: the replica's lead ended", actors.ErrResultUnknown)
				}
				return nil
			}})
			r := ts.admin(http.MethodPut, "/admin/campaigns/who", campaign("who", "15m", map[string]int{"a": 5, "b": 5, "c": 5}))
			want(t, r, http.StatusGatewayTimeout, "RESULT_UNKNOWN")
			if d := r.str("detail"); r.str("status_url") != "/admin/campaigns/who" || !strings.Contains(d, c.want) || strings.Contains(d, c.not) {
				t.Fatalf("a PUT cut short: %v, want the campaign's URL and a detail saying %q, without %q", r, c.want, c.not)
			}
		})
	}
}
