package fakeapi

import (
	"context"
	"flag"
	"fmt"
	"io"
)

// Main runs a fake server until ctx ends: "seckill-bench fake-server", to try
// the load tool by hand before the real seckilld exists.
func Main(ctx context.Context, args []string, stderr io.Writer) int {
	flags := flag.NewFlagSet("fake-server", flag.ContinueOnError)
	flags.SetOutput(stderr)
	var options Options
	flags.StringVar(&options.Addr, "addr", "127.0.0.1:8080", "loopback address to listen on")
	flags.StringVar(&options.AdminToken, "admin-token", "", "bearer token required on /admin (empty: none)")
	flags.StringVar(&options.PaymentSecret, "payment-secret", "", "HMAC secret payments must be signed with (empty: none)")
	flags.BoolVar(&options.Oversell, "oversell", false, "sell past the stock on purpose (the audit still claims all is well)")
	flags.IntVar(&options.QueueFullEvery, "queue-full-every", 0, "answer every Nth reservation 429 QUEUE_FULL (0: never)")
	flags.IntVar(&options.UnknownEvery, "unknown-every", 0, "answer every Nth new reservation 504 RESULT_UNKNOWN (0: never)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	server, err := Start(options)
	if err != nil {
		fmt.Fprintf(stderr, "fake-server: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "fake-server: serving the seckilld API contract on %s (in memory)\n", server.URL())
	<-ctx.Done()
	if err := server.Close(); err != nil {
		fmt.Fprintf(stderr, "fake-server: %v\n", err)
		return 1
	}
	return 0
}
