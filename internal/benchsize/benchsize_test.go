package benchsize

import (
	"os"
	"os/exec"
	"testing"
)

// Pick follows SECKILL_BENCH_TINY, read once per process: a child of this
// test with and without it.
func TestPickFollowsTheEnvironment(t *testing.T) {
	if want := os.Getenv("BENCHSIZE_CHILD_WANT"); want != "" {
		if got := Pick("full", "tiny"); got != want {
			t.Fatalf("Pick = %q with %s=%q, want %q", got, Env, os.Getenv(Env), want)
		}
		return
	}
	for _, c := range []struct{ env, want string }{{"1", "tiny"}, {"", "full"}, {"0", "full"}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPickFollowsTheEnvironment$", "-test.count=1")
		cmd.Env = append(os.Environ(), Env+"="+c.env, "BENCHSIZE_CHILD_WANT="+c.want)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s=%q: %v\n%s", Env, c.env, err, out)
		}
	}
}
