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
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill/bench"
)

// nullBody is the null server's answer to every request.
var nullBody = []byte(`{"reservation_id":"null","request_id":"null","state":"PENDING_PAYMENT","token_id":"null","expire_at":"2100-01-01T00:00:00Z","status_url":"/v1/reservations/null"}`)

// ServeNull serves every request on listener with 202 and a fixed body
// until ctx ends. With durable nil it does nothing else (the HTTP ceiling);
// otherwise it first appends the request body to durable and answers once
// the group commit that covers it is fdatasynced (the durable ceiling), or
// 500 if that failed.
func ServeNull(ctx context.Context, listener net.Listener, durable *groupSync) error {
	server := &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			if durable != nil {
				group := durable.append(ctx.PostBody())
				<-group.done
				if group.err != nil {
					ctx.Error(group.err.Error(), fasthttp.StatusInternalServerError)
					return
				}
			}
			ctx.SetStatusCode(fasthttp.StatusAccepted)
			ctx.SetContentType("application/json")
			ctx.SetBody(nullBody)
		},
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
// [--fsync-file PATH]": the null server as its own process, so that its
// CPU time is its own.
func NullServerMain(ctx context.Context, args []string, stderr io.Writer) int {
	flags := flag.NewFlagSet("null-server", flag.ContinueOnError)
	flags.SetOutput(stderr)
	addr := flags.String("addr", "127.0.0.1:0", "loopback address to listen on")
	fsyncFile := flags.String("fsync-file", "", "append each request body to this file and answer after its group's fdatasync (empty: answer at once)")
	if err := flags.Parse(args); err != nil {
		return 2
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
	var durable *groupSync
	if *fsyncFile != "" {
		if durable, err = openGroupSync(*fsyncFile); err != nil {
			fmt.Fprintf(stderr, "null-server: %v\n", err)
			return 1
		}
	}
	err = ServeNull(ctx, listener, durable)
	if durable != nil {
		if closeErr := durable.close(); err == nil {
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
// durable one ("null-fsync") syncs each request to a file in its temp
// directory before answering.
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
// durable ceiling (its file goes under workDir, which must be a real disk).
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
		argv = append(argv, "--fsync-file", filepath.Join(dir, "null.wal"))
	}
	t.process, err = startProcess("null-server", filepath.Join(dir, "null.log"), nil, argv...)
	if err != nil {
		return err
	}
	if err := t.process.waitReady(ctx, dialProbe(addr)); err != nil {
		return err
	}
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
