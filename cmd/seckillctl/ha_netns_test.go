package main

import (
	"bufio"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
	"github.com/seckill/seckill/internal/etcdtest"
	"github.com/seckill/seckill/internal/netnstest"
)

// TestReplicaSetPrimaryPartitionedInANetns cuts the primary off the
// network for real while it runs and keeps its clients: the primary a
// runs in a network namespace of its own (a veth link to the host's),
// etcd and the standby b on the host, a client on each side. Under load
// from both clients the link is set down: a can reach neither etcd nor
// b, yet its own client still reaches it. a must stop acknowledging
// once it cannot be sure it leads: every 202 any client got, from either
// side, is on b after the failover. b takes over after the lease and
// sells on; once the link is back a rejoins as b's standby (its tail b
// does not hold cut), is published in the sync set again and serves
// every acknowledged reservation; the audit's invariant holds on b and
// both data dirs verify clean (no token sold twice). Alone and with
// --sync-strict: strict, b commits nothing between its takeover and a's
// rejoin (no standby), and its reserves of that time commit then.
func TestReplicaSetPrimaryPartitionedInANetns(t *testing.T) {
	t.Parallel()
	bin := seckilldtest.Build(t, raceEnabled)
	forSyncModes(t, func(t *testing.T, strict bool, extra []string) {
		began := time.Now()
		ns := netnstest.New(t)
		etcd := etcdtest.Start(t)
		// a reaches etcd through a forwarder on the host's end of the link:
		// etcd listens on the host's loopback, which a's namespace has not.
		fwd, err := etcdtest.NewProxyAt(net.JoinHostPort(ns.HostIP, "0"), etcd.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(fwd.Close)
		// Each reserve is answered within about 5 s (504 RESULT_UNKNOWN at
		// worst); a host's request to a that the cut left without an answer
		// fails at its client's timeout, which ends that client's worker.
		host := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
		toB := &http.Client{Timeout: time.Minute, Transport: &http.Transport{}}
		inside := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DialContext: ns.DialContext}}
		for _, c := range []*http.Client{host, toB, inside} {
			t.Cleanup(c.CloseIdleConnections)
		}

		dir := t.TempDir()
		p := &replicaPair{aDir: dir + "/a", bDir: dir + "/b"}
		p.a = seckilldtest.StartReplicaWith(t, ns.Command, bin, p.aDir, []string{"SECKILL_ADMIN_TOKEN=" + haToken},
			append([]string{"--replica", "a", "--replica-set", "rs1", "--etcd", fwd.Addr, "--lease-ttl", "2s",
				"--addr", net.JoinHostPort(ns.InnerIP, "0"), "--replication-addr", net.JoinHostPort(ns.InnerIP, "0")}, extra...)...)
		p.first = waitHealth(t, p.a, "a leads", func(h replicaHealth) bool { return h.Role == "primary" })
		// b's replication address is on the host's end of the link: a, on
		// its rejoin, dials it from its namespace.
		p.b = startReplica(t, bin, p.bDir, etcd.Endpoint, "b", append([]string{"--replication-addr", net.JoinHostPort(ns.HostIP, "0")}, extra...)...)
		waitHealth(t, p.b, "b follows a", func(h replicaHealth) bool { return h.Role == "standby" && h.Primary == "a" })
		waitSync(t, p.a.Base, "b")
		waitServed(t, p.a.Base) // the demo SKU defined: reserves are not 404
		a, b := p.a, p.b

		fromHost := startLoadVia(host, a.Base, "host")
		fromInside := startLoadVia(inside, a.Base, "inside")
		waitLoad(t, &fromHost.progress, 100)
		waitLoad(t, &fromInside.progress, 100)

		ns.Cut(t)
		cut := time.Now()
		insideAtCut := fromInside.progress.accepted.Load()
		// a's own client still reaches it: a must stop acknowledging (421
		// NOT_PRIMARY) once its lease may have ended, whoever still asks.
		var demoted, promoted time.Duration
		var h replicaHealth
		for deadline := time.Now().Add(2 * time.Minute); demoted == 0 || promoted == 0; time.Sleep(20 * time.Millisecond) {
			if ha, ok := healthVia(inside, a.Base); demoted == 0 && ok && ha.Role != "primary" {
				demoted = time.Since(cut)
			}
			if hb, ok := health(b.Base); promoted == 0 && ok && hb.Role == "primary" {
				promoted, h = time.Since(cut), hb
			}
			if time.Now().After(deadline) {
				t.Fatalf("2 minutes after the cut: a demoted after %s, b promoted after %s (0: not yet)", demoted, promoted)
			}
		}
		if h.Epoch <= p.first.Epoch {
			t.Fatalf("b leads epoch %d after a's %d", h.Epoch, p.first.Epoch)
		}
		acked := append(fromHost.end(), fromInside.end()...)
		insideAfterCut := fromInside.progress.accepted.Load() - insideAtCut
		// Demoted, a answers its own side 421 NOT_PRIMARY: it applies nothing.
		if code, body, err := sendJSONVia(inside, http.MethodPost, a.Base+"/v1/campaigns/demo/skus/sku-1/reservations", "",
			map[string]string{"request_id": "to-a-demoted", "user_id": "u-to-a-demoted"}); err != nil || code != http.StatusMisdirectedRequest || body["error"] != "NOT_PRIMARY" {
			t.Fatalf("a reserve on the demoted a, from its own side: %d %v %v", code, body, err)
		}

		// b sells on while a is still cut off (strict: it acknowledges
		// nothing before a standby joins, so its reserves wait): its records
		// take the indexes of whatever a wrote after the cut, the tail a
		// must cut when it rejoins.
		onB := startLoadVia(toB, b.Base, "b")
		if !strict {
			waitLoad(t, &onB.progress, 50)
			checkAcks(t, b.Base, acked)
		}

		ns.Heal(t)
		waitHealth(t, a, "a rejoins as b's standby", func(h replicaHealth) bool { return h.Role == "standby" && h.Primary == "b" })
		waitSync(t, b.Base, "a")
		waitLoad(t, &onB.progress, onB.progress.accepted.Load()+50)
		acked = append(acked, onB.end()...)
		checkAcks(t, b.Base, acked)
		checkAudit(t, b.Base)
		checkStandbyReads(t, a.Base, acked)
		st := haStatusJSON(t, etcd.Endpoint)
		if st.Leader != "b" || st.Epoch != h.Epoch || !slices.Equal(st.Sync, []string{"a"}) || len(st.Replicas) != 2 ||
			st.Replicas[0].Name != "a" || st.Replicas[0].Role != "standby" || !st.Replicas[0].InSync ||
			st.Replicas[1].Name != "b" || st.Replicas[1].Role != "primary" {
			t.Fatalf("ha status once the link healed: %+v", st)
		}
		cutRecords := metricValue(t, a.Base, "seckill_replica_cut_records_total")
		p.stopAndVerify(t, len(acked))
		t.Logf("strict %v: a demoted %s after the cut, b primary %s after it; a acknowledged %d reserves to its own side's client after the cut, all on b, and answered %d 504 RESULT_UNKNOWN; a cut %.0f records at its rejoin; %d acknowledged reservations in all; %s from start to end",
			strict, demoted.Round(time.Millisecond), promoted.Round(time.Millisecond), insideAfterCut, fromInside.progress.unknown.Load(), cutRecords, len(acked), time.Since(began).Round(time.Second))
	})
}

// waitServed waits until primary base serves the demo SKU (it defines
// the demo campaign in the background once it leads).
func waitServed(t *testing.T, base string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(base + "/v1/campaigns/demo/skus/sku-1")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the primary never served the demo SKU: %v", err)
		}
	}
}

// checkAudit asks primary base for the demo SKU's audit and fails unless
// its invariants hold: sale_limit = available + reserved + confirmed,
// and every other the recount checks.
func checkAudit(t *testing.T, base string) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		code, v, err := sendJSON(http.MethodGet, base+"/admin/campaigns/demo/skus/sku-1/audit", haToken, nil)
		if err == nil && code == http.StatusOK {
			limit, _ := v["sale_limit"].(float64)
			available, _ := v["available"].(float64)
			reserved, _ := v["reserved"].(float64)
			confirmed, _ := v["confirmed"].(float64)
			if v["invariant_ok"] != true || limit == 0 || limit != available+reserved+confirmed {
				t.Fatalf("the audit on %s: %v", base, v)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the audit on %s never answered: %d %v %v", base, code, v, err)
		}
	}
}

// metricValue reads an unlabelled metric from base's /metrics (0 when it
// is not there).
func metricValue(t *testing.T, base, name string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if rest, ok := strings.CutPrefix(lines.Text(), name+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return v
		}
	}
	return 0
}
