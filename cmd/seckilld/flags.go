package main

import (
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/actors/sku"
	"github.com/seckill/seckill/entrypass"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/httpapi"
	"github.com/seckill/seckill/internal/hostport"
	"github.com/seckill/seckill/wal"
)

// Bounds of --feed-heartbeat: below a second a heartbeat is traffic, above
// ten minutes proxies close idle streams and a closed client is held long.
const (
	minFeedHeartbeat = time.Second
	maxFeedHeartbeat = 10 * time.Minute
)

// Bounds of --max-queue-wait. It is a backpressure bound, not a waiting
// room: a buyer waits at most that long before admission answers 429 with
// Retry-After, and the engine's answer is awaited that long plus 2 s
// before 504 RESULT_UNKNOWN (httpapi.Config.RequestTimeout). At 3 s that
// worst answer comes after 5 s, the seckill-router's default --timeout;
// a longer wait holds a connection and a request per waiting buyer when
// the crowd is largest, buyers reload before it ends anyway, and a sale
// that wants them to wait longer wants a waiting room before seckilld
// (entry passes issued ahead of start_at, passes.md).
const (
	minMaxQueueWait = time.Millisecond
	maxMaxQueueWait = 3 * time.Second
)

// options are the command line, each flag also settable as SECKILL_<NAME>
// in the environment (--data-dir: SECKILL_DATA_DIR). Flags win.
type options struct {
	addr             string
	dataDir          string
	campaigns        string
	adminToken       string
	paymentSecret    string
	maxQueueWait     time.Duration
	fsync            wal.FsyncMode
	logLevel         slog.Level
	cpuProfile       string
	snapshotEvery    int
	snapshotInterval time.Duration
	snapshotKeep     int
	maxSKUs          int
	cell             cellOptions    // cell.go
	replica          replicaOptions // haflags.go
	// entryPasses holds the parsed --entry-pass-* flags; its
	// types never print their secrets.
	entryPasses       httpapi.EntryPassConfig
	feedRetainRecords uint64
	feedRetainAge     time.Duration
	feedHeartbeat     time.Duration
	lotteryDrawBatch  int
	lotteryDrawPause  time.Duration
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("seckilld", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen address (port 0 picks a free one)")
	fs.StringVar(&o.dataDir, "data-dir", "./data", "directory of the per-SKU logs")
	fs.StringVar(&o.campaigns, "campaigns", "", "campaign file, JSON or YAML list (default: the embedded demo campaign)")
	fs.StringVar(&o.adminToken, "admin-token", "", "bearer token of /admin routes (default: a random one, printed)")
	fs.StringVar(&o.paymentSecret, "payment-secret", "", "HMAC-SHA256 key of payment callbacks (empty: unsigned, warned)")
	fs.DurationVar(&o.maxQueueWait, "max-queue-wait", time.Second, fmt.Sprintf("longest a buyer should wait: admission stops before the wait it judges (inbox age + commit latency) reaches it (%s..%s)", minMaxQueueWait, maxMaxQueueWait))
	fsync := fs.String("fsync", "always", "always | never (never: benchmarks only)")
	level := fs.String("log-level", "info", "debug | info | warn | error")
	fs.IntVar(&o.snapshotEvery, "snapshot-every", actors.DefaultSnapshotEvery, "snapshot a SKU after this many records (negative: never by count; not 0)")
	fs.DurationVar(&o.snapshotInterval, "snapshot-interval", actors.DefaultSnapshotInterval, "snapshot a SKU with new records at least this often (a negative duration such as -1s: never by time; not 0)")
	fs.IntVar(&o.snapshotKeep, "snapshot-keep", actors.DefaultSnapshotKeep, "snapshots kept per SKU; the log is truncated up to the oldest")
	fs.IntVar(&o.maxSKUs, "max-skus", 0, fmt.Sprintf("most SKUs this engine holds, one open file each (0: half the open-files limit left after the reserve, at most %d)", actors.DefaultMaxSKUs))
	fs.Uint64Var(&o.feedRetainRecords, "feed-retain-records", 0, fmt.Sprintf("keep at least this many newest records of each SKU's log for event-feed consumers when snapshots truncate it (at most %d)", feed.MaxRetainRecords))
	fs.DurationVar(&o.feedRetainAge, "feed-retain-age", 0, fmt.Sprintf("keep the records of the last this long for event-feed consumers (at most %s)", feed.MaxRetainAge))
	fs.DurationVar(&o.feedHeartbeat, "feed-heartbeat", httpapi.DefaultFeedHeartbeat, fmt.Sprintf("period of an event-feed stream's heartbeat comment; a client that closed is let go at the next (%s..%s)", minFeedHeartbeat, maxFeedHeartbeat))
	fs.IntVar(&o.lotteryDrawBatch, "lottery-draw-batch", sku.DrawBatch, fmt.Sprintf("records of a lottery draw per group commit (1..%d; smaller: other calls answered sooner between rounds, the draw slower)", sku.DrawBatch))
	fs.DurationVar(&o.lotteryDrawPause, "lottery-draw-pause", 0, "pause between two group commits of a lottery draw (0: none; spreads a large draw over time)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile (go tool pprof) to this file until shutdown")
	registerCellFlags(fs, &o.cell)
	registerReplicaFlags(fs, &o.replica)
	passKeys := fs.String("entry-pass-keys", "", "entry-pass signing keys kid:hex,... (the first signs, all verify; empty: no passes)")
	subjectSecret := fs.String("entry-pass-subject-secret", "", "hex secret (32-64 bytes) hashing the subject values of issued passes")
	fs.StringVar(&o.entryPasses.IssuerToken, "entry-pass-issuer-token", "", "bearer token of the entry-pass issuing route (empty: the route is off)")
	fs.Usage = func() { printUsage(fs) }
	if err := ff.Parse(fs, args, ff.WithEnvVarPrefix("SECKILL")); err != nil {
		return o, err
	}
	if err := hostport.Listen(o.addr); err != nil {
		return o, fmt.Errorf("--addr %w", err)
	}
	if err := o.cell.validate(o.replica.enabled()); err != nil {
		return o, err
	}
	if err := o.replica.validate(o.cell.id, o.cell.etcd != ""); err != nil {
		return o, err
	}
	switch *fsync {
	case "always":
		o.fsync = wal.FsyncAlways
	case "never":
		o.fsync = wal.FsyncNeverBenchmarkOnly
	default:
		return o, fmt.Errorf("--fsync must be always or never, not %q", *fsync)
	}
	if err := o.logLevel.UnmarshalText([]byte(*level)); err != nil {
		return o, fmt.Errorf("--log-level: %w", err)
	}
	// 0 could mean never or after every record; the engine would read it
	// as its default (500,000 records, 5m), which no operator writing 0
	// meant: refused, the message saying how to ask for never.
	if o.snapshotEvery == 0 {
		return o, fmt.Errorf("--snapshot-every must not be 0: a number of records, or negative for never by count")
	}
	if o.snapshotInterval == 0 {
		return o, fmt.Errorf("--snapshot-interval must not be 0: a duration, or negative (-1s) for never by time")
	}
	if o.snapshotKeep < 1 {
		return o, fmt.Errorf("--snapshot-keep must be at least 1")
	}
	if o.maxSKUs < 0 {
		return o, fmt.Errorf("--max-skus must be positive (0: from the open-files limit)")
	}
	if o.feedRetainRecords > feed.MaxRetainRecords {
		return o, fmt.Errorf("--feed-retain-records must be at most %d", feed.MaxRetainRecords)
	}
	if o.feedHeartbeat < minFeedHeartbeat || o.feedHeartbeat > maxFeedHeartbeat {
		return o, fmt.Errorf("--feed-heartbeat must be %s..%s", minFeedHeartbeat, maxFeedHeartbeat)
	}
	if o.feedRetainAge < 0 || o.feedRetainAge > feed.MaxRetainAge {
		return o, fmt.Errorf("--feed-retain-age must be 0..%s", feed.MaxRetainAge)
	}
	if o.lotteryDrawBatch < 1 || o.lotteryDrawBatch > sku.DrawBatch {
		return o, fmt.Errorf("--lottery-draw-batch must be 1..%d", sku.DrawBatch)
	}
	if o.lotteryDrawPause < 0 || o.lotteryDrawPause > time.Minute {
		return o, fmt.Errorf("--lottery-draw-pause must be 0..1m")
	}
	if o.maxQueueWait < minMaxQueueWait || o.maxQueueWait > maxMaxQueueWait {
		return o, fmt.Errorf("--max-queue-wait must be %s..%s, not %s (a bound on a buyer's wait, not a waiting room)", minMaxQueueWait, maxMaxQueueWait, o.maxQueueWait)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if err := parseEntryPassFlags(&o.entryPasses, *passKeys, *subjectSecret); err != nil {
		return o, err
	}
	return o, nil
}

// printUsage is seckilld --help: every flag with its environment variable
// (SECKILL_ and the flag's name in upper case, "-" as "_") and default.
func printUsage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprint(w, `usage: seckilld [flags]

The flash-sale sequencer: the HTTP API over one actor and one fsynced log per SKU.
Every flag can also be set in the environment; a flag given wins over its variable.
--version prints the build's version.

`)
	fs.VisitAll(func(f *flag.Flag) {
		env := "SECKILL_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		def := ""
		if f.DefValue != "" {
			def = fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "  --%s, %s\n        %s%s\n", f.Name, env, f.Usage, def)
	})
}

// parseEntryPassFlags fills c from --entry-pass-keys and
// --entry-pass-subject-secret. Errors never quote a secret.
func parseEntryPassFlags(c *httpapi.EntryPassConfig, keys, subjectSecret string) error {
	if keys != "" {
		ring, err := entrypass.ParseKeyRing(keys)
		if err != nil {
			return fmt.Errorf("--entry-pass-keys: %w", err)
		}
		c.Keys = ring
	}
	if subjectSecret != "" {
		secret, err := hex.DecodeString(strings.TrimSpace(subjectSecret))
		if err != nil {
			return errors.New("--entry-pass-subject-secret: not an even number of hex digits")
		}
		if c.Subjects, err = entrypass.NewSubjectHasher(secret); err != nil {
			return fmt.Errorf("--entry-pass-subject-secret: %w", err)
		}
	}
	if c.IssuerToken != "" && (c.Keys == nil || c.Subjects == nil) {
		return errors.New("--entry-pass-issuer-token needs --entry-pass-keys and --entry-pass-subject-secret")
	}
	return nil
}
