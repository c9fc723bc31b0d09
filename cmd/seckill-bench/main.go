// Command seckill-bench is the load tool of seckill. With no subcommand it
// runs one scenario (seed, hot, many-skus, payflow, lottery) against a seckilld server;
// "compare" runs the baselines side by side (Redis, PostgreSQL, seckilld,
// the in-process engine, a null HTTP server), and "compare passes" reserves
// with and without entry passes through one seckilld; "orders" runs the seed
// sale through seckilld, its feed and seckill-orders into PostgreSQL (make
// bench-orders); "null-server" is the null
// server itself, started by compare; "report RESULT.json OUT.html" renders
// a report again from a saved result. Run with -h for the
// flags.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/bench/compare"
	"github.com/seckill/seckill/bench/ordersbench"
	"github.com/seckill/seckill/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	args := os.Args[1:]
	status := 0
	switch {
	case version.Requested(args):
		fmt.Println(version.String("seckill-bench"))
	case len(args) > 0 && args[0] == "report" && version.HelpRequested(args[1:]):
		fmt.Println("usage: seckill-bench report RESULT.json REPORT.html\n\nRenders the HTML report of a saved result (--json) again.")
	case len(args) > 0 && args[0] == "compare":
		status = compare.Main(ctx, args[1:], os.Stdout, os.Stderr)
	case len(args) > 0 && args[0] == "orders":
		status = ordersbench.Main(ctx, args[1:], os.Stdout, os.Stderr)
	case len(args) > 0 && args[0] == "null-server":
		status = compare.NullServerMain(ctx, args[1:], os.Stderr)
	case len(args) > 0 && args[0] == "report":
		status = bench.ReportMain(args[1:], os.Stderr)
	default:
		status = bench.Main(ctx, args, os.Stdout, os.Stderr)
	}
	stop()
	os.Exit(status)
}
