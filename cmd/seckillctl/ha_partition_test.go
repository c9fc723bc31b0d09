package main

import (
	"encoding/json"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
	"github.com/seckill/seckill/internal/etcdtest"
)

// haStatusJSON is `seckillctl ha status --json` of rs1.
func haStatusJSON(t *testing.T, etcd string) haStatus {
	t.Helper()
	var st haStatus
	out := wantCode(t, 0, "ha", "status", "--etcd", etcd, "--replica-set", "rs1", "--admin-token", haToken, "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("ha status --json: %v\n%s", err, out)
	}
	return st
}

// TestReplicaSetPartitionBetweenPrimaryAndStandby cuts the link between
// the standby and the primary's replication address (the primary
// advertises a proxy in front of it, --advertise-replication-addr, and
// the test blackholes the proxy) under load. Without --sync-strict the
// primary drops the standby from the sync set in etcd and sells on; the
// standby, no longer named in the sync key, cannot be promoted: with the
// primary killed meanwhile it does not take the free key, and the old
// primary, restarted, leads again. Once the link heals the standby
// catches up and is published again; every reservation acknowledged is
// on the primary, and both data dirs verify clean.
func TestReplicaSetPartitionBetweenPrimaryAndStandby(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t)
	bin := seckilldtest.Build(t, raceEnabled)
	proxy, err := etcdtest.NewProxy("") // to a's replication address once it binds one
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	dir := t.TempDir()
	p := &replicaPair{aDir: dir + "/a", bDir: dir + "/b"}
	startA := func() *seckilldtest.Daemon {
		d := startReplica(t, bin, p.aDir, etcd.Endpoint, "a", "--replication-addr", "127.0.0.1:0", "--advertise-replication-addr", proxy.Addr)
		proxy.Retarget(d.Replication)
		return d
	}
	p.a = startA()
	p.first = waitHealth(t, p.a, "a leads", func(h replicaHealth) bool { return h.Role == "primary" })
	p.b = startReplica(t, bin, p.bDir, etcd.Endpoint, "b")
	waitHealth(t, p.b, "b follows a", func(h replicaHealth) bool { return h.Role == "standby" && h.Primary == "a" })
	waitSync(t, p.a.Base, "b")

	sale := startLoad(t, p.a.Base, "partition")
	proxy.Cut()
	waitSync(t, p.a.Base) // b dropped, in etcd first
	if st := haStatusJSON(t, etcd.Endpoint); st.Leader != "a" || len(st.Sync) != 0 {
		t.Fatalf("the sync key after the partition: leader %q, sync %v", st.Leader, st.Sync)
	}
	// a sells on without b.
	waitLoad(t, &sale.progress, sale.progress.accepted.Load()+50)

	// b may not be promoted: a killed, its key expires, and b (not in
	// the sync key) leaves it free. Checked over three lease TTLs after
	// the key is gone: b reads the set every half second.
	if err := p.a.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.a.Exited
	acked := sale.end()
	for deadline := time.Now().Add(2 * time.Minute); haStatusJSON(t, etcd.Endpoint).Leader != ""; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a's leader key never expired")
		}
	}
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if h, _ := health(p.b.Base); h.Role == "primary" {
			t.Fatalf("b, dropped from the sync set, was promoted: %+v", h)
		}
	}
	// a, restarted, leads again (the sync key names it) with everything
	// it acknowledged.
	p.a = startA()
	h := waitHealth(t, p.a, "a leads again", func(h replicaHealth) bool { return h.Role == "primary" })
	if h.Epoch <= p.first.Epoch {
		t.Fatalf("a leads epoch %d after %d", h.Epoch, p.first.Epoch)
	}
	checkAcks(t, p.a.Base, acked)

	// Healed: b catches up and is published again.
	proxy.Heal()
	waitHealth(t, p.b, "b follows a again", func(h replicaHealth) bool { return h.Role == "standby" && h.Primary == "a" })
	waitSync(t, p.a.Base, "b")
	if st := haStatusJSON(t, etcd.Endpoint); !slices.Equal(st.Sync, []string{"b"}) {
		t.Fatalf("the sync key after healing: %v", st.Sync)
	}
	checkAcks(t, p.a.Base, acked)
	p.stopAndVerify(t, len(acked))
	t.Logf("%d acknowledged reservations, all on the primary after a partition from its standby", len(acked))
}
