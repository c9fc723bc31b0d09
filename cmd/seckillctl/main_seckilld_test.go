package main

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/seckill/seckill/internal/testbin"
	"github.com/seckill/seckill/orders/orderstest"
)

// childArgs names the environment variable that makes the test binary
// run seckillctl itself with these arguments (a JSON array) instead of
// the tests: a test that must kill seckillctl with SIGKILL runs it as a
// child process this way (ctlChild).
const childArgs = "SECKILLCTL_TEST_CHILD_ARGS"

// TestMain builds each command once for all the tests of the package that
// run it (testbin) and has the reconcile tests share one PostgreSQL
// (orderstest.WithPostgres), or, in a child process of ctlChild, runs
// seckillctl.
func TestMain(m *testing.M) {
	if raw := os.Getenv(childArgs); raw != "" {
		var args []string
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			fmt.Fprintln(os.Stderr, childArgs+":", err)
			os.Exit(exitUsage)
		}
		os.Exit(run(args, os.Stdout, os.Stderr))
	}
	testbin.Main(orderstest.WithPostgres(m))
}
