// Command seckill-relay tails the event feed of one seckilld campaign and
// publishes every event to a NATS JetStream stream (package relay): at
// least once, in log order per SKU, Nats-Msg-Id = the event id (none for
// an event of an older copy re-using an abandoned id: NATSSink.Publish). It keeps
// no state: on start it reads where it stopped from the stream's last
// message, or from its progress past records it leaves out (key-value
// bucket relay.ProgressBucket). Run one relay per stream; in a cell cluster, one per cell
// (--cell, --feed the cell's address), each into a stream of its own. Every flag is also read from the
// environment as SECKILL_RELAY_<NAME> (--admin-token:
// SECKILL_RELAY_ADMIN_TOKEN); flags win. --version prints the build's
// version line and --help the usage, both on stdout with exit 0.
//
// Exit status 2, with one line naming the flag on stderr, on a usage
// error: an unknown flag, a required one missing, a value out of its
// range (a --campaign that is no campaign id, a --stream name NATS does
// not take, relay.ErrStreamName, too), before anything is contacted. Exit status 1, with what was refused and
// the feed's answer on stderr, when the feed refuses the relay and a retry
// would be refused again (relay.FeedError: 401 the admin token, 404 the
// campaign, or a --feed path under which no seckilld serves, 410 CURSOR_COMPACTED, 409 CURSOR_DIVERGED, 400 such as
// CAMPAIGN_FEED_TOO_WIDE, 414, 431), when it no longer holds the first
// records of a SKU the stream holds nothing of (relay.GapError: snapshots
// truncated its log before the relay started), or when JetStream refuses
// the stream for good (relay.ErrSinkRefused); any other error (the feed or NATS
// unreachable, also at the start) is retried after 1 s. The stream is
// created only once the feed has answered, so a refused relay leaves none
// behind. SIGTERM or SIGINT stops it (exit 0) once the batch it is
// publishing, if any, is acknowledged, logging the cursor the stream holds
// and the events relayed.
//
// seckill-relay reanchor, with the same flags and the relay stopped, moves
// a stream the feed refuses with 409 CURSOR_DIVERGED (seckilld restored to
// an earlier point) onto the restored log (relay.Reanchor): one message of
// type seckill.relay.reanchored per SKU restored, a line per SKU on
// stdout naming the records whose messages it set apart (and an older
// copy of the log, for a seckilld started on one); then start the relay
// again.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/peterbourgon/ff/v3"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/version"
	"github.com/seckill/seckill/relay"
)

// errUsage marks a bad command line (exit 2).
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitStatus(err, os.Stderr))
}

// exitStatus prints err, unless the relay was stopped, and maps it to the
// exit status: 0 stopped or done, 2 a usage error, 1 anything else.
func exitStatus(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, context.Canceled):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "seckill-relay:", err)
		return 2
	}
	fmt.Fprintln(stderr, "seckill-relay:", err)
	return 1
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usageOut, done := version.Preamble("seckill-relay", args, stdout, stderr)
	if done {
		return nil
	}
	reanchor := len(args) > 0 && args[0] == "reanchor"
	if reanchor {
		args = args[1:]
	}
	fs := flag.NewFlagSet("seckill-relay", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	fs.Usage = func() {
		fmt.Fprint(usageOut, `Usage: seckill-relay [flags]            relay a campaign's feed to a JetStream stream
       seckill-relay reanchor [flags]   after a restore of seckilld, with the relay stopped: the same flags (docs/feed.md)
Flags:
`)
		fs.PrintDefaults()
	}
	feed := fs.String("feed", "http://127.0.0.1:8080", "base URL of seckilld")
	token := fs.String("admin-token", "", "seckilld's admin bearer token (required)")
	natsURL := fs.String("nats", nats.DefaultURL, "NATS server URL")
	stream := fs.String("stream", "", "JetStream stream name, this relay's alone (created with subjects seckill.<campaign>.> if missing, once the feed answers; required)")
	campaign := fs.String("campaign", "", "campaign whose feed is relayed (required)")
	cell := fs.String("cell", "", "the cell whose feed --feed is, for a cell of a cluster: its events go to the stream <stream>_<cell>, subjects seckill.<campaign>.@<cell>.>")
	types := fs.String("types", "", "comma-separated event types (the feed's types=; empty: its defaults, without seckill.request.rejected)")
	limit := fs.Int("limit", relay.DefaultLimit, "events per feed page (1..1000)")
	wait := fs.Duration("wait", relay.DefaultWait, "feed long poll (at most 60s)")
	level := fs.String("log-level", "info", "debug | info | warn | error")
	if err := ff.Parse(fs, args, ff.WithEnvVarPrefix("SECKILL_RELAY")); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	var logLevel slog.Level
	if err := logLevel.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("%w: --log-level: %v", errUsage, err)
	}
	switch {
	case *token == "" || *stream == "" || *campaign == "":
		return fmt.Errorf("%w: --admin-token, --stream and --campaign are required", errUsage)
	case !sku.ValidID(*campaign):
		return fmt.Errorf("%w: --campaign %q: a campaign id is %s: no seckilld has it", errUsage, *campaign, sku.IDRule)
	case relay.CheckStreamName(*stream) != nil:
		return fmt.Errorf("%w: --stream: %v", errUsage, relay.CheckStreamName(*stream))
	case *cell != "" && !sku.ValidID(*cell):
		return fmt.Errorf("%w: --cell %q: a cell id is %s", errUsage, *cell, sku.IDRule)
	case *limit < 1 || *limit > 1000:
		return fmt.Errorf("%w: --limit must be 1..1000", errUsage)
	case *wait <= 0 || *wait > 60*time.Second:
		return fmt.Errorf("%w: --wait must be in (0, 60s]", errUsage)
	case fs.NArg() > 0:
		return fmt.Errorf("%w: unexpected arguments: %v", errUsage, fs.Args())
	}
	// Checked as the relay's client will read it, before NATS is dialled:
	// a mistyped --feed is the command line's error.
	if _, err := client.New(client.Options{BaseURL: *feed}); err != nil {
		return fmt.Errorf("%w: --feed: %v", errUsage, err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel}))
	// A NATS server not up yet is waited for (the relay's errors are
	// retried), as one that goes away later is.
	nc, err := nats.Connect(*natsURL, nats.Name("seckill-relay "+*campaign), nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true))
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", *natsURL, err)
	}
	defer nc.Close()
	sink, err := relay.NewCellNATSSink(nc, *stream, *campaign, *cell)
	if err != nil {
		return err
	}
	cfg := relay.Config{FeedURL: *feed, AdminToken: *token, CampaignID: *campaign, Limit: *limit, Wait: *wait, Logger: log}
	if *types != "" {
		cfg.Types = strings.Split(*types, ",")
	}
	if !reanchor {
		return relay.Run(ctx, cfg, sink)
	}
	reanchored, err := relay.Reanchor(ctx, cfg, sink)
	for _, d := range reanchored {
		printReanchored(stdout, d)
	}
	if err == nil && len(reanchored) == 0 {
		fmt.Fprintln(stdout, "nothing diverged: the feed takes the stream's cursor")
	}
	return err
}

// printReanchored prints the line of a SKU Reanchor moved: what the
// marker sets apart, the SKU's messages before it of the abandoned
// records (Seckill-Index past the fork index, up to the record the stream
// stood at).
func printReanchored(w io.Writer, d relay.ReanchoredData) {
	history := "history " + d.History
	if d.OlderCopy() {
		history = "an older copy of the log, history " + d.History
	}
	_, at, _ := strings.Cut(d.AbandonedAfter, "-")
	fmt.Fprintf(w, "SKU %s: restored after record %d (%s); its messages before the %s message stored now with Seckill-Index %d to %s are of abandoned records "+
		"(the stream stood at %s)\n", d.SKUID, d.ForkIndex, history, relay.TypeReanchored, d.ForkIndex+1, at, d.AbandonedAfter)
}
