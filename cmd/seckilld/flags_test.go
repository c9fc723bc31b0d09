package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/wal"
)

func TestOptionsFromFlagsAndEnvironment(t *testing.T) {
	t.Setenv("SECKILL_DATA_DIR", "/env/data")
	t.Setenv("SECKILL_ADMIN_TOKEN", "from-env")
	t.Setenv("SECKILL_MAX_QUEUE_WAIT", "3s")
	t.Setenv("SECKILL_ADDR", "127.0.0.1:1")
	t.Setenv("SECKILL_MAX_SKUS", "500")
	o, err := parseOptions([]string{"--addr", "127.0.0.1:9999", "--fsync", "never", "--log-level", "debug"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.addr != "127.0.0.1:9999" || o.dataDir != "/env/data" || o.adminToken != "from-env" ||
		o.maxQueueWait != 3*time.Second || o.fsync != wal.FsyncNeverBenchmarkOnly || o.logLevel != slog.LevelDebug || o.maxSKUs != 500 {
		t.Fatalf("%+v", o)
	}
}

func TestOptionsDefaultsAndErrors(t *testing.T) {
	o, err := parseOptions(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.addr != "127.0.0.1:8080" || o.dataDir != "./data" || o.campaigns != "" || o.maxQueueWait != time.Second ||
		o.fsync != wal.FsyncAlways || o.logLevel != slog.LevelInfo || o.maxSKUs != 0 {
		t.Fatalf("defaults: %+v", o)
	}
	for _, args := range [][]string{{"--fsync", "sometimes"}, {"--log-level", "loud"}, {"--max-queue-wait", "0s"}, {"--max-queue-wait", "3001ms"}, {"--max-queue-wait", "1h"}, {"--max-skus", "-1"}, {"extra"}, {"--nope"},
		// 0 is neither never (negative) nor a count the engine would keep:
		// it read it as its default.
		{"--snapshot-every", "0"}, {"--snapshot-interval", "0s"}} {
		if _, err := parseOptions(args, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// --max-queue-wait is a bound on a buyer's wait, at most 3 s: above it
// seckilld refuses to start (exit 2), naming the flag and its range.
func TestMaxQueueWaitBounds(t *testing.T) {
	for _, ok := range []string{"1ms", "300ms", "3s"} {
		if o, err := parseOptions([]string{"--max-queue-wait", ok}, io.Discard); err != nil || o.maxQueueWait.String() != ok {
			t.Errorf("--max-queue-wait %s: %v, %v", ok, o.maxQueueWait, err)
		}
	}
	for bad, echo := range map[string]string{"0s": "0s", "999us": "999µs", "3001ms": "3.001s", "10s": "10s", "1h": "1h0m0s"} {
		_, err := parseOptions([]string{"--max-queue-wait", bad}, io.Discard)
		if want := "--max-queue-wait must be 1ms..3s, not " + echo; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("--max-queue-wait %s: %v, want %q...", bad, err, want)
		}
	}
	var stderr strings.Builder
	if code := run([]string{"--max-queue-wait", "5s"}, io.Discard, &stderr); code != 2 || strings.Count(stderr.String(), "\n") != 1 ||
		!strings.Contains(stderr.String(), "--max-queue-wait must be 1ms..3s, not 5s") {
		t.Errorf("seckilld --max-queue-wait 5s: exit %d, stderr %q; want 2 and one line naming the flag", code, stderr.String())
	}
}

// The feed retention and heartbeat flags are bounded; the heartbeat is
// 15 s by default.
func TestFeedRetentionFlags(t *testing.T) {
	o, err := parseOptions([]string{"--feed-retain-records", "5000", "--feed-retain-age", "2h", "--feed-heartbeat", "5s"}, io.Discard)
	if err != nil || o.feedRetainRecords != 5000 || o.feedRetainAge != 2*time.Hour || o.feedHeartbeat != 5*time.Second {
		t.Fatalf("%+v, %v", o, err)
	}
	if o, err := parseOptions(nil, io.Discard); err != nil || o.feedHeartbeat != 15*time.Second {
		t.Fatalf("default heartbeat %s, %v", o.feedHeartbeat, err)
	}
	for _, args := range [][]string{{"--feed-retain-records", "100000001"}, {"--feed-retain-age", "169h"}, {"--feed-retain-age", "-1s"},
		{"--feed-heartbeat", "0s"}, {"--feed-heartbeat", "11m"}} {
		if _, err := parseOptions(args, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// The lottery draw flags: defaults, bounds, and from the environment.
func TestLotteryDrawFlags(t *testing.T) {
	o, err := parseOptions(nil, io.Discard)
	if err != nil || o.lotteryDrawBatch != sku.DrawBatch || o.lotteryDrawPause != 0 {
		t.Fatalf("defaults: batch %d, pause %v, %v", o.lotteryDrawBatch, o.lotteryDrawPause, err)
	}
	t.Setenv("SECKILL_LOTTERY_DRAW_PAUSE", "3ms")
	o, err = parseOptions([]string{"--lottery-draw-batch", "1"}, io.Discard)
	if err != nil || o.lotteryDrawBatch != 1 || o.lotteryDrawPause != 3*time.Millisecond {
		t.Fatalf("batch %d, pause %v, %v", o.lotteryDrawBatch, o.lotteryDrawPause, err)
	}
	for _, args := range [][]string{{"--lottery-draw-batch", "0"}, {"--lottery-draw-batch", "8193"}, {"--lottery-draw-pause", "-1ms"}, {"--lottery-draw-pause", "61s"}} {
		if _, err := parseOptions(args, io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// The --entry-pass-* flags, from the environment too; errors never quote a
// secret.
func TestEntryPassOptions(t *testing.T) {
	key := strings.Repeat("ab", 32)
	t.Setenv("SECKILL_ENTRY_PASS_KEYS", "2:"+key+",1:"+strings.Repeat("cd", 32))
	t.Setenv("SECKILL_ENTRY_PASS_SUBJECT_SECRET", strings.Repeat("ef", 32))
	o, err := parseOptions([]string{"--entry-pass-issuer-token", "issuer"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c := o.entryPasses
	if c.Keys == nil || c.Keys.Signer().ID() != 2 || c.Subjects == nil || c.IssuerToken != "issuer" {
		t.Fatalf("%v", c.Keys)
	}
	if s := fmt.Sprintf("%+v %v", o, c.Subjects); strings.Contains(s, key) || strings.Contains(s, "efef") {
		t.Fatalf("options print a secret: %s", s)
	}
	t.Setenv("SECKILL_ENTRY_PASS_KEYS", "")
	t.Setenv("SECKILL_ENTRY_PASS_SUBJECT_SECRET", "")
	for _, args := range [][]string{
		{"--entry-pass-keys", "1:" + key[:40] + "zz"},
		{"--entry-pass-keys", "1:abcd"},
		{"--entry-pass-subject-secret", "xyz"},
		{"--entry-pass-subject-secret", "abcd"},
		{"--entry-pass-issuer-token", "t"},
		{"--entry-pass-issuer-token", "t", "--entry-pass-keys", "1:" + key},
	} {
		_, err := parseOptions(args, io.Discard)
		if err == nil {
			t.Errorf("%v accepted", args)
		} else if strings.Contains(err.Error(), key[:40]) {
			t.Errorf("%v: the error quotes the secret: %v", args, err)
		}
	}
}

// An address flag that no listen or dial could use is a usage error
// (exit 2, naming the flag) found before anything is bound or written,
// not a listen failing after the start (exit 1), nor, for an advertised
// address, one published in etcd that no standby or router can dial.
func TestAddressFlagsAreUsageErrors(t *testing.T) {
	replica := []string{"--replica", "a", "--replica-set", "rs1", "--etcd", "127.0.0.1:2379", "--replication-addr", "127.0.0.1:0"}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--addr", "nonsense"}, `--addr "nonsense" is not host:port (missing port in address)`},
		{[]string{"--addr", "127.0.0.1:99999"}, `--addr "127.0.0.1:99999": the port must be a number 0..65535`},
		{append(replica, "--replication-addr", "127.0.0.1:99999"), `--replication-addr "127.0.0.1:99999": the port must be a number 0..65535`},
		{append(replica, "--advertise-addr", "10.0.0.1:99999"), `--advertise-addr "10.0.0.1:99999": the port must be a number 1..65535`},
		{append(replica, "--advertise-replication-addr", "10.0.0.1:0"), `--advertise-replication-addr "10.0.0.1:0": the port must be a number 1..65535`},
		{append(replica, "--advertise-addr", ":8080"), `--advertise-addr ":8080": the address others dial needs a host`},
	} {
		if _, err := parseOptions(c.args, io.Discard); err == nil || err.Error() != c.says {
			t.Errorf("%v: %v, want %q", c.args, err, c.says)
		}
	}
	for _, ok := range []string{"127.0.0.1:0", ":8080", "localhost:8080", "[::1]:8080"} {
		if _, err := parseOptions([]string{"--addr", ok}, io.Discard); err != nil {
			t.Errorf("--addr %s: %v", ok, err)
		}
	}
}

// The advertise addresses are what a replica publishes in etcd; without
// them, the bound listen addresses.
func TestAdvertiseAddresses(t *testing.T) {
	base := []string{"--replica", "a", "--replica-set", "rs1", "--etcd", "127.0.0.1:2379", "--replication-addr", "127.0.0.1:0"}
	o, err := parseOptions(append(base, "--advertise-replication-addr", "10.0.0.1:7070", "--advertise-addr", "seckill-a.example:8080"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	bound := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	if m := advertised(o.replica, bound, bound); m.HTTP != "http://seckill-a.example:8080" || m.Replication != "10.0.0.1:7070" {
		t.Fatalf("advertised: %+v", m)
	}
	o, err = parseOptions(base, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if m := advertised(o.replica, bound, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2}); m.HTTP != "http://127.0.0.1:1" || m.Replication != "127.0.0.1:2" {
		t.Fatalf("advertised by default: %+v", m)
	}
	for _, args := range [][]string{
		append(base, "--advertise-replication-addr", "10.0.0.1"),
		append(base, "--advertise-replication-addr", "10.0.0.1:0"),
		append(base, "--advertise-addr", ":8080"),
		{"--advertise-addr", "10.0.0.1:8080"}, // without --replica
		{"--lease-ttl", "5s"},                 // without --replica: it would be ignored
		{"--standby-timeout", "5s"},
	} {
		if _, err := parseOptions(args, io.Discard); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}
