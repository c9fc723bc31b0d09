package compare

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/wal"
)

// nullBody is the null server's answer to every request, shaped as
// seckilld's 202 (token_id a number).
var nullBody = []byte(`{"reservation_id":"null","request_id":"null","state":"PENDING_PAYMENT","token_id":0,"expire_at":"2100-01-01T00:00:00Z","status_url":"/v1/reservations/null"}`)

// nullRecordType is the wal record type of the null-fsync server's records
// (the request bodies); wal only asks that it not be 0.
const nullRecordType = 1

// NullLog is the null-fsync server's log: seckill's own write-ahead log
// (package wal, fsync always, its group commit and its bounds), fed the
// request bodies and nothing else. What the null-fsync server reaches is
// what a server that logs each request durably before answering can reach
// on this machine, with no state, no actor and no decision.
type NullLog struct {
	mu  sync.Mutex // wal.Log.Append is called from one goroutine at a time
	log *wal.Log
}

// OpenNullLog opens (or creates) a log in dir.
func OpenNullLog(dir string) (*NullLog, error) {
	log, err := wal.Open(dir, wal.Options{Fsync: wal.FsyncAlways})
	if err != nil {
		return nil, err
	}
	return &NullLog{log: log}, nil
}

// Append logs body and returns once it is durable (nil), or the log's
// error: wal's sticky failure, or wal.ErrClosed after Close.
func (l *NullLog) Append(body []byte) error {
	l.mu.Lock()
	index, err := l.log.Append(nullRecordType, body)
	l.mu.Unlock()
	if err != nil {
		return err
	}
	durable := make(chan error, 1)
	l.log.Await(index, wal.WaiterFunc(func(err error) { durable <- err }))
	return <-durable
}

// Close closes the log.
func (l *NullLog) Close() error { return l.log.Close() }

// NullHandler answers every request with 202 and a fixed body. With
// durable nil it does nothing else (the HTTP ceiling); otherwise it first
// appends the request body to durable and answers once that is fsynced
// (the durable ceiling), or 500 if that failed.
func NullHandler(durable *NullLog) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if durable != nil {
			if err := durable.Append(ctx.PostBody()); err != nil {
				ctx.Error(err.Error(), fasthttp.StatusInternalServerError)
				return
			}
		}
		ctx.SetStatusCode(fasthttp.StatusAccepted)
		ctx.SetContentType("application/json")
		ctx.SetBody(nullBody)
	}
}

// ServeNull serves NullHandler(durable) on listener until ctx ends.
func ServeNull(ctx context.Context, listener net.Listener, durable *NullLog) error {
	server := &fasthttp.Server{
		Handler:            NullHandler(durable),
		Name:               "null",
		ReadTimeout:        30 * time.Second,
		WriteTimeout:       30 * time.Second,
		IdleTimeout:        60 * time.Second,
		MaxRequestBodySize: 4096,
	}
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
		_ = server.Shutdown()
		return <-served
	}
}

// NullServerMain is "seckill-bench null-server --addr 127.0.0.1:PORT
// [--fsync-dir DIR]": the null server as its own process, so that its
// CPU time is its own.
func NullServerMain(ctx context.Context, args []string, stderr io.Writer) int {
	flags := flag.NewFlagSet("null-server", flag.ContinueOnError)
	flags.SetOutput(stderr)
	addr := flags.String("addr", "127.0.0.1:0", "loopback address to listen on")
	fsyncDir := flags.String("fsync-dir", "", "append each request body to a write-ahead log in this directory and answer once it is fsynced (empty: answer at once)")
	if status, ok := parseFlags(flags, args); !ok {
		return status
	}
	host, _, err := net.SplitHostPort(*addr)
	if err == nil {
		err = bench.CheckLoopback(host)
	}
	if err != nil {
		fmt.Fprintf(stderr, "null-server: %v\n", err)
		return 2
	}
	listener, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "null-server: %v\n", err)
		return 1
	}
	var durable *NullLog
	if *fsyncDir != "" {
		if durable, err = OpenNullLog(*fsyncDir); err != nil {
			fmt.Fprintf(stderr, "null-server: %v\n", err)
			return 1
		}
	}
	err = ServeNull(ctx, listener, durable)
	if durable != nil {
		if closeErr := durable.Close(); err == nil {
			err = closeErr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "null-server: %v\n", err)
		return 1
	}
	return 0
}

// NullTarget runs the null server as a child process (this program with
// the null-server subcommand) and drives it with the HTTP client. A
// durable one ("null-fsync") logs each request to a wal in its temp
// directory and answers once it is fsynced.
type NullTarget struct {
	// Command starts the null server; "--addr ADDR" is appended. Default:
	// this executable with the null-server subcommand.
	Command  []string
	durable  bool
	workDir  string
	maxConns int
	timeout  time.Duration
	serverHome
	client *bench.Client
}

// NewNullTarget returns the target: the HTTP ceiling, or with durable the
// durable ceiling (its log goes under workDir, which must be a real disk).
func NewNullTarget(workDir string, maxConns int, timeout time.Duration, durable bool) *NullTarget {
	return &NullTarget{workDir: workDir, maxConns: maxConns, timeout: timeout, durable: durable}
}

// Name returns "null-http", or "null-fsync" for the durable one.
func (t *NullTarget) Name() string {
	if t.durable {
		return "null-fsync"
	}
	return "null-http"
}

// Start launches the null server process.
func (t *NullTarget) Start(ctx context.Context) error {
	command := t.Command
	if len(command) == 0 {
		self, err := os.Executable()
		if err != nil {
			return unavailable("cannot find this executable to start the null server: %v", err)
		}
		command = []string{self, "null-server"}
	}
	dir, err := os.MkdirTemp(t.workDir, "seckill-compare-null-")
	if err != nil {
		return err
	}
	t.dir = dir
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	argv := append(append([]string{}, command...), "--addr", addr)
	if t.durable {
		argv = append(argv, "--fsync-dir", filepath.Join(dir, "wal"))
	}
	t.process, err = startProcess("null-server", filepath.Join(dir, "null.log"), nil, argv...)
	if err != nil {
		return err
	}
	if err := t.process.waitReady(ctx, dialProbe(addr)); err != nil {
		return err
	}
	t.base = "http://" + addr
	t.client, err = bench.NewClient(bench.ClientOptions{Target: "http://" + addr, MaxConns: t.maxConns, Timeout: t.timeout})
	return err
}

// Prepare returns the HTTP reserver; the null server keeps no campaign.
func (t *NullTarget) Prepare(ctx context.Context, sku SKURef) (bench.Reserver, error) {
	return t.client.SKU(sku.CampaignID, sku.SKUID), nil
}

// Audit has nothing to read: the null server keeps no state.
func (t *NullTarget) Audit(ctx context.Context, sku SKURef) (Audit, error) {
	return Audit{Checked: false, Detail: "no state (ceiling only)"}, nil
}

// Close stops the null server.
func (t *NullTarget) Close() error {
	if t.client != nil {
		t.client.CloseIdle()
	}
	return t.shutdown(syscall.SIGTERM)
}
