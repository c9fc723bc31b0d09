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
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/bench/compare"
	"github.com/seckill/seckill/bench/ordersbench"
	"github.com/seckill/seckill/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	status := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(status)
}

// commands are the subcommands; a first argument that is no flag must name
// one of them.
var commands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
	"compare": compare.Main,
	"orders":  ordersbench.Main,
	"null-server": func(ctx context.Context, args []string, _, stderr io.Writer) int {
		return compare.NullServerMain(ctx, args, stderr)
	},
	"report": func(_ context.Context, args []string, stdout, stderr io.Writer) int {
		if version.HelpRequested(args) {
			fmt.Fprintln(stdout, "usage: seckill-bench report RESULT.json REPORT.html\n\nRenders the HTML report of a saved result (--json) again.")
			return bench.ExitPass
		}
		return bench.ReportMain(args, stderr)
	},
}

// run executes one command line and returns the exit status: an unknown
// command is a usage error (exit 2) that names it, whatever flags follow
// it (--help and --version too).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		if _, ok := commands[args[0]]; !ok {
			names := make([]string, 0, len(commands))
			for name := range commands {
				names = append(names, name)
			}
			slices.Sort(names)
			fmt.Fprintf(stderr, "seckill-bench: unknown command %q (the commands are %s; seckill-bench -h lists the flags of a load run)\n",
				args[0], strings.Join(names, ", "))
			return bench.ExitUsage
		}
	}
	if version.Requested(args) {
		fmt.Fprintln(stdout, version.String("seckill-bench"))
		return bench.ExitPass
	}
	if version.HelpRequested(args) {
		return answerHelp(ctx, args, stdout, stderr)
	}
	return dispatch(ctx, args, stdout, stderr)
}

// dispatch runs the command args name, or a load run.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return commands[args[0]](ctx, args[1:], stdout, stderr)
	}
	return bench.Main(ctx, args, stdout, stderr)
}

// answerHelp runs a command line that asks for help. Each command's flag
// set prints its usage where it prints usage errors, on stderr; when it
// answers the help (exit 0) that text is the answer and goes to stdout,
// as every seckill command gives it. Anything else (an unknown argument
// before the flag: exit 2) stays on stderr.
func answerHelp(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var usage bytes.Buffer
	status := dispatch(ctx, args, stdout, &usage)
	answer := stderr
	if status == bench.ExitPass {
		answer = stdout
	}
	_, _ = answer.Write(usage.Bytes())
	return status
}
