package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/internal/lockedbuf"
	"github.com/seckill/seckill/internal/timefmt"
	"github.com/seckill/seckill/ledger"
	"github.com/seckill/seckill/replica"
)

// copyNet is the test's replication stream between replicas of one
// process: a standby that follows a primary's address counts as
// connected and caught up while both are open. It copies nothing (the
// engine opens unreplicated): the runner's roles, etcd keys and HTTP
// answers are what these tests are about; the stream's copying is tested
// by the multi-process test.
type copyNet struct {
	mu        sync.Mutex
	primaries map[string]*fakePrimary // by replication address
	epochs    map[string]uint64       // by data dir: BeginEpoch's
	// hold, when set, is every primary's replication: its commits wait
	// for hold's release.
	hold *heldReplication
	// lag is the records each standby (by name) is reported behind: a
	// standby connected and caught up that has yet to acknowledge them.
	lag map[string]uint64
}

func newCopyNet() *copyNet {
	return &copyNet{primaries: map[string]*fakePrimary{}, epochs: map[string]uint64{}}
}

func (c *copyNet) BeginEpoch(dataDir string, e uint64, _ *slog.Logger) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epochs[dataDir] = e
	return nil
}

// streamOpened logs as replica/stream does when it opens: under the set
// and replica labels it adds to the logger it is given.
func streamOpened(log *slog.Logger, set, name, role string) {
	log.With("replica_set", set, "replica", name).Info("stream opened", "role", role)
}

func (c *copyNet) NewPrimary(cfg primaryConfig) (primaryStream, error) {
	streamOpened(cfg.log, cfg.set, cfg.name, "primary")
	c.mu.Lock()
	defer c.mu.Unlock()
	p := &fakePrimary{net: c, addr: cfg.ln.Addr().String(), ln: cfg.ln, followers: map[string]bool{}, hold: c.hold}
	c.primaries[p.addr] = p
	return p, nil
}

func (c *copyNet) NewStandby(cfg standbyConfig) (standbyStream, error) {
	streamOpened(cfg.log, cfg.set, cfg.name, "standby")
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &fakeStandby{net: c, name: cfg.name, primary: cfg.primary}
	if p := c.primaries[cfg.primary]; p != nil && !p.closed {
		p.followers[cfg.name] = true
	}
	return s, nil
}

type fakePrimary struct {
	net       *copyNet
	addr      string
	ln        net.Listener
	followers map[string]bool
	waited    []string
	closed    bool
	hold      *heldReplication
}

func (p *fakePrimary) Replicate(cfg *actors.Config) {
	if p.hold != nil {
		cfg.Replication = p.hold
	}
}

func (p *fakePrimary) Wait(standbys []string) {
	p.net.mu.Lock()
	defer p.net.mu.Unlock()
	p.waited = standbys
}

func (p *fakePrimary) Followers() []follower {
	p.net.mu.Lock()
	defer p.net.mu.Unlock()
	var out []follower
	for name, on := range p.followers {
		out = append(out, follower{Follower: replica.Follower{Name: name, Connected: on, CaughtUp: on, LastAck: time.Now(),
			LagRecords: p.net.lag[name]}})
	}
	return out
}

func (p *fakePrimary) Close() error {
	p.net.mu.Lock()
	defer p.net.mu.Unlock()
	p.closed = true
	delete(p.net.primaries, p.addr)
	return p.ln.Close()
}

type fakeStandby struct {
	net           *copyNet
	name, primary string
}

func (s *fakeStandby) Status() standbyStatus        { return standbyStatus{Connected: true} }
func (s *fakeStandby) Reads() httpapi.StandbyReader { return nil }

func (s *fakeStandby) Close() error {
	s.net.mu.Lock()
	defer s.net.mu.Unlock()
	if p := s.net.primaries[s.primary]; p != nil {
		p.followers[s.name] = false
	}
	return nil
}

// testReplica is one haNode of a test, running until stop.
type testReplica struct {
	name  string
	logs  *lockedbuf.Buffer // its log, shown if the test fails
	node  *haNode
	coord *replica.Etcd
	url   string
	stop  context.CancelFunc
	done  chan error
}

func startTestReplica(t *testing.T, c *copyNet, client *ledger.Ledger, name, dataDir string) *testReplica {
	t.Helper()
	return startTestReplicaOf(t, c, client, "rs1", name, dataDir, "--etcd", "unused:1")
}

// startTestReplicaOf starts replica name of set with extra flags (the
// coordinator is on client whatever --etcd says).
func startTestReplicaOf(t *testing.T, c *copyNet, client *ledger.Ledger, set, name, dataDir string, extra ...string) *testReplica {
	t.Helper()
	return startTestReplicaOn(t, c, client, func(e *replica.Etcd) haCoordinator { return e }, set, name, dataDir, extra...)
}

// startTestReplicaOn is startTestReplicaOf with the node's coordinator
// made by wrap from the etcd one (a test's faults in front of it).
func startTestReplicaOn(t *testing.T, c *copyNet, client *ledger.Ledger, wrap func(*replica.Etcd) haCoordinator, set, name, dataDir string, extra ...string) *testReplica {
	t.Helper()
	opts, err := parseOptions(append([]string{"--data-dir", dataDir, "--admin-token", "tok",
		"--replica", name, "--replica-set", set, "--replication-addr", "127.0.0.1:0", "--lease-ttl", "1s"}, extra...), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	coord, err := replica.NewEtcd(client.Client(), opts.cell.etcdPrefix, set, name, opts.replica.leaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	deps := svcDeps{opts: opts, budget: fdBudget{MaxSKUs: 100, MaxConnections: 100}, token: "tok", clock: time.Now}
	if opts.campaigns != "" {
		if deps.campaigns, err = httpapi.LoadCampaigns(opts.campaigns); err != nil {
			t.Fatal(err)
		}
	}
	n := newHANode(opts, deps, log, wrap(coord), c, ln, rln)
	ctx, cancel := context.WithCancel(context.Background())
	r := &testReplica{name: name, logs: logs, node: n, coord: coord, url: "http://" + ln.Addr().String(), stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- n.run(ctx) }()
	t.Cleanup(func() {
		r.halt(t)
		if t.Failed() {
			t.Logf("replica %s's log:\n%s", name, logs.String())
		}
	})
	return r
}

// halt stops the replica (SIGTERM's path) once.
func (r *testReplica) halt(t *testing.T) {
	if r.stop == nil {
		return
	}
	r.stop()
	r.stop = nil
	if err := <-r.done; err != nil {
		t.Errorf("replica %s: %v", r.name, err)
	}
}

func getJSON(t *testing.T, url, token string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil {
		json.Unmarshal(b, v)
	}
	return resp.StatusCode
}

// startLedger starts a real etcd and returns it with a ledger client on
// it (closed at the end of the test).
func startLedger(t *testing.T) (*etcdtest.Server, *ledger.Ledger) {
	t.Helper()
	srv := etcdtest.Start(t)
	client, err := ledger.Dial([]string{srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return srv, ledger.New(client, ledger.DefaultPrefix)
}

// waitPublished waits until primary r has published the sync set
// standbys (comma-separated) and returns its /admin/replica.
func waitPublished(t *testing.T, r *testReplica, standbys string) haState {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var st haState
		if getJSON(t, r.url+replicaStatusPath, "tok", &st) == http.StatusOK && strings.Join(st.Sync, ",") == standbys {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never published %s: %+v", r.name, standbys, st)
		}
	}
}

// waitRole waits until the replica's /healthz says role (a state, not a
// time: the test machine may be loaded).
func waitRole(t *testing.T, r *testReplica, role string) healthState {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var h healthState
		if getJSON(t, r.url+"/healthz", "", &h) == http.StatusOK && h.Role == role {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never became %s: last /healthz %+v", r.name, role, h)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Two replicas on a real etcd: one leads, the other follows and is
// published in the sync set once caught up; the standby answers the API
// 421 NOT_PRIMARY naming the primary; the primary's lease ends (a pause
// past the TTL, a cut from etcd) and it demotes itself at once, the
// standby takes over in the next epoch, and the former primary follows it
// and answers NOT_PRIMARY naming it.
func TestReplicaRolesOnEtcd(t *testing.T) {
	_, l := startLedger(t)
	c := newCopyNet()
	dir := t.TempDir()
	a := startTestReplica(t, c, l, "a", filepath.Join(dir, "a"))
	waitRole(t, a, "primary")
	b := startTestReplica(t, c, l, "b", filepath.Join(dir, "b"))
	h := waitRole(t, b, "standby")
	if h.Primary != "a" || h.Epoch != 1 {
		t.Fatalf("b: %+v", h)
	}
	// The streams label their own lines with the replica: the node hands
	// them its logger without those labels, so each line names it once.
	for _, r := range []*testReplica{a, b} {
		for _, line := range strings.Split(r.logs.String(), "\n") {
			if strings.Contains(line, "stream opened") && strings.Count(line, " replica=") != 1 {
				t.Errorf("replica %s: %s", r.name, line)
			}
		}
	}

	// Rule 1: b is published once it is caught up and waited for.
	st := waitPublished(t, a, "b")
	if strings.Join(st.Waited, ",") != "b" {
		t.Fatalf("published but not waited for: %+v", st)
	}
	if code := getJSON(t, a.url+replicaStatusPath, "", nil); code != http.StatusUnauthorized {
		t.Fatalf("/admin/replica without the token: %d", code)
	}
	// A standby's last acknowledgement is a time of an answer: RFC 3339 in
	// UTC with milliseconds, as every answer's (timefmt).
	var shown struct {
		Standbys []struct {
			LastAck string `json:"last_ack"`
		} `json:"standbys"`
	}
	getJSON(t, a.url+replicaStatusPath, "tok", &shown)
	if len(shown.Standbys) != 1 {
		t.Fatalf("/admin/replica's standbys: %+v", shown)
	}
	if at, err := time.Parse(time.RFC3339, shown.Standbys[0].LastAck); err != nil || timefmt.Millis(at.UnixMilli()) != shown.Standbys[0].LastAck {
		t.Errorf("/admin/replica's last_ack %q is not in the format of every answer (%v)", shown.Standbys[0].LastAck, err)
	}

	// The sync set and the waited standbys are the primary's to show: the
	// standby shows neither (an empty list would read as "none").
	var standbyShown map[string]any
	getJSON(t, b.url+replicaStatusPath, "tok", &standbyShown)
	if _, ok := standbyShown["sync"]; ok || standbyShown["role"] != "standby" {
		t.Errorf("the standby's /admin/replica: %v", standbyShown)
	}
	if _, ok := standbyShown["waited"]; ok {
		t.Errorf("the standby's /admin/replica: %v", standbyShown)
	}

	// The standby refuses the API, naming the primary.
	resp, err := http.Post(b.url+"/v1/campaigns/demo/skus/sku-1/reservations", "application/json", strings.NewReader(`{"user_id":"u1"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var np struct{ Error, Primary, Address string }
	json.Unmarshal(body, &np)
	if resp.StatusCode != http.StatusMisdirectedRequest || np.Error != "NOT_PRIMARY" || np.Primary != "a" || np.Address != a.url ||
		resp.Header.Get("Location") != a.url+"/v1/campaigns/demo/skus/sku-1/reservations" {
		t.Fatalf("the standby's answer: %d %s %v", resp.StatusCode, body, resp.Header)
	}
	// The primary serves the API (the demo campaign is defined while it
	// serves).
	for deadline := time.Now().Add(time.Minute); getJSON(t, a.url+"/v1/campaigns/demo/skus/sku-1", "", nil) != http.StatusOK; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the primary never served the demo SKU's status")
		}
	}

	// a's lease ends: a demotes at once, b leads epoch 2, a follows b.
	a.node.coord.(*replica.Etcd).Close()
	h = waitRole(t, b, "primary")
	if h.Epoch != 2 {
		t.Fatalf("b promoted: %+v", h)
	}
	c.mu.Lock()
	began := c.epochs[filepath.Join(dir, "b")]
	c.mu.Unlock()
	if began != 2 {
		t.Fatalf("b's data dir began epoch %d", began)
	}
	for deadline := time.Now().Add(time.Minute); ; {
		var ha healthState
		if getJSON(t, a.url+"/healthz", "", &ha) == http.StatusOK && ha.Role == "standby" && ha.Primary == "b" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a never followed b: %+v", ha)
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err = http.Get(a.url + "/v1/campaigns/demo/skus/sku-1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(string(body), `"primary":"b"`) {
		t.Fatalf("the demoted primary's answer: %d %s", resp.StatusCode, body)
	}
	// /metrics of the standby says its role.
	resp, err = http.Get(a.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `seckill_replica_role{replica="a",replica_set="rs1",role="standby"} 1`) {
		t.Fatalf("a's /metrics:\n%s", body)
	}
}

// A cell of two replicas: each promotion bumps the cell's ledger epoch
// itself, before any ledger operation of the new primary's agents (the
// cell has no SKU, so its agents make none), so a top-up under the former
// primary's epoch is fenced at once.
func TestCellReplicaTakesTheLedgerEpochAtPromotion(t *testing.T) {
	srv, l := startLedger(t)
	ctx := context.Background()
	waitEpoch := func(want uint64) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			e, err := l.Epoch(ctx, "c1")
			if err == nil && e == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the cell's ledger epoch is %d (%v), want %d", e, err, want)
			}
		}
	}
	c := newCopyNet()
	dir := t.TempDir()
	cell := []string{"--cell", "c1", "--etcd", srv.Endpoint}
	a := startTestReplicaOf(t, c, l, "c1", "a", filepath.Join(dir, "a"), cell...)
	waitRole(t, a, "primary")
	waitEpoch(1)
	b := startTestReplicaOf(t, c, l, "c1", "b", filepath.Join(dir, "b"), cell...)
	waitRole(t, b, "standby")
	waitPublished(t, a, "b")
	if e, _ := l.Epoch(ctx, "c1"); e != 1 {
		t.Fatalf("a standby moved the cell's ledger epoch to %d", e)
	}

	// a's lease ends: b's promotion takes epoch 2, and a top-up under
	// a's epoch 1 is fenced.
	a.node.coord.(*replica.Etcd).Close()
	waitRole(t, b, "primary")
	waitEpoch(2)
	s := ledger.SKU{Campaign: "c", SKU: "s"}
	if _, err := l.Publish(ctx, s, 100, 10, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Allocate(ctx, s, "c1", 1, 1, 10); !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("a top-up under the former primary's epoch: %v", err)
	}
	if _, err := l.Allocate(ctx, s, "c1", 1, 2, 10); err != nil {
		t.Fatalf("a top-up under the new primary's epoch: %v", err)
	}
}
