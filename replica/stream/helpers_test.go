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
	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/internal/skudir"
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
type proxy struct{ *etcdtest.Proxy }

func newProxy(t testing.TB, target string) proxy {
	p, err := etcdtest.NewProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return proxy{p}
}

func (p proxy) addr() string { return p.Addr }

// holdUp holds back what the standby sends (its acknowledgements).
func (p proxy) holdUp() { p.CutRequests() }

func (p proxy) releaseUp() { p.Heal() }

// down closes the connection; a new one is held until up.
func (p proxy) down() { p.Cut(); p.Reset() }

func (p proxy) up() { p.Heal() }

// logs records the SKU logs the engine opened, through its Replication.
type logs struct {
	actors.Replication
	mu   sync.Mutex
	open map[string]*wal.Log
}

func (l *logs) Opened(campaignID, skuID string, dir skudir.Dir, log *wal.Log) error {
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
	standbyWAL       wal.Options // startPair's standby's logs
	// waited: the standbys waited for from before the engine opens (the
	// sync set of the acquisition).
	waited []string
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
	if o.waited != nil {
		p.Wait(o.waited)
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

func startStandby(t testing.TB, dir, name, primary string, o ...wal.Options) *Standby {
	t.Helper()
	cfg := StandbyConfig{Set: "rs", Name: name, DataDir: dir, Primary: primary, Logger: quiet}
	if len(o) > 0 {
		cfg.WAL = o[0]
	}
	s, err := NewStandby(cfg)
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
// records, byte for byte (the frame is a function of index, type and
// payload), to the primary's last, from the later of their first records.
func sameRecords(t testing.TB, primaryDir, standbyDir, campaignID, skuID string) {
	t.Helper()
	pfirst, want := readLog(t, filepath.Join(primaryDir, campaignID, skuID, "wal"))
	first, got := readLog(t, filepath.Join(standbyDir, campaignID, skuID, "wal"))
	if len(want) == 0 || len(got) == 0 {
		t.Fatalf("%s/%s: primary holds %d records, standby %d", campaignID, skuID, len(want), len(got))
	}
	want = slices.DeleteFunc(want, func(r record) bool { return r.index < first })
	got = slices.DeleteFunc(got, func(r record) bool { return r.index < pfirst })
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

// pair is a primary with SKU c1/s1 and its standby "b" behind a proxy,
// caught up.
type pair struct {
	n          *node
	px         proxy
	sb         *Standby
	pdir, sdir string
}

func startPair(t testing.TB, o nodeOptions) pair {
	t.Helper()
	p := pair{pdir: t.TempDir(), sdir: t.TempDir()}
	p.n = startPrimary(t, p.pdir, 1, o)
	define(t, p.n.engine, "c1", "s1")
	p.px = newProxy(t, p.n.addr)
	p.sb = startStandby(t, p.sdir, "b", p.px.addr(), o.standbyWAL)
	eventually(t, "the standby caught up", func() bool { return status(p.n.primary, "b").CaughtUp })
	return p
}

// caughtUp waits until standby name holds every record of the primary's
// log of c1/s1, durably, and the primary counts it caught up.
func caughtUp(t testing.TB, n *node, sb *Standby, name string) {
	t.Helper()
	log := n.logs.get("c1", "s1")
	eventually(t, name+" caught up with the primary's log", func() bool {
		l, d := copyLast(sb, "c1", "s1")
		return l == log.LastIndex() && d == l && status(n.primary, name).CaughtUp
	})
}

// smallSegments makes a log truncate after a few hundred records: small
// segments, one snapshot kept.
func smallSegments(c *actors.Config) {
	c.WAL.SegmentSize = 4 << 10
	c.SnapshotKeep = 1
}
