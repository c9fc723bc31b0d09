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

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dataDir := flag.String("data-dir", "", "data directory (required)")
	clientAddr := flag.String("client-addr", "127.0.0.1:2379", "host:port for clients")
	peerAddr := flag.String("peer-addr", "127.0.0.1:2380", "host:port for peers")
	tickMs := flag.Uint("tick-ms", 50, "heartbeat interval, ms")
	flag.Parse()
	if *dataDir == "" {
		fmt.Fprintln(os.Stderr, "etcdserver: --data-dir is required")
		os.Exit(2)
	}
	cfg := embed.NewConfig()
	cfg.Name = "seckill-etcd"
	cfg.Dir = *dataDir
	cfg.LogLevel = "error"
	cfg.TickMs = *tickMs
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
	case err := <-e.Err():
		fmt.Fprintln(os.Stderr, "etcdserver:", err)
	}
	e.Close()
}
