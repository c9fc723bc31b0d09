// Package netnstest puts a test's process on a network of its own: a
// Linux network namespace joined to the host's by a veth pair on a
// private /30, which the test can cut for real (the host's end of the
// link set down: the namespace's packets are dropped by the kernel, its
// sockets stay open and hear nothing, as across a failed switch). A
// process started in the namespace keeps running, and a client dialing
// from inside it (Dial) keeps reaching it, while nothing on the host
// side does. It needs root and ip(8); a test that cannot make the
// namespace fails with the reason, it never skips.
package netnstest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Netns is a network namespace with a veth link to the host's.
type Netns struct {
	// Name is the namespace's name (ip netns), Path its file.
	Name, Path string
	// HostIP is the host's end of the link, InnerIP the namespace's; a
	// process in the namespace reaches the host's listeners on HostIP
	// (not on 127.0.0.1, which is the namespace's own loopback).
	HostIP, InnerIP string
	hostLink        string
}

// slots is the number of /30s in 10.231.0.0/16: a namespace's slot gives
// its name, its links' names and its addresses.
const slots = 1 << 14

// New makes a namespace with its loopback up and a veth link to the
// host's on a /30 of 10.231.0.0/16, and removes it (with its link) when
// t ends: register it before the processes started in it, so that they
// are stopped first. The namespace's name is its claim on a slot: ip
// netns add fails for a name that exists, so test processes running side
// by side (or a namespace a killed test left) never share a subnet or a
// link's name.
func New(t testing.TB) *Netns {
	t.Helper()
	if ipPath() == "" {
		t.Fatal("netnstest: ip(8) is needed to make a network namespace: install iproute2")
	}
	var ns *Netns
	for k := range slots {
		candidate := &Netns{
			Name:     fmt.Sprintf("seckill-test-%d", k),
			Path:     fmt.Sprintf("/var/run/netns/seckill-test-%d", k),
			hostLink: fmt.Sprintf("skh%d", k), // interface names: at most 15 bytes
			// Slot k's /30: host .1, namespace .2.
			HostIP:  fmt.Sprintf("10.231.%d.%d", k/64, k%64*4+1),
			InnerIP: fmt.Sprintf("10.231.%d.%d", k/64, k%64*4+2),
		}
		err := ip("netns", "add", candidate.Name)
		if err == nil {
			ns = candidate
			break
		}
		if !strings.Contains(err.Error(), "exists") {
			t.Fatalf("netnstest: cannot make a network namespace (the test needs root and a kernel with network namespaces): %v", err)
		}
	}
	if ns == nil {
		t.Fatalf("netnstest: all %d namespaces seckill-test-* exist: remove those left by killed tests (ip netns del)", slots)
	}
	inner := "skn" + strings.TrimPrefix(ns.hostLink, "skh")
	t.Cleanup(func() {
		// Deleting the namespace deletes the veth pair with it; the host's
		// end alone is left when the move into it failed.
		if err := ip("netns", "del", ns.Name); err != nil {
			t.Errorf("netnstest: %v", err)
		}
		if ip("link", "show", ns.hostLink) == nil {
			ip("link", "del", ns.hostLink)
		}
	})
	for _, args := range [][]string{
		{"link", "add", ns.hostLink, "type", "veth", "peer", "name", inner},
		{"link", "set", inner, "netns", ns.Name},
		{"addr", "add", ns.HostIP + "/30", "dev", ns.hostLink},
		{"link", "set", ns.hostLink, "up"},
		{"-n", ns.Name, "addr", "add", ns.InnerIP + "/30", "dev", inner},
		{"-n", ns.Name, "link", "set", inner, "up"},
		{"-n", ns.Name, "link", "set", "lo", "up"},
	} {
		if err := ip(args...); err != nil {
			t.Fatalf("netnstest: setting up namespace %s: %v", ns.Name, err)
		}
	}
	return ns
}

// ipPath is where ip(8) is: on PATH, or in root's sbin when PATH lacks
// it; "" when it is nowhere.
func ipPath() string {
	if p, err := exec.LookPath("ip"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/ip", "/sbin/ip"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func ip(args ...string) error {
	out, err := exec.Command(ipPath(), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Cut sets the host's end of the link down: every packet between the
// namespace and the host is dropped from now on, on connections already
// open too, while the processes on either side run on. Inside the
// namespace the link only loses its carrier, so its routes stay and its
// packets are dropped without an error; on the host the route to the
// /30 is gone, so a new connection from there never reaches the
// namespace (it fails at once, or follows a default route elsewhere).
func (ns *Netns) Cut(t testing.TB) {
	t.Helper()
	if err := ip("link", "set", ns.hostLink, "down"); err != nil {
		t.Fatal(err)
	}
}

// Heal sets the host's end of the link up again.
func (ns *Netns) Heal(t testing.TB) {
	t.Helper()
	if err := ip("link", "set", ns.hostLink, "up"); err != nil {
		t.Fatal(err)
	}
}

// Command is exec.Command of name run inside the namespace (ip netns
// exec, which execs name in place: the process's pid is name's, so
// signals reach it).
func (ns *Netns) Command(name string, args ...string) *exec.Cmd {
	return exec.Command(ipPath(), append([]string{"netns", "exec", ns.Name, name}, args...)...)
}

// DialContext dials from inside the namespace: the socket is made by a
// thread that joined it for the moment (setns), and stays in it, so the
// connection reaches the namespace's addresses and follows its routes
// (an http.Transport's DialContext for a client "on the namespace's
// side").
func (ns *Netns) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	target, err := os.Open(ns.Path)
	if err != nil {
		return nil, err
	}
	defer target.Close()
	runtime.LockOSThread()
	home, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer home.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("netnstest: join %s: %w", ns.Name, err)
	}
	conn, dialErr := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays in the namespace: left locked, it ends with
		// this goroutine instead of running others there.
		if conn != nil {
			conn.Close()
		}
		return nil, fmt.Errorf("netnstest: leave %s: %w", ns.Name, err)
	}
	runtime.UnlockOSThread()
	return conn, dialErr
}
