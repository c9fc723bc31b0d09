package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/lockedbuf"
	"github.com/seckill/seckill/internal/natstest"
	"github.com/seckill/seckill/internal/testbin"
	"github.com/seckill/seckill/orders/orderstest"
)

// --help prints every flag on stdout, --version the build's version line;
// a bad command line is a usage error.
func TestHelpAndUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"-database", "-campaign", "-feed", "-etcd", "-etcd-prefix", "-admin-token", "-nats", "-stream", "-batch", "-wait", "-metrics-addr"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("--help lacks %s:\n%s", flag, out.String())
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"--version"}, &out, &errb); err != nil || !strings.HasPrefix(out.String(), "seckill-orders ") || !strings.Contains(out.String(), "go1.") {
		t.Fatalf("--version: %v, %q", err, out.String())
	}
	out.Reset()
	out.Reset()
	if err := run(context.Background(), []string{"redeliver", "--help"}, &out, &errb); err != nil {
		t.Fatalf("redeliver --help: %v", err)
	}
	for _, flag := range []string{"-source", "-event", "-reservation", "-feed", "-etcd"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("redeliver --help lacks %s:\n%s", flag, out.String())
		}
	}
	out.Reset()
	if err := run(context.Background(), []string{"reanchor", "--help"}, &out, &errb); err != nil {
		t.Fatalf("reanchor --help: %v", err)
	}
	for _, flag := range []string{"-database", "-feed", "-admin-token", "-campaign", "-cell"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("reanchor --help lacks %s:\n%s", flag, out.String())
		}
	}
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, args := range [][]string{
		{},
		{"--database", "postgres://x/y"},
		{"--database", "postgres://x/y", "--feed", "http://127.0.0.1:1", "--nats", "nats://127.0.0.1:1", "--campaign", "c", "--admin-token", "t"},
		{"--database", "postgres://x/y", "--feed", "http://127.0.0.1:1", "--campaign", "c"},
		{"--database", "postgres://x/y", "--nats", "nats://127.0.0.1:1", "--stream", "S", "--batch", "0"},
		{"--database", "postgres://x/y", "--etcd", "127.0.0.1:1", "--admin-token", "t"},
		{"--database", "postgres://x/y", "--etcd", "127.0.0.1:1", "--feed", "http://127.0.0.1:1", "--campaign", "c", "--admin-token", "t"},
		{"--database", "postgres://x/y", "--etcd", "127.0.0.1:1", "--nats", "nats://127.0.0.1:1", "--campaign", "c"},
		{"--database", "postgres://x/y", "--etcd", "127.0.0.1:1", "--nats", "nats://127.0.0.1:1", "--stream", "S"},
		// A campaign id or a stream name that can never exist: refused, not
		// waited for.
		{"--database", "postgres://x/y", "--feed", "http://127.0.0.1:1", "--campaign", "bad~id", "--admin-token", "t"},
		{"--database", "postgres://x/y", "--nats", "nats://127.0.0.1:1", "--stream", "bad stream"},
		// A --feed or --metrics-addr that no client or listen could use:
		// said before PostgreSQL is waited for (it is not up here).
		{"--database", "postgres://127.0.0.1:1/x", "--feed", "nonsense", "--campaign", "c", "--admin-token", "t"},
		{"--database", "postgres://127.0.0.1:1/x", "--feed", "http://127.0.0.1:1", "--campaign", "c", "--admin-token", "t", "--metrics-addr", "nonsense"},
		{"--database", "postgres://127.0.0.1:1/x", "--feed", "http://127.0.0.1:1", "--campaign", "c", "--admin-token", "t", "--metrics-addr", "127.0.0.1:99999"},
		// A --database that does not parse (said before the metrics port
		// is bound: here one another process holds), an --event that is no
		// event id.
		{"--database", "not a url", "--feed", "http://127.0.0.1:1", "--campaign", "c", "--admin-token", "t", "--metrics-addr", held.Addr().String()},
		{"redeliver", "--database", "not a url", "--admin-token", "t", "--feed", "http://127.0.0.1:1", "--reservation", "c~s~1~0000000000000000"},
		{"redeliver", "--database", "postgres://x/y", "--admin-token", "t", "--feed", "http://127.0.0.1:1", "--source", "/seckill/c/s", "--event", "garbage"},
		{"redeliver", "--database", "postgres://x/y", "--admin-token", "t", "--feed", "http://127.0.0.1:1", "--source", "/seckill/c/s", "--event", "h-1,h-0"},
		{"redeliver", "--database", "postgres://x/y"},
		{"redeliver", "--database", "postgres://x/y", "--admin-token", "t", "--feed", "http://127.0.0.1:1", "--event", "h-1"},
		{"redeliver", "--database", "postgres://x/y", "--admin-token", "t", "--feed", "http://127.0.0.1:1", "--source", "/seckill/c/s", "--event", "h-1", "--reservation", "c~s~1~0000000000000000"},
		{"redeliver", "--database", "postgres://x/y", "--admin-token", "t", "--feed", "http://127.0.0.1:1", "--source", "c/s", "--event", "h-1"},
		{"redeliver", "--database", "postgres://x/y", "--admin-token", "t", "--feed", "http://127.0.0.1:1", "--etcd", "127.0.0.1:1", "--reservation", "c~s~1~0000000000000000"},
	} {
		// A usage error comes before anything is contacted: a run that
		// waits for PostgreSQL instead ends with the context, not errUsage.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := run(ctx, args, &out, &errb)
		cancel()
		if !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// The binary killed with SIGKILL at random points while a sale goes on,
// consuming the feed and the relay's JetStream stream by turns into the
// same database, and started again each time: the orders reconcile clean
// with seckill; a SIGTERM then stops it with exit 0.
func TestKilledAndRestarted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the seckill-orders binary")
	}
	bin := testbin.Build(t, "github.com/seckill/seckill/cmd/seckill-orders")
	c := orderstest.Seckill(t)
	db := orderstest.Database(t)
	nc := natstest.Start(t)
	orderstest.Define(t, c, "kill", 150)
	orderstest.Relay(t, nc, c.BaseURL(), "kill", "SECKILL_KILL")
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 28))
	t.Logf("seed %d", seed)
	var logs lockedbuf.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seckill-orders' stderr:\n%s", logs.String())
		}
	})
	start := func(jetstream bool) (*exec.Cmd, <-chan struct{}) {
		args := []string{"--database", db, "--metrics-addr", "127.0.0.1:0", "--wait", "1s", "--batch", fmt.Sprint(1 + rng.IntN(60)), "--log-level", "warn"}
		if jetstream {
			args = append(args, "--nats", nc.ConnectedUrl(), "--stream", "SECKILL_KILL")
		} else {
			args = append(args, "--feed", c.BaseURL(), "--admin-token", orderstest.Token, "--campaign", "kill")
		}
		cmd := exec.Command(bin, args...)
		cmd.Stderr = &logs
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		serving := make(chan struct{}) // closed once migrated and consuming
		go func() {
			lines := bufio.NewScanner(stdout)
			for lines.Scan() {
				if strings.HasPrefix(lines.Text(), "seckill-orders metrics on ") {
					close(serving)
				}
			}
		}()
		return cmd, serving
	}
	consuming := 0 // kills after the start-up: while consuming
	for round := 0; round < 8; round++ {
		cmd, serving := start(round%2 == 1)
		// Kill it at a random point while the sale goes on: in its start,
		// its migration, mid-batch or between batches.
		after := time.Duration(20+rng.IntN(500)) * time.Millisecond
		killed := make(chan struct{})
		go func() {
			time.Sleep(after)
			select {
			case <-serving:
				consuming++
			default:
			}
			cmd.Process.Kill()
			cmd.Wait()
			close(killed)
		}()
		orderstest.Sale(t, c, "kill", round*50, round*50+50)
		<-killed
	}
	cmd, serving := start(true)
	select {
	case <-serving:
	case <-time.After(time.Minute):
		t.Fatal("the last seckill-orders did not start within a minute")
	}
	r := orderstest.WaitClean(t, c, db, "kill")
	t.Logf("clean after 8 kills (%d while consuming, the others during the start-up): %d reservations, totals %+v", consuming, r.Compared, r.Totals)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after SIGTERM: %v", err)
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("no exit within a minute of SIGTERM")
	}
	orderstest.WaitClean(t, c, db, "kill")
}
