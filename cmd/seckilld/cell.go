package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/ledger"
	"github.com/seckill/seckill/wal"
)

// cellOptions are the flags of a cell: seckilld --cell ID --etcd ENDPOINTS
// runs this process as one cell of the celled SKUs published in etcd
// (seckillctl cells publish) whose cell map names it.
type cellOptions struct {
	id         string
	etcd       string
	etcdPrefix string
}

func registerCellFlags(fs *flag.FlagSet, o *cellOptions) {
	fs.StringVar(&o.id, "cell", "", "run as this cell of the celled SKUs published in etcd (needs --etcd)")
	fs.StringVar(&o.etcd, "etcd", "", "etcd endpoints, comma-separated host:port (with --cell or --replica)")
	fs.StringVar(&o.etcdPrefix, "etcd-prefix", ledger.DefaultPrefix, "key prefix of the quota ledger and the replica sets in etcd")
}

// validate checks the cell flags; replicated: --replica was given (it
// uses --etcd too).
func (o cellOptions) validate(replicated bool) error {
	if o.id != "" && o.etcd == "" {
		return errors.New("--cell needs --etcd")
	}
	if o.etcd != "" && o.id == "" && !replicated {
		return errors.New("--etcd needs --cell or --replica")
	}
	return nil
}

// cellsFile caches, in the data dir, the published SKUs of the cell and
// their frozen maps: a cell started while etcd is down still enforces them.
const cellsFile = "cells.json"

// publishedPoll is how often a running cell looks in etcd for SKUs
// published since it started (a new campaign; the maps of SKUs it has are
// frozen and never re-read).
const publishedPoll = time.Second

// cellRuntime is a running cell: the guarded engine for the HTTP service
// and one ledger agent per celled SKU.
type cellRuntime struct {
	guard  *cells.Guard
	engine *actors.Engine
	epoch  *cells.CellEpoch
	agents atomic.Pointer[map[string]*cells.Agent] // by campaign + "/" + sku; copied on add
	client *clientv3.Client
	ledger *ledger.Ledger
	id     string
	reg    prometheus.Registerer
	log    *slog.Logger
	cache  string            // <data-dir>/cells.json
	pubs   []cells.Published // what the cache holds; only the poll loop changes it after start
	// refused holds the published SKUs not taken (errLocalCampaign), and
	// claimDone the local campaigns claimed or found in conflict: only
	// startCell, then the poll loop, touch them.
	refused      map[string]bool
	claimDone    map[string]bool
	localClaimed bool // every campaign held at start is in claimDone
	ctx          context.Context
	cancel       context.CancelFunc
	wg           sync.WaitGroup
}

// startCell defines the cell's published SKUs (or, with etcd down, keeps
// those of its data dir), refuses a data dir of another cell, starts the
// agents, and then keeps adding the SKUs published while it runs.
// Requests never wait on etcd: the agents work beside them.
func startCell(engine *actors.Engine, o cellOptions, dataDir string, reg prometheus.Registerer, log *slog.Logger) (*cellRuntime, error) {
	if err := checkCellOf(engine, o.id, dataDir); err != nil {
		return nil, err
	}
	client, err := ledger.Dial(strings.Split(o.etcd, ","))
	if err != nil {
		return nil, err
	}
	l := ledger.New(client, o.etcdPrefix)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	pubs, err := cells.ReadPublished(ctx, l, o.id)
	cancel()
	cache := filepath.Join(dataDir, cellsFile)
	if err != nil {
		log.Warn("etcd unreachable at start: serving the quota in the data dir; no top-up until etcd answers", "err", err)
		if pubs, err = loadPublished(cache); err != nil {
			client.Close()
			return nil, fmt.Errorf("etcd unreachable and no %s: %w", cache, err)
		}
		if err := checkMapped(engine, o.id, pubs); err != nil {
			client.Close()
			return nil, fmt.Errorf("etcd unreachable and %s: %w", cache, err)
		}
	} else if err := savePublished(cache, pubs); err != nil {
		client.Close()
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	rt := &cellRuntime{guard: cells.NewGuard(engine, o.id, pubs, l), engine: engine, epoch: cells.NewCellEpoch(l, o.id),
		client: client, ledger: l, id: o.id, reg: reg, log: log, cache: cache, pubs: pubs, ctx: runCtx, cancel: stop}
	rt.agents.Store(&map[string]*cells.Agent{})
	for i, err := range rt.addAll(pubs) {
		if errors.Is(err, errLocalCampaign) {
			rt.refuse(pubs[i], err) // a data dir from before the claim: serve the rest
		} else if err != nil {
			rt.stop()
			return nil, err
		}
	}
	rt.wg.Add(1)
	go rt.pollPublished()
	log.Info("cell started", "cell", o.id, "skus", len(pubs), "etcd", o.etcd)
	return rt, nil
}

// checkCellOf refuses an engine whose data dir holds a celled SKU of
// another cell than cell, or any celled SKU when cell is "" (no --cell):
// such a seckilld would sell that cell's quota without its guard, to the
// users of every cell (a user who bought in their own cell could buy
// again there), and without its agent. A replica of a cell's replica set
// started without --cell holds the cell's SKUs once it copied them: its
// promotion then fails here, and another replica of the sync set leads.
func checkCellOf(engine *actors.Engine, cell, dataDir string) error {
	for _, st := range engine.AllStats() {
		switch owner := st.Definition.Cell; {
		case owner == "" || owner == cell:
		case cell == "":
			return fmt.Errorf("%w: %s/%s in %s is cell %s's: start it with --cell %s --etcd E (without them it would sell that SKU to the users of every cell)",
				cells.ErrForeignDataDir, st.CampaignID, st.SKUID, dataDir, owner, owner)
		default:
			return fmt.Errorf("%w: %s/%s in %s is cell %s's, not %s", cells.ErrForeignDataDir, st.CampaignID, st.SKUID, dataDir, owner, cell)
		}
	}
	return nil
}

// checkMapped refuses an engine holding a SKU celled for cell that pubs
// has no map for: its guard could not tell another cell's user, who would
// buy here as well as in their own cell. A replica of a cell's set copies
// every SKU's log but writes cells.json only while it leads, so a standby
// promoted while etcd does not answer may hold an older cache than its
// logs.
func checkMapped(engine *actors.Engine, cell string, pubs []cells.Published) error {
	mapped := map[string]bool{}
	for _, p := range pubs {
		mapped[p.Definition.CampaignID+"/"+p.Definition.SKUID] = true
	}
	for _, st := range engine.AllStats() {
		if key := st.CampaignID + "/" + st.SKUID; st.Definition.Cell == cell && !mapped[key] {
			return fmt.Errorf("the celled SKU %s of the data dir has no cell map there: without it the cell cannot refuse the users of other cells; start it when etcd answers", key)
		}
	}
	return nil
}

// errLocalCampaign: a published SKU's campaign is defined locally
// (uncelled) in this cell's data dir. With the claim (cells'
// Guard.ClaimCampaign, ledger.ClaimLocal) it cannot arise; a data dir
// from before it may hold one.
var errLocalCampaign = errors.New("the campaign is defined locally (uncelled) on this cell")

// add guards, defines and starts the agent of one published SKU (addAll).
func (rt *cellRuntime) add(p cells.Published) error { return rt.addAll([]cells.Published{p})[0] }

// addAll guards, defines and starts the agents of published SKUs: the
// guards first, so that no reserve of a user of another cell is ever
// taken between a definition and its guard; then their definitions as
// one list (those a cell starts with are defined side by side:
// actors.Engine.DefineAll); then each defined SKU's agent. It returns one
// error per SKU: errLocalCampaign, with nothing done, when the engine
// holds a SKU of its campaign uncelled.
func (rt *cellRuntime) addAll(pubs []cells.Published) []error {
	errs := make([]error, len(pubs))
	var defs []sku.Definition
	var listed []int // the index in pubs of each of defs
	for i, p := range pubs {
		if errs[i] = rt.checkCelled(p); errs[i] != nil {
			continue
		}
		rt.guard.Add(p)
		defs = append(defs, p.ForCell(rt.id))
		listed = append(listed, i)
	}
	for j, err := range rt.engine.DefineAll(rt.ctx, defs, time.Minute) {
		p := pubs[listed[j]]
		if err != nil {
			errs[listed[j]] = fmt.Errorf("defining %s/%s for cell %s: %w", p.Definition.CampaignID, p.Definition.SKUID, rt.id, err)
			continue
		}
		errs[listed[j]] = rt.startAgent(p)
	}
	return errs
}

// checkCelled returns errLocalCampaign when the engine holds a SKU of
// p's campaign uncelled.
func (rt *cellRuntime) checkCelled(p cells.Published) error {
	for _, st := range rt.engine.AllStats() {
		if st.CampaignID == p.Definition.CampaignID && st.Definition.Cell == "" {
			return fmt.Errorf("%w: SKU %s/%s is defined here uncelled, so the published %s/%s cannot be taken: a campaign is local to one cell or published across cells, never both (write off this cell's quota of it: seckillctl cells write-off)",
				errLocalCampaign, st.CampaignID, st.SKUID, p.Definition.CampaignID, p.Definition.SKUID)
		}
	}
	return nil
}

// startAgent starts the agent of a published SKU once it is defined.
func (rt *cellRuntime) startAgent(p cells.Published) error {
	s := ledger.SKU{Campaign: p.Definition.CampaignID, SKU: p.Definition.SKUID}
	a, err := cells.NewAgent(cells.AgentConfig{Engine: rt.engine, Ledger: rt.ledger, SKU: s, Cell: rt.id, Epoch: rt.epoch, Logger: rt.log})
	if err != nil {
		return err
	}
	old := *rt.agents.Load()
	next := make(map[string]*cells.Agent, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[s.Campaign+"/"+s.SKU] = a
	rt.agents.Store(&next)
	registerAgentMetrics(rt.reg, s, rt.id, a)
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		if err := a.Run(rt.ctx); err != nil {
			rt.log.Error("cell agent stopped", "campaign_id", s.Campaign, "sku_id", s.SKU, "err", err)
		}
	}()
	return nil
}

// addRetryMax bounds the backoff of a published SKU whose add failed.
const addRetryMax = time.Minute

// refuse logs, once, that published SKU p is not taken (errLocalCampaign:
// it never will be by this process), and never retries it.
func (rt *cellRuntime) refuse(p cells.Published, err error) {
	key := p.Definition.CampaignID + "/" + p.Definition.SKUID
	if rt.refused == nil {
		rt.refused = map[string]bool{}
	}
	if !rt.refused[key] {
		rt.refused[key] = true
		rt.log.Error("not taking a published SKU", "cell", rt.id, "sku", key, "err", err)
	}
}

// pollPublished reads, every publishedPoll, the cells' addresses
// (readAddresses) and adds the SKUs published for this cell since it
// started: the cache first (a restart with etcd down must
// still enforce their maps), then add. A failure is retried with backoff
// (1 s doubling up to addRetryMax, logged at each retry); a SKU refused
// with errLocalCampaign is logged once and not retried. It also claims
// the campaigns the data dir defines locally (claimLocal).
func (rt *cellRuntime) pollPublished() {
	defer rt.wg.Done()
	retry := map[string]time.Duration{} // by SKU: the backoff of a failed add
	next := map[string]time.Time{}      // by SKU: when to try it again
	for {
		select {
		case <-rt.ctx.Done():
			return
		case <-time.After(publishedPoll):
		}
		ctx, cancel := context.WithTimeout(rt.ctx, 2*time.Second)
		pubs, err := cells.ReadPublished(ctx, rt.ledger, rt.id)
		cancel()
		if err != nil {
			continue // etcd unreachable: the agents say so on /metrics
		}
		rt.readAddresses()
		rt.claimLocal()
		agents := *rt.agents.Load()
		for _, p := range pubs {
			key := p.Definition.CampaignID + "/" + p.Definition.SKUID
			if agents[key] != nil || rt.refused[key] || time.Now().Before(next[key]) {
				continue
			}
			if !rt.cached(key) {
				next := append(append([]cells.Published(nil), rt.pubs...), p)
				if err := savePublished(rt.cache, next); err != nil {
					rt.log.Error("caching a newly published SKU failed; retrying", "sku", key, "err", err)
					continue
				}
				rt.pubs = next
			}
			if err := rt.add(p); errors.Is(err, errLocalCampaign) {
				rt.refuse(p, err)
				continue
			} else if err != nil {
				retry[key] = min(max(2*retry[key], publishedPoll), addRetryMax)
				next[key] = time.Now().Add(retry[key])
				rt.log.Error("adding a newly published SKU failed; retrying", "sku", key, "in", retry[key], "err", err)
				continue
			}
			delete(retry, key)
			delete(next, key)
			rt.log.Info("cell took a newly published SKU", "cell", rt.id, "sku", key)
		}
	}
}

// claimLocal claims (cells' Guard.ClaimCampaign) each campaign the
// engine held uncelled at start and has not claimed yet: a data dir from
// before the claim then keeps its campaigns from being published over it
// (a campaign defined since was claimed by its admin PUT). A campaign
// found published already (such a data dir's conflict) is logged once;
// one etcd did not answer for is asked again at the next poll, until a
// pass leaves none.
func (rt *cellRuntime) claimLocal() {
	if rt.localClaimed {
		return
	}
	rt.localClaimed = true
	for _, st := range rt.engine.AllStats() {
		c := st.CampaignID
		if st.Definition.Cell != "" || rt.claimDone[c] {
			continue
		}
		ctx, cancel := context.WithTimeout(rt.ctx, 2*time.Second)
		err := rt.guard.ClaimCampaign(ctx, c)
		cancel()
		if errors.Is(err, httpapi.ErrLedgerUnreachable) {
			rt.localClaimed = false
			continue
		}
		if rt.claimDone == nil {
			rt.claimDone = map[string]bool{}
		}
		rt.claimDone[c] = true
		if err != nil {
			rt.log.Error("a campaign defined locally on this cell cannot be claimed", "cell", rt.id, "campaign_id", c, "err", err)
		}
	}
}

// readAddresses gives the guard the addresses the cells announced in etcd
// (for its WRONG_CELL answers); on an error it keeps those it has.
func (rt *cellRuntime) readAddresses() {
	ctx, cancel := context.WithTimeout(rt.ctx, 2*time.Second)
	defer cancel()
	if addrs, err := rt.ledger.CellAddrs(ctx); err == nil {
		rt.guard.SetAddresses(addrs)
	}
}

// cached reports whether the cache holds the SKU campaign + "/" + sku.
func (rt *cellRuntime) cached(key string) bool {
	for _, p := range rt.pubs {
		if p.Definition.CampaignID+"/"+p.Definition.SKUID == key {
			return true
		}
	}
	return false
}

// announce publishes the cell's HTTP base URL in etcd for seckillctl
// audit, retrying in the background until etcd answers or the cell stops.
func (rt *cellRuntime) announce(l *ledger.Ledger, cell, url string, log *slog.Logger) {
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := l.Client().Put(ctx, l.AddrKey(cell), url)
			cancel()
			if err == nil {
				return
			}
			log.Warn("announcing the cell's address in etcd failed; retrying", "err", err)
			select {
			case <-rt.ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
}

// topUpPending is httpapi.Config.TopUpPending: the SKU's agent expects a
// top-up (cells.Agent.ExpectsTopUp), so an empty cell says Retry-After.
func (rt *cellRuntime) topUpPending(campaignID, skuID string) bool {
	a := (*rt.agents.Load())[campaignID+"/"+skuID]
	return a != nil && a.ExpectsTopUp()
}

func (rt *cellRuntime) stop() {
	rt.cancel()
	rt.wg.Wait()
	rt.client.Close()
}

// registerAgentMetrics exports an agent's state on /metrics.
func registerAgentMetrics(reg prometheus.Registerer, s ledger.SKU, cell string, a *cells.Agent) {
	if reg == nil {
		return
	}
	labels := prometheus.Labels{"campaign_id": s.Campaign, "sku_id": s.SKU, "cell": cell}
	gauge := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, f))
	}
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	gauge("seckill_cell_ledger_reachable", "1 while the last etcd operation of the cell's agent answered", func() float64 { return b(a.LedgerReachable()) })
	gauge("seckill_cell_top_up_pending", "1 while the cell waits for a top-up from the ledger", func() float64 { return b(a.TopUpPending()) })
	gauge("seckill_cell_epoch", "the cell's epoch in the ledger (0: not taken yet)", func() float64 { return float64(a.Stats().Epoch) })
	gauge("seckill_cell_log_lost", "1 while the cell sells nothing of the SKU because its log of it was lost (etcd marks it as having logged an EPOCH, the data dir holds none): write off the cell's quota of it (seckillctl cells write-off)",
		func() float64 { return b(a.LogLost()) })
	gauge("seckill_cell_top_up_retries", "top-up attempts that ended without an answer", func() float64 { return float64(a.Stats().TopUpRetries) })
}

func loadPublished(path string) ([]cells.Published, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pubs []cells.Published
	if err := json.Unmarshal(b, &pubs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, p := range pubs {
		if err := p.Map.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return pubs, nil
}

// savePublished writes the cache durably (wal.WriteFile).
func savePublished(path string, pubs []cells.Published) error {
	b, err := json.Marshal(pubs)
	if err != nil {
		return err
	}
	return wal.WriteFile(filepath.Dir(path), filepath.Base(path), b, 0o644)
}
