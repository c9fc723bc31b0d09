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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/cells"
	"github.com/seckill/seckill/ledger"
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
	fs.StringVar(&o.etcd, "etcd", "", "etcd endpoints, comma-separated host:port (with --cell)")
	fs.StringVar(&o.etcdPrefix, "etcd-prefix", ledger.DefaultPrefix, "key prefix of the quota ledger in etcd")
}

func (o cellOptions) validate() error {
	if (o.id == "") != (o.etcd == "") {
		return errors.New("--cell and --etcd go together")
	}
	return nil
}

// cellsFile caches, in the data dir, the published SKUs of the cell and
// their frozen maps: a cell started while etcd is down still enforces them.
const cellsFile = "cells.json"

// cellRuntime is a running cell: the guarded engine for the HTTP service
// and one ledger agent per celled SKU.
type cellRuntime struct {
	guard  *cells.Guard
	agents map[string]*cells.Agent // by campaign + "/" + sku
	client *clientv3.Client
	ledger *ledger.Ledger
	id     string
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startCell defines the cell's published SKUs (or, with etcd down, keeps
// those of its data dir), refuses a data dir of another cell, and starts
// the agents. Requests never wait on etcd: the agents work beside them.
func startCell(engine *actors.Engine, o cellOptions, dataDir string, reg prometheus.Registerer, log *slog.Logger) (*cellRuntime, error) {
	for _, st := range engine.AllStats() {
		if st.Definition.Cell != "" && st.Definition.Cell != o.id {
			return nil, fmt.Errorf("%w: %s/%s in %s is cell %s's, not %s", cells.ErrForeignDataDir, st.CampaignID, st.SKUID, dataDir, st.Definition.Cell, o.id)
		}
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
	} else if err := savePublished(cache, pubs); err != nil {
		client.Close()
		return nil, err
	}
	for _, p := range pubs {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := engine.Define(ctx, p.ForCell(o.id))
		cancel()
		if err != nil {
			client.Close()
			return nil, fmt.Errorf("defining %s/%s for cell %s: %w", p.Definition.CampaignID, p.Definition.SKUID, o.id, err)
		}
	}
	rt := &cellRuntime{guard: cells.NewGuard(engine, o.id, pubs), agents: map[string]*cells.Agent{}, client: client, ledger: l, id: o.id}
	runCtx, stop := context.WithCancel(context.Background())
	rt.ctx, rt.cancel = runCtx, stop
	for _, p := range pubs {
		s := ledger.SKU{Campaign: p.Definition.CampaignID, SKU: p.Definition.SKUID}
		a, err := cells.NewAgent(cells.AgentConfig{Engine: engine, Ledger: l, SKU: s, Cell: o.id, Logger: log})
		if err != nil {
			rt.stop()
			return nil, err
		}
		rt.agents[s.Campaign+"/"+s.SKU] = a
		registerAgentMetrics(reg, s, o.id, a)
		rt.wg.Add(1)
		go func() {
			defer rt.wg.Done()
			if err := a.Run(runCtx); err != nil {
				log.Error("cell agent stopped", "campaign_id", s.Campaign, "sku_id", s.SKU, "err", err)
			}
		}()
	}
	log.Info("cell started", "cell", o.id, "skus", len(pubs), "etcd", o.etcd)
	return rt, nil
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

// topUpPending is httpapi.Config.TopUpPending.
func (rt *cellRuntime) topUpPending(campaignID, skuID string) bool {
	a := rt.agents[campaignID+"/"+skuID]
	return a != nil && a.TopUpPending()
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

// savePublished writes the cache: temp file, fsync, rename, fsync the dir.
func savePublished(path string, pubs []cells.Published) error {
	b, err := json.Marshal(pubs)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
