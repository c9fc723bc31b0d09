// Command etcdserver is a one-member etcd for the cell tests and for make
// cluster: go.etcd.io/etcd/server/v3/embed v3.7.3, the same server as the
// etcd binary, in a process of its own so that a test can SIGSTOP or
// kill -9 it. It lives in a nested module so that the server's dependency
// graph stays out of the seckill module (which needs only the client).
//
// It prints "READY <client-url>" on stdout once it serves, and stops on
// SIGTERM or SIGINT.
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/logutil"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

func main() {
	dataDir := flag.String("data-dir", "", "data directory (required)")
	clientAddr := flag.String("client-addr", "127.0.0.1:2379", "host:port for clients")
	peerAddr := flag.String("peer-addr", "127.0.0.1:2380", "host:port for peers")
	tickMs := flag.Uint("tick-ms", 50, "heartbeat interval, ms")
	noFsync := flag.Bool("unsafe-no-fsync", false, "never fsync (a machine crash may lose acknowledged writes; a kill -9 does not)")
	flag.Parse()
	if *dataDir == "" {
		fmt.Fprintln(os.Stderr, "etcdserver: --data-dir is required")
		os.Exit(2)
	}
	cfg := embed.NewConfig()
	cfg.Name = "seckill-etcd"
	cfg.Dir = *dataDir
	// etcd's own logger at error level, with a level this process raises
	// when it is asked to stop: embed logs each listener's end ("server
	// closed", "use of closed network connection") as an error with a
	// stack trace, and on a requested stop those ends are the stop itself.
	level := zap.NewAtomicLevelAt(zap.ErrorLevel)
	lcfg := logutil.DefaultZapLoggerConfig
	lcfg.Level = level
	lg, err := lcfg.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdserver:", err)
		os.Exit(1)
	}
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	// etcd keeps every revision of every key until compacted, and the
	// ledger's grants and each replica's seen/<name> record (rewritten
	// every few seconds) add revisions for as long as a cluster runs:
	// compact what is older than an hour, as a production etcd is run.
	cfg.AutoCompactionMode, cfg.AutoCompactionRetention = embed.CompactorModePeriodic, "1h"
	cfg.TickMs = *tickMs
	cfg.UnsafeNoFsync = *noFsync
	cfg.ElectionMs = 10 * *tickMs
	client := url.URL{Scheme: "http", Host: *clientAddr}
	peer := url.URL{Scheme: "http", Host: *peerAddr}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdserver:", err)
		os.Exit(1)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		fmt.Fprintln(os.Stderr, "etcdserver: not ready after 60 s")
		os.Exit(1)
	}
	fmt.Printf("READY %s\n", client.String())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-stop:
		level.SetLevel(zap.FatalLevel)
	case err := <-e.Err():
		fmt.Fprintln(os.Stderr, "etcdserver:", err)
	}
	e.Close()
}
