package docs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Every command exits 2 on a usage error, before it contacts anything,
// naming the flag on stderr (operating.md, Starting and stopping): an
// unknown flag for each command under cmd/ (a new one is checked without
// a change here) and for the subcommands that parse flags of their own,
// and a value out of its range for the flags whose range a command
// checks itself.
func TestDocsUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	bin := binDir(t)
	type usage struct {
		args  []string
		names string // what stderr must say
	}
	cases := map[string][]usage{}
	for _, name := range commands(t) {
		cases[name] = append(cases[name], usage{[]string{"--no-such-flag"}, "no-such-flag"})
	}
	relay := []string{"--admin-token", "t", "--stream", "S", "--campaign", "c", "--nats", "nats://127.0.0.1:1", "--feed", "http://127.0.0.1:1"}
	for name, more := range map[string][]usage{
		"seckilld": {
			{[]string{"--max-queue-wait", "5s"}, "--max-queue-wait must be 1ms..3s"},
			{[]string{"--fsync", "sometimes"}, "--fsync"},
			{[]string{"--addr", "127.0.0.1:99999"}, "--addr"},
		},
		"seckillctl": {
			{[]string{"verify", "--no-such-flag"}, "no-such-flag"},
			{[]string{"cells", "publish", "--no-such-flag"}, "no-such-flag"},
			// A --server without its scheme ("localhost:8080" parses as a URL of
			// scheme "localhost"), refused before seckilld or the orders are asked.
			{[]string{"snapshot", "--server", "localhost:1", "--campaign", "c", "--sku", "s", "--admin-token", "t"}, "--server: client: base URL \"localhost:1\": give http://host:port"},
			{[]string{"dashboard-link", "--server", "127.0.0.1:1", "--admin-token", "t"}, "--server: client: base URL \"127.0.0.1:1\": give http://host:port"},
			{[]string{"reconcile", "--orders", "postgres://127.0.0.1:1/x", "--campaign", "c", "--server", "localhost:1", "--admin-token", "t"}, "--server: client: base URL"},
		},
		"seckill-relay": {
			{append(relay, "--limit", "0"), "--limit"},
			{append(relay, "--stream", "a.b"), "--stream"},
			{append([]string{"reanchor"}, append(relay, "--limit", "0")...), "--limit"},
		},
		"seckill-orders": {
			{[]string{"redeliver", "--no-such-flag"}, "no-such-flag"},
			{[]string{"reanchor", "--no-such-flag"}, "no-such-flag"},
			{[]string{"reanchor", "--database", "postgres://127.0.0.1:1/x", "--feed", "http://127.0.0.1:1", "--admin-token", "t", "--campaign", "bad~id"}, "--campaign"},
			{[]string{"reanchor", "--database", "postgres://127.0.0.1:1/x", "--feed", "http://127.0.0.1:1", "--admin-token", "t", "--campaign", "c", "--nats", "nats://127.0.0.1:1"}, "--nats and --stream"},
			{[]string{"reanchor", "--database", "postgres://127.0.0.1:1/x", "--feed", "http://127.0.0.1:1", "--admin-token", "t", "--campaign", "c", "--nats", "nats://127.0.0.1:1", "--stream", "a.b"}, "--stream"},
			{[]string{"--database", "postgres://127.0.0.1:1/x", "--feed", "http://127.0.0.1:1", "--campaign", "c", "--admin-token", "t", "--batch", "0"}, "--batch"},
		},
		"seckill-router": {
			{[]string{"--etcd", "127.0.0.1:1", "--cells", "c1=127.0.0.1:1", "--timeout", "-1s"}, "--timeout"},
			{[]string{"--etcd", "127.0.0.1:1", "--cells", "c1=127.0.0.1:1", "--addr", "nonsense"}, "--addr"},
		},
		"seckill-bench": {
			{[]string{"compare", "--no-such-flag"}, "no-such-flag"},
			{[]string{"null-server", "--no-such-flag"}, "no-such-flag"},
		},
		"seckill-sim": {
			{[]string{"-workers", "-1"}, "-workers must be at least 1"},
			{[]string{"-seeds", "0"}, "-seeds must be at least 1"},
		},
	} {
		if _, ok := cases[name]; !ok {
			t.Errorf("%s: no such command under cmd/ any more", name)
		}
		cases[name] = append(cases[name], more...)
	}
	for name, list := range cases {
		for _, c := range list {
			cmd := exec.Command(filepath.Join(bin, name), c.args...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()} // no SECKILL_* default leaks in
			cmd.Dir = t.TempDir()
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), c.names) {
				t.Errorf("%s %s: %v, stderr %q; want exit 2 naming %q", name, strings.Join(c.args, " "), err, stderr.String(), c.names)
			}
		}
	}
}
