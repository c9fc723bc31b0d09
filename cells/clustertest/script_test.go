package clustertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seckill/seckill/internal/proctest"
	"github.com/seckill/seckill/internal/testbin"
)

// freePortBase returns a port p with p..p+2, p+10..p+12, p+100..p+102 and
// p+110..p+112 free a moment ago: make cluster's cell ports with replicas.
// p is drawn below the kernel's ephemeral port range
// (net.ipv4.ip_local_port_range): a port from that range can be taken
// between the check and the script's bind by any outgoing connection on
// the machine (other tests' clients, run at the same time), one below it
// only by a process that asks for it by number. p's range and the ranges
// of the bases in taken do not overlap.
func freePortBase(t *testing.T, taken ...int) int {
	t.Helper()
	low := 32768 // Linux's default low end
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	const first = 10000
	for attempt := 0; attempt < 100; attempt++ {
		base := first + rand.IntN(max(low-113-first, 1))
		ok := !slices.ContainsFunc(taken, func(p int) bool { return base > p-113 && base < p+113 })
		for _, off := range []int{0, 1, 2, 10, 11, 12, 100, 101, 102, 110, 111, 112} {
			if !ok {
				break
			}
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+off))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free port range for the cluster")
	return 0
}

// TestClusterScriptWithReplicas runs make cluster's script with
// REPLICAS=2: three cells of two replicas each and the router. While it
// runs, each cell has a primary and its standby in the sync set, and
// reservations go through the router. Then a Ctrl-C as a terminal sends
// it, SIGINT to the script's whole process group: etcd, the cells and the
// router are not in that group, so the script's trap stops them in order
// (router, cells, etcd) and no primary logs that it could not release its
// leader key; the script exits 130, its command cut short, nothing left
// running.
func TestClusterScriptWithReplicas(t *testing.T) {
	bin := testbin.Dir(t, nil, "github.com/seckill/seckill/cmd/seckilld",
		"github.com/seckill/seckill/cmd/seckill-router", "github.com/seckill/seckill/cmd/seckillctl")
	data := t.TempDir()
	ready := filepath.Join(t.TempDir(), "ready")
	etcdPort := freePortBase(t)
	routerPort := freePortBase(t, etcdPort)
	cellPortBase := freePortBase(t, etcdPort, routerPort)
	// The command the script runs once the cluster is up: it tells the
	// test where the cluster is and waits until the test is done.
	script := fmt.Sprintf(`echo "$ROUTER $ETCD $ADMIN_TOKEN" > %[1]s.tmp && mv %[1]s.tmp %[1]s; while [ -e %[1]s ]; do sleep 0.1; done`, ready)
	cmd := exec.Command("./cells/cluster.sh", "sh", "-c", script)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "BIN="+bin, "DATA="+data, "REPLICAS=2", fmt.Sprintf("ETCD_PORT=%d", etcdPort),
		fmt.Sprintf("ROUTER_PORT=%d", routerPort), fmt.Sprintf("CELL_PORT_BASE=%d", cellPortBase))
	var out lockedBuffer // written by the script's output copier, read by the test
	cmd.Stdout, cmd.Stderr = &out, &out
	// The script leads a process group, as make and the script do in a
	// terminal's foreground group: the test's Ctrl-C signals that group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The script's children inherit its output: without WaitDelay, Wait
	// (and so the test's view of the script's exit) would wait for them.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		os.Remove(ready)
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	})
	var router, etcd, token string
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(ready); err == nil {
			f := strings.Fields(string(b))
			router, etcd, token = f[0], f[1], f[2]
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("cells/cluster.sh exited before the cluster was up: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster never came up:\n%s", out.String())
		}
	}

	ctl := filepath.Join(bin, "seckillctl")
	for _, cell := range []string{"c1", "c2", "c3"} {
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
			var st struct {
				Leader string   `json:"leader"`
				Sync   []string `json:"sync"`
			}
			b, _ := exec.Command(ctl, "ha", "status", "--etcd", etcd, "--replica-set", cell, "--admin-token", token, "--json").Output()
			if json.Unmarshal(b, &st) == nil && st.Leader != "" && len(st.Sync) == 1 && st.Sync[0] != st.Leader {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cell %s: no primary with a standby in sync: %s\n%s", cell, b, out.String())
			}
		}
	}
	accepted := 0
	for i := 0; accepted < 30 && i < 3000; i++ {
		body := fmt.Sprintf(`{"request_id":"script-%d","user_id":"script-u%d"}`, i, i)
		resp, err := httpPost(router+"/v1/campaigns/demo/skus/sku-1/reservations", body)
		if err == nil && resp == 202 {
			accepted++
		}
	}
	if accepted < 30 {
		t.Fatalf("%d reservations accepted through the router\n%s", accepted, out.String())
	}
	started := childrenOf(t, cmd.Process.Pid)
	if len(started) != 8 {
		t.Fatalf("the script runs %v, want etcd, six seckillds and the router\n%s", started, out.String())
	}
	proctest.Interrupt(t, "cells/cluster.sh", cmd.Process.Pid, started, exited, func() int { return cmd.ProcessState.ExitCode() }, &out, data,
		"releasing the leader key failed", "ledger operation failed")
}

// childrenOf returns the processes whose parent is pid, by their pid, but
// the shell running the script's command.
func childrenOf(t *testing.T, pid int) map[int]proctest.Child {
	t.Helper()
	children, err := proctest.Children(pid)
	if err != nil {
		t.Fatal(err)
	}
	for child, p := range children {
		if p.Comm == "sh" {
			delete(children, child)
		}
	}
	return children
}

// lockedBuffer is a bytes.Buffer safe to read while a copier writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// httpPost posts a JSON body and returns the status code.
func httpPost(url, body string) (int, error) {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
