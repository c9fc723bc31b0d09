package stream

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

var quiet = slog.New(slog.DiscardHandler)

// hang bounds every wait of these tests: a state that does not come
// within it is a failure, not a slow machine.
const hang = 60 * time.Second

// eventually polls cond until it holds, failing after hang.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// proxy stands between a standby and its primary: the test holds the
// standby's acknowledgements back (holdUp) or cuts the link (down).
type proxy struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu    sync.Mutex
	cond  sync.Cond
	held  bool
	isUp  bool
	conns []net.Conn
}

func newProxy(t testing.TB, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, target: target, isUp: true}
	p.cond.L = &p.mu
	go p.accept()
	t.Cleanup(func() { ln.Close(); p.down() })
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		up := p.isUp
		p.mu.Unlock()
		if !up {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go p.copy(s, c, true) // standby → primary: the acknowledgements
		go p.copy(c, s, false)
	}
}

func (p *proxy) copy(dst, src net.Conn, upstream bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && upstream {
			p.mu.Lock()
			for p.held && p.isUp {
				p.cond.Wait()
			}
			p.mu.Unlock()
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// holdUp holds back what the standby sends (its acknowledgements).
func (p *proxy) holdUp() { p.mu.Lock(); p.held = true; p.mu.Unlock() }

func (p *proxy) releaseUp() {
	p.mu.Lock()
	p.held = false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// down cuts every connection and refuses new ones until up.
func (p *proxy) down() {
	p.mu.Lock()
	p.isUp = false
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *proxy) up() { p.mu.Lock(); p.isUp = true; p.mu.Unlock() }

// logs records the SKU logs the engine opened, through its Replication.
type logs struct {
	actors.Replication
	mu   sync.Mutex
	open map[string]*wal.Log
}

func (l *logs) Opened(campaignID, skuID, dir string, log *wal.Log) error {
	if err := l.Replication.Opened(campaignID, skuID, dir, log); err != nil {
		return err
	}
	l.mu.Lock()
	l.open[campaignID+"/"+skuID] = log
	l.mu.Unlock()
	return nil
}

func (l *logs) get(campaignID, skuID string) *wal.Log {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[campaignID+"/"+skuID]
}

// node is a primary: its stream and its engine.
type node struct {
	dir     string
	primary *Primary
	engine  *actors.Engine
	logs    *logs
	addr    string
}

type nodeOptions struct {
	strict           bool
	maxRetainRecords uint64
	engine           func(*actors.Config)
}

// startPrimary begins epoch on dir and opens a primary and its engine.
func startPrimary(t testing.TB, dir string, epoch uint64, o nodeOptions) *node {
	t.Helper()
	if err := BeginEpoch(dir, epoch, quiet); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPrimary(PrimaryConfig{Set: "rs", Name: "p-" + filepath.Base(dir), Epoch: epoch, DataDir: dir, Listener: ln,
		Strict: o.strict, MaxRetainRecords: o.maxRetainRecords, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	n := &node{dir: dir, primary: p, logs: &logs{Replication: p.Replication(), open: map[string]*wal.Log{}}, addr: ln.Addr().String()}
	cfg := actors.Config{DataDir: dir, Logger: quiet, Replication: n.logs, ExpiryInterval: time.Hour}
	if o.engine != nil {
		o.engine(&cfg)
	}
	n.engine, err = actors.Open(cfg)
	if err != nil {
		p.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { n.stop() })
	return n
}

func (n *node) stop() {
	n.engine.Close()
	n.primary.Close()
}

func startStandby(t testing.TB, dir, name, primary string) *Standby {
	t.Helper()
	s, err := NewStandby(StandbyConfig{Set: "rs", Name: name, DataDir: dir, Primary: primary, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func definition(campaignID, skuID string) sku.Definition {
	now := time.Now().UnixMilli()
	return sku.Definition{CampaignID: campaignID, SKUID: skuID, StartAt: now - 1000, EndAt: now + 86_400_000,
		PaymentWindowMs: 3_600_000, SaleLimit: 1_000_000, ReleaseOnClose: true}
}

func define(t testing.TB, e *actors.Engine, campaignID, skuID string) {
	t.Helper()
	if err := e.Define(context.Background(), definition(campaignID, skuID)); err != nil {
		t.Fatal(err)
	}
}

// reserve makes n reservations and returns their ids.
func reserve(t testing.TB, e *actors.Engine, campaignID, skuID string, from, n int) []string {
	t.Helper()
	var ids []string
	for i := from; i < from+n; i++ {
		res, err := e.Reserve(context.Background(), campaignID, skuID, "r"+strconv.Itoa(i), "u"+strconv.Itoa(i))
		if err != nil || res.Outcome != sku.OutcomeAccepted {
			t.Fatalf("reserve %d: %v %v", i, res.Outcome, err)
		}
		ids = append(ids, res.Reservation.ReservationID)
	}
	return ids
}

// status returns the primary's status of a standby.
func status(p *Primary, name string) StandbyStatus {
	i := slices.IndexFunc(p.Standbys(), func(s StandbyStatus) bool { return s.Name == name })
	if i < 0 {
		return StandbyStatus{Name: name}
	}
	return p.Standbys()[i]
}

// copyLast returns the last index of a standby's copy of a SKU (0 when
// it has none).
func copyLast(s *Standby, campaignID, skuID string) (last, durable uint64) {
	for _, c := range s.Status().SKUs {
		if c.CampaignID == campaignID && c.SKUID == skuID {
			return c.LastIndex, c.DurableIndex
		}
	}
	return 0, 0
}

type record struct {
	index   uint64
	typ     byte
	payload string
}

// readLog reads every record of a SKU log directory with the read-only
// wal.Reader (beside a running log).
func readLog(t testing.TB, dir string) (first uint64, records []record) {
	t.Helper()
	r, err := wal.OpenReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Replay(0, func(index uint64, typ byte, payload []byte) error {
		records = append(records, record{index, typ, string(payload)})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return r.FirstIndex(), records
}

// sameRecords fails unless the standby's copy holds the primary's
// records from its own first one on, to the primary's last, byte for byte
// (the frame is a function of index, type and payload).
func sameRecords(t testing.TB, primaryDir, standbyDir, campaignID, skuID string) {
	t.Helper()
	_, want := readLog(t, filepath.Join(primaryDir, campaignID, skuID, "wal"))
	first, got := readLog(t, filepath.Join(standbyDir, campaignID, skuID, "wal"))
	if len(want) == 0 || len(got) == 0 {
		t.Fatalf("%s/%s: primary holds %d records, standby %d", campaignID, skuID, len(want), len(got))
	}
	want = slices.DeleteFunc(want, func(r record) bool { return r.index < first })
	if got[len(got)-1].index != want[len(want)-1].index {
		t.Fatalf("%s/%s: the standby's copy ends at %d, the primary's log at %d", campaignID, skuID, got[len(got)-1].index, want[len(want)-1].index)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s/%s: the standby's records differ from the primary's", campaignID, skuID)
	}
}

// value reads a counter or gauge.
func value(m prometheus.Metric) float64 {
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		panic(err)
	}
	if c := d.GetCounter(); c != nil {
		return c.GetValue()
	}
	return d.GetGauge().GetValue()
}
