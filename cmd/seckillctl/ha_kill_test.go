package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/internal/proctest"
	"github.com/seckill/seckill/internal/testbin"
)

const haToken = "ha-token"

// startReplica runs replica name of replica set rs1 on dir, on free
// loopback ports, with the demo campaign.
func startReplica(t testing.TB, bin, dir, etcd, name string, extra ...string) *seckilldtest.Daemon {
	t.Helper()
	return seckilldtest.StartReplica(t, bin, dir, []string{"SECKILL_ADMIN_TOKEN=" + haToken},
		append([]string{"--replica", name, "--replica-set", "rs1", "--replication-addr", "127.0.0.1:0", "--etcd", etcd, "--lease-ttl", "2s"}, extra...)...)
}

// replicaHealth is a replica's /healthz.
type replicaHealth struct {
	Role    string `json:"role"`
	Epoch   uint64 `json:"epoch"`
	Primary string `json:"primary"`
}

func health(base string) (replicaHealth, bool) { return healthVia(http.DefaultClient, base) }

// healthVia is health asked through client c.
func healthVia(c *http.Client, base string) (replicaHealth, bool) {
	var h replicaHealth
	resp, err := c.Get(base + "/healthz")
	if err != nil {
		return h, false
	}
	defer resp.Body.Close()
	return h, resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&h) == nil
}

// waitHealth waits (up to 2 minutes: a bound for a replica that never
// gets there, however loaded the machine) until d's /healthz satisfies
// ok; then it stops d with SIGQUIT and fails with d's goroutines.
func waitHealth(t testing.TB, d *seckilldtest.Daemon, what string, ok func(replicaHealth) bool) replicaHealth {
	t.Helper()
	return waitHealthVia(t, http.DefaultClient, d, what, ok)
}

// waitHealthVia is waitHealth asking through client c.
func waitHealthVia(t testing.TB, c *http.Client, d *seckilldtest.Daemon, what string, ok func(replicaHealth) bool) replicaHealth {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if h, answered := healthVia(c, d.Base); answered && ok(h) {
			return h
		}
		if time.Now().After(deadline) {
			h, _ := healthVia(c, d.Base)
			d.Cmd.Process.Signal(syscall.SIGQUIT) // its goroutines, in its stderr
			<-d.Exited
			t.Fatalf("%s never happened: /healthz %+v; the replica's stderr:\n%s", what, h, d.Stderr())
		}
	}
}

// terminate stops d with SIGTERM and waits for exit 0; a replica still
// running after 2 minutes is sent SIGQUIT, so its goroutines are in the
// stderr the test prints.
func terminate(t testing.TB, d *seckilldtest.Daemon) {
	t.Helper()
	if err := d.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.Exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, d.Stderr())
		}
	case <-time.After(2 * time.Minute):
		d.Cmd.Process.Signal(syscall.SIGQUIT)
		<-d.Exited
		t.Fatalf("%s still ran 2 minutes after SIGTERM:\n%s", d.Base, d.Stderr())
	}
}

// replicaStatus is a replica's /admin/replica, as far as the test reads it.
type replicaStatus struct {
	Role string   `json:"role"`
	Sync []string `json:"sync"`
	raw  []byte   // the whole answer, for a failure's message
}

func adminReplica(t testing.TB, base string) replicaStatus {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/admin/replica", nil)
	req.Header.Set("Authorization", "Bearer "+haToken)
	var st replicaStatus
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &st)
	st.raw = b
	return st
}

// waitSync waits until base, primary, has published sync.
func waitSync(t testing.TB, base string, sync ...string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		st := adminReplica(t, base)
		if st.Role == "primary" && slices.Equal(st.Sync, sync) {
			return
		}
		if time.Now().After(deadline) {
			// The whole status (each standby connected, caught up, its lag)
			// says which condition of publishing never held.
			t.Fatalf("%s never published the sync set %v: role %q, sync %v\n%s", base, sync, st.Role, st.Sync, st.raw)
		}
	}
}

// replicaPair is a replica set of two started for a test: a leads epoch
// first.Epoch and has published b, its standby, in the sync set.
type replicaPair struct {
	aDir, bDir string
	a, b       *seckilldtest.Daemon
	first      replicaHealth
}

// startPair starts replicas a (on etcd aEtcd) and b (on bEtcd) of rs1 in
// fresh data dirs, with extra flags, and returns once a leads, waits for
// b and serves the demo SKU: from then on a acknowledges nothing b lacks.
func startPair(t *testing.T, bin, aEtcd, bEtcd string, extra ...string) *replicaPair {
	t.Helper()
	dir := t.TempDir()
	return startPairIn(t, bin, filepath.Join(dir, "a"), filepath.Join(dir, "b"), aEtcd, bEtcd, extra...)
}

// startPairIn is startPair on the data dirs aDir and bDir. The standby
// stays in the sync set while its acknowledgements lag up to a minute
// (the race build on a loaded machine): the tests of a failover need it
// promotable when the primary goes. A test of its drop passes a shorter
// --standby-timeout in extra, which comes later and wins.
func startPairIn(t *testing.T, bin, aDir, bDir, aEtcd, bEtcd string, extra ...string) *replicaPair {
	t.Helper()
	extra = append([]string{"--standby-timeout", "1m"}, extra...)
	p := &replicaPair{aDir: aDir, bDir: bDir}
	p.a = startReplica(t, bin, p.aDir, aEtcd, "a", extra...)
	p.first = waitHealth(t, p.a, "a leads", func(h replicaHealth) bool { return h.Role == "primary" })
	p.b = startReplica(t, bin, p.bDir, bEtcd, "b", extra...)
	waitHealth(t, p.b, "b follows a", func(h replicaHealth) bool { return h.Role == "standby" && h.Primary == "a" })
	waitSync(t, p.a.Base, "b")
	// The primary defines the demo campaign once it serves, in the
	// background: a test that kills b next must find the SKU defined, or
	// its reserve is 404 (or, strict, a define waiting for b).
	waitServed(t, p.a.Base)
	return p
}

// stopAndVerify stops both replicas (SIGTERM) and verifies both data
// dirs: clean, with at least acked reservations each.
func (p *replicaPair) stopAndVerify(t *testing.T, acked int) {
	t.Helper()
	for _, d := range []*seckilldtest.Daemon{p.a, p.b} {
		terminate(t, d)
	}
	for _, d := range []string{p.aDir, p.bDir} {
		rep := verifySKUReport(t, wantCode(t, 0, "verify", filepath.Join(d, "demo", "sku-1")))
		if int(rep.Counts.Reservations) < acked {
			t.Fatalf("%s: %d reservations for %d acknowledged", d, rep.Counts.Reservations, acked)
		}
	}
}

// saleLoad is load (8 workers reserving, and cancelling one in two) on a
// base URL, for the tests of faults under load.
type saleLoad struct {
	progress loadProgress
	stop     chan struct{}
	acks     chan []ack
}

// startLoad starts the load on base and returns once it has 200
// reservations accepted.
func startLoad(t *testing.T, base, prefix string) *saleLoad {
	t.Helper()
	l := startLoadVia(http.DefaultClient, base, prefix)
	waitLoad(t, &l.progress, 200)
	return l
}

// startLoadVia starts the load on base through client c, and returns at
// once.
func startLoadVia(c *http.Client, base, prefix string) *saleLoad {
	l := &saleLoad{stop: make(chan struct{}), acks: make(chan []ack)}
	go func() { l.acks <- loadVia(c, base, prefix, l.stop, &l.progress) }()
	return l
}

// end stops the load and returns the reservations it saw accepted.
func (l *saleLoad) end() []ack {
	close(l.stop)
	return <-l.acks
}

// TestReplicaSetSurvivesKillOfThePrimary runs a replica set of two real
// seckillds on a real etcd: a sale under load on the primary, kill -9 of
// the primary, the standby of the sync set takes over (its /healthz says
// primary, a higher epoch), every reservation the clients saw accepted
// before the kill is on the new primary as they saw it (cancels too); the
// killed replica restarted rejoins as a standby (its unacknowledged tail
// cut) and is published again; both data dirs verify clean (no token
// sold twice, every snapshot matching its log).
func TestReplicaSetSurvivesKillOfThePrimary(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t)
	bin := seckilldtest.Build(t, raceEnabled)
	p := startPair(t, bin, etcd.Endpoint, etcd.Endpoint)
	a, b, first := p.a, p.b, p.first
	sale := startLoad(t, a.Base, "ha")
	if err := a.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-a.Exited; !isKilled(err) {
		t.Fatalf("exit after SIGKILL: %v", err)
	}
	acked := sale.end()
	if len(acked) == 0 {
		t.Fatal("no reservation was acknowledged before the kill")
	}

	h := waitHealth(t, b, "b takes over", func(h replicaHealth) bool { return h.Role == "primary" })
	if h.Epoch <= first.Epoch {
		t.Fatalf("b leads epoch %d after a's %d", h.Epoch, first.Epoch)
	}
	// No leased key names the killed a any more (its member key went with
	// its lease, and the new primary's sync set is empty); ha status still
	// lists it, down, with its last role and epoch and when it was seen.
	killedBase := a.Base
	down := haStatusJSON(t, etcd.Endpoint)
	if len(down.Replicas) != 2 || down.Replicas[0].Name != "a" || down.Replicas[0].Role != "down" ||
		down.Replicas[0].LastRole != "primary" || down.Replicas[0].LastEpoch != first.Epoch || down.Replicas[0].LastSeen == nil ||
		down.Replicas[0].HTTP != killedBase || down.Replicas[1].Name != "b" || down.Replicas[1].Role != "primary" {
		t.Fatalf("ha status after the kill of a: %+v", down.Replicas)
	}
	if table := wantCode(t, 0, "ha", "status", "--etcd", etcd.Endpoint, "--replica-set", "rs1", "--admin-token", haToken); !strings.Contains(table,
		fmt.Sprintf("a        down (was primary in epoch %d, last seen ", first.Epoch)) {
		t.Fatalf("ha status after the kill of a:\n%s", table)
	}
	checkAcks(t, b.Base, acked)
	// The new primary sells on.
	if code, body, err := post(b.Base+"/v1/campaigns/demo/skus/sku-1/reservations", map[string]string{"request_id": "after-1", "user_id": "after-u1"}); err != nil ||
		(code != http.StatusAccepted && !(code == http.StatusConflict && body["error"] == "SOLD_OUT")) {
		t.Fatalf("a reserve on the new primary: %d %v %v", code, body, err)
	}

	// a comes back as b's standby and catches up.
	p.a = startReplica(t, bin, p.aDir, etcd.Endpoint, "a")
	a = p.a
	waitHealth(t, a, "a rejoins as b's standby", func(h replicaHealth) bool { return h.Role == "standby" && h.Primary == "b" })
	waitSync(t, b.Base, "a")
	if code, body, _ := post(a.Base+"/v1/campaigns/demo/skus/sku-1/reservations", map[string]string{"request_id": "x", "user_id": "x"}); code != http.StatusMisdirectedRequest ||
		body["error"] != "NOT_PRIMARY" || body["primary"] != "b" || body["address"] != b.Base {
		t.Fatalf("the rejoined standby's answer to a reserve: %d %v", code, body)
	}
	// The standby serves the committed records it applied: every
	// acknowledged reservation, from itself; what it cannot prove absent
	// goes to the primary.
	checkStandbyReads(t, a.Base, acked)
	if resp, err := http.Get(a.Base + "/v1/campaigns/demo/skus/sku-1/requests/never-sent"); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("the standby's answer to a lookup of a request it has no record of: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// ha status: b leads, a is its published standby, with its lag.
	var st haStatus
	out := wantCode(t, 0, "ha", "status", "--etcd", etcd.Endpoint, "--replica-set", "rs1", "--admin-token", haToken, "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("ha status --json: %v\n%s", err, out)
	}
	if st.Leader != "b" || st.Epoch != h.Epoch || !slices.Equal(st.Sync, []string{"a"}) || len(st.Replicas) != 2 ||
		st.Replicas[0].Name != "a" || st.Replicas[0].Role != "standby" || !st.Replicas[0].InSync || st.Replicas[0].LagRecords == nil ||
		st.Replicas[0].LastSeen != nil || st.Replicas[0].HTTP != a.Base ||
		st.Replicas[1].Name != "b" || st.Replicas[1].Role != "primary" {
		t.Fatalf("ha status:\n%s", out) // a is live again: not down, at its new address
	}
	// A live replica is not forgotten.
	if out := wantCode(t, 1, "ha", "forget", "--etcd", etcd.Endpoint, "--replica-set", "rs1", "--replica", "a"); out != "" {
		t.Fatalf("ha forget of a live replica printed %q", out)
	}
	if table := wantCode(t, 0, "ha", "status", "--etcd", etcd.Endpoint, "--replica-set", "rs1", "--admin-token", haToken); !strings.Contains(table, "leader b") {
		t.Fatalf("ha status:\n%s", table)
	}

	// A switchover back to a: a leads the next epoch with every
	// acknowledged reservation, b follows it.
	out = wantCode(t, 0, "ha", "switchover", "--etcd", etcd.Endpoint, "--replica-set", "rs1", "--to", "a", "--admin-token", haToken)
	var sw struct {
		To     string `json:"to"`
		Epoch  uint64 `json:"epoch"`
		TookMs int64  `json:"took_ms"`
	}
	if err := json.Unmarshal([]byte(out), &sw); err != nil || sw.To != "a" || sw.Epoch != h.Epoch+1 {
		t.Fatalf("ha switchover: %v\n%s", err, out)
	}
	waitHealth(t, b, "b follows a", func(h replicaHealth) bool { return h.Role == "standby" && h.Primary == "a" })
	checkAcks(t, a.Base, acked)
	t.Logf("switchover from b to a: %d ms from the request to a's /admin/replica saying primary", sw.TookMs)

	p.stopAndVerify(t, len(acked))
	t.Logf("%d acknowledged reservations survived the kill of the primary", len(acked))

	// Both stopped: both down. A replica that will never return is
	// forgotten, and listed no more.
	if st := haStatusJSON(t, etcd.Endpoint); len(st.Replicas) != 2 || st.Replicas[0].Role != "down" || st.Replicas[1].Role != "down" {
		t.Fatalf("ha status once both replicas stopped: %+v", st.Replicas)
	}
	wantCode(t, 0, "ha", "forget", "--etcd", etcd.Endpoint, "--replica-set", "rs1", "--replica", "a")
	if st := haStatusJSON(t, etcd.Endpoint); len(st.Replicas) != 1 || st.Replicas[0].Name != "b" || st.Replicas[0].Role != "down" {
		t.Fatalf("ha status once a was forgotten: %+v", st.Replicas)
	}
}

// TestReplicaSetSurvivesAPausedPrimary pauses the primary (SIGSTOP) under
// load for longer than its lease: the standby of the sync set takes over;
// when the old primary resumes it believes for a moment that it leads,
// yet every reservation any client saw accepted, from either replica, is
// on the new primary, because the old one can commit nothing its standby
// did not acknowledge; it demotes itself, rejoins as standby, and both
// data dirs verify clean.
func TestReplicaSetSurvivesAPausedPrimary(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t)
	bin := seckilldtest.Build(t, raceEnabled)
	p := startPair(t, bin, etcd.Endpoint, etcd.Endpoint)
	a, b, first := p.a, p.b, p.first

	sale := startLoad(t, a.Base, "pause")
	if err := proctest.Pause(a.Cmd.Process); err != nil {
		t.Fatal(err)
	}
	h := waitHealth(t, b, "b takes over from the paused a", func(h replicaHealth) bool { return h.Role == "primary" })
	if h.Epoch <= first.Epoch {
		t.Fatalf("b leads epoch %d after a's %d", h.Epoch, first.Epoch)
	}
	if err := a.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, a, "a demotes itself and follows b", func(h replicaHealth) bool { return h.Role == "standby" && h.Primary == "b" })
	acked := sale.end() // the load's requests to a: 421 from here on
	checkAcks(t, b.Base, acked)
	waitSync(t, b.Base, "a")

	p.stopAndVerify(t, len(acked))
	t.Logf("%d acknowledged reservations, all on the new primary after a pause of the old one past its lease", len(acked))
}

// TestReplicaSetSurvivesAPrimaryCutFromEtcd cuts the primary's link to
// etcd (a proxy that blackholes it) under load: its lease ends, the
// standby takes over, the old primary demotes itself (it can renew
// nothing) and, once the link heals, rejoins as standby; every
// reservation a client saw accepted is on the new primary.
func TestReplicaSetSurvivesAPrimaryCutFromEtcd(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t)
	proxy, err := etcdtest.NewProxy(etcd.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	bin := seckilldtest.Build(t, raceEnabled)
	p := startPair(t, bin, proxy.Addr, etcd.Endpoint)
	a, b := p.a, p.b

	sale := startLoad(t, a.Base, "cut")
	proxy.Cut()
	waitHealth(t, b, "b takes over", func(h replicaHealth) bool { return h.Role == "primary" })
	waitHealth(t, a, "a demotes itself", func(h replicaHealth) bool { return h.Role != "primary" })
	acked := sale.end()
	checkAcks(t, b.Base, acked)
	proxy.Heal()
	waitHealth(t, a, "a rejoins as b's standby", func(h replicaHealth) bool { return h.Role == "standby" && h.Primary == "b" })
	waitSync(t, b.Base, "a")
	t.Logf("%d acknowledged reservations, all on the new primary after the old one was cut from etcd", len(acked))
}

// TestReplicaSetLosesItsStandby kills the only standby (kill -9). Without
// --sync-strict the primary drops it from the sync set (in etcd first)
// after --standby-timeout and sells on alone. With --sync-strict it never
// drops it: a reserve is not acknowledged (504 RESULT_UNKNOWN at its
// deadline) until the standby is back and holds it.
func TestReplicaSetLosesItsStandby(t *testing.T) {
	t.Parallel()
	bin := seckilldtest.Build(t, raceEnabled)
	forSyncModes(t, func(t *testing.T, strict bool, extra []string) {
		etcd := etcdtest.Start(t)
		extra = append(extra, "--standby-timeout", "2s")
		p := startPair(t, bin, etcd.Endpoint, etcd.Endpoint, extra...)
		a, b, bDir := p.a, p.b, p.bDir
		if err := b.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-b.Exited
		reserve := map[string]string{"request_id": "after-kill", "user_id": "u-after-kill"}
		if !strict {
			waitSync(t, a.Base) // unpublished: a commits alone
			if code, body, err := post(a.Base+"/v1/campaigns/demo/skus/sku-1/reservations", reserve); err != nil || code != http.StatusAccepted {
				t.Fatalf("a reserve on a primary alone: %d %v %v", code, body, err)
			}
			return
		}
		code, body, err := post(a.Base+"/v1/campaigns/demo/skus/sku-1/reservations", reserve)
		if err != nil || code != http.StatusGatewayTimeout || body["error"] != "RESULT_UNKNOWN" {
			t.Fatalf("a reserve without a standby, strict: %d %v %v", code, body, err)
		}
		if st := adminReplica(t, a.Base); !slices.Equal(st.Sync, []string{"b"}) {
			t.Fatalf("strict: the sync set became %v", st.Sync)
		}
		// b back: the reserve commits, and its lookup answers it.
		startReplica(t, bin, bDir, etcd.Endpoint, "b", extra...)
		waitCommitted(t, a.Base, "after-kill", "the standby came back")
	})
}

// forSyncModes runs f as subtest "alone" (no extra flag) and "strict"
// (--sync-strict), side by side: f starts what it needs (etcd, data
// dirs, ports) for itself.
func forSyncModes(t *testing.T, f func(t *testing.T, strict bool, extra []string)) {
	t.Run("alone", func(t *testing.T) { t.Parallel(); f(t, false, nil) })
	t.Run("strict", func(t *testing.T) { t.Parallel(); f(t, true, []string{"--sync-strict"}) })
}

// waitCommitted waits until the lookup of requestID on base answers 200:
// the reserve committed (after what happened, for the failure message).
func waitCommitted(t *testing.T, base, requestID, after string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(base + "/v1/campaigns/demo/skus/sku-1/requests/" + requestID)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reserve %s never committed after %s", requestID, after)
		}
	}
}

// startRouterProc builds and runs seckill-router for replica set rs1 (its
// --cells address is one that refuses: every request must go to the
// primary etcd names) and returns its base URL.
func startRouterProc(t testing.TB, etcd string) string {
	t.Helper()
	bin := testbin.Build(t, "github.com/seckill/seckill/cmd/seckill-router", testbin.Race()...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--etcd", etcd, "--cells", "rs1="+refused, "--timeout", "5s")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), "seckill-router listening on "); ok {
			base, _, _ := strings.Cut(rest, " ")
			go io.Copy(io.Discard, out)
			return base
		}
	}
	t.Fatalf("seckill-router did not start: %s", stderr.String())
	return ""
}

// TestFailoverThroughTheRouter sells through seckill-router to a replica
// set of two, kills the primary (kill -9) under load, and measures the
// time from the kill to the router's next accepted reservations, served
// by the promoted standby: clients find the new primary by themselves,
// and every reservation accepted through the router before the kill is
// found through it after.
func TestFailoverThroughTheRouter(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t)
	bin := seckilldtest.Build(t, raceEnabled)
	p := startPair(t, bin, etcd.Endpoint, etcd.Endpoint)
	a, b := p.a, p.b
	router := startRouterProc(t, etcd.Endpoint)

	sale := startLoad(t, router, "router")
	if err := a.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed, before := time.Now(), sale.progress.accepted.Load()
	<-a.Exited
	// Answers in flight at the kill may still arrive: wait for more than
	// the load's workers could have had in flight.
	waitLoad(t, &sale.progress, before+20)
	took := time.Since(killed)
	acked := sale.end()
	checkAcks(t, router, acked)
	if h, _ := health(b.Base); h.Role != "primary" {
		t.Fatalf("b after the failover: %+v", h)
	}
	t.Logf("kill -9 of the primary → reservations accepted through the router again after %s; %d acknowledged reservations all found through it",
		took.Round(time.Millisecond), len(acked))
}

// TestReplicaSetWhileEtcdIsPaused pauses etcd (SIGSTOP) under load: the
// primary cannot renew its lease and demotes itself a TTL later (etcd
// decides who leads, and without it nobody may: Patroni's behaviour
// without failsafe_mode), so the set stops acknowledging; once etcd
// resumes, a replica the sync key names leads again, with every
// reservation a client saw accepted.
func TestReplicaSetWhileEtcdIsPaused(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t)
	bin := seckilldtest.Build(t, raceEnabled)
	p := startPair(t, bin, etcd.Endpoint, etcd.Endpoint)
	a, b := p.a, p.b

	sale := startLoad(t, a.Base, "etcd-paused")
	if err := etcd.Pause(); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, a, "a demotes itself without etcd", func(h replicaHealth) bool { return h.Role != "primary" })
	if err := etcd.Resume(); err != nil {
		t.Fatal(err)
	}
	acked := sale.end()
	var leader *seckilldtest.Daemon
	for deadline := time.Now().Add(2 * time.Minute); leader == nil; time.Sleep(20 * time.Millisecond) {
		for _, d := range []*seckilldtest.Daemon{a, b} {
			if h, ok := health(d.Base); ok && h.Role == "primary" {
				leader = d
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("nobody leads after etcd resumed")
		}
	}
	checkAcks(t, leader.Base, acked)
	t.Logf("%d acknowledged reservations, all on %s, the primary after etcd's pause", len(acked), leader.Base)
}

// checkStandbyReads waits until standby base answers each acknowledged
// reservation itself (200 with X-Seckill-Read-From: standby and its
// commit index), as the clients saw it (cancels too), and its request_id
// lookup likewise.
func checkStandbyReads(t *testing.T, base string, acks []ack) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for i, a := range acks {
		urls := []string{base + "/v1/reservations/" + a.reservationID}
		if i%50 == 0 { // a sample of the lookups: the same state, another route
			urls = append(urls, base+"/v1/campaigns/demo/skus/sku-1/requests/"+a.requestID)
		}
		for _, url := range urls {
			for {
				resp, err := http.Get(url)
				if err != nil {
					t.Fatal(err)
				}
				var v map[string]any
				json.NewDecoder(resp.Body).Decode(&v)
				resp.Body.Close()
				if r, ok := v["reservation"].(map[string]any); ok {
					v = r // a lookup's answer names the reservation
				}
				if resp.StatusCode == http.StatusOK && resp.Header.Get("X-Seckill-Read-From") == "standby" && resp.Header.Get("X-Seckill-Commit-Index") != "" &&
					v["request_id"] == a.requestID && v["token_id"] == a.token && (!a.cancelled || v["state"] == "CLOSED") {
					break
				}
				if resp.StatusCode != http.StatusMisdirectedRequest && resp.StatusCode != http.StatusOK {
					t.Fatalf("standby read %s: %d %v", url, resp.StatusCode, v)
				}
				if time.Now().After(deadline) {
					t.Fatalf("the standby never served acknowledged %s (cancelled %v): %d %v %v", url, a.cancelled, resp.StatusCode, resp.Header, v)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
}
