package netnstest

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A namespace reaches the host's listener on HostIP through the link,
// and the host reaches the namespace; cut, the host has no route to it;
// healed, both work again.
func TestCutAndHeal(t *testing.T) {
	ns := New(t)
	ln, err := net.Listen("tcp", net.JoinHostPort(ns.HostIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dialFromInside := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := ns.DialContext(ctx, "tcp", ln.Addr().String())
		if err != nil {
			t.Fatalf("a dial from inside %s to the host's %s: %v", ns.Name, ln.Addr(), err)
		}
		if local := c.LocalAddr().(*net.TCPAddr).IP.String(); local != ns.InnerIP {
			t.Fatalf("a dial from inside came from %s, not %s", local, ns.InnerIP)
		}
		c.Close()
	}
	// Nothing listens inside: refused says the packet got there.
	dialInner := func() error {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ns.InnerIP, "9"), time.Minute)
		if err == nil {
			c.Close()
		}
		return err
	}
	dialFromInside()
	if err := dialInner(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("the host's dial into the namespace before the cut: %v", err)
	}
	ns.Cut(t)
	// The host's route into the namespace is gone (a dial may follow a
	// default route elsewhere, which a sandbox's network may even answer).
	if out, err := exec.Command(ipPath(), "-o", "route", "get", ns.InnerIP).CombinedOutput(); strings.Contains(string(out), " dev "+ns.hostLink+" ") {
		t.Fatalf("while cut, the host still routes to %s over the link: %s %v", ns.InnerIP, out, err)
	}
	ns.Heal(t)
	dialFromInside()
	if err := dialInner(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("the host's dial into the namespace once healed: %v", err)
	}
}

// A namespace that exists (another test's, or one a killed test left)
// keeps its slot: the next New takes another name, subnet and link.
func TestNewSkipsASlotTaken(t *testing.T) {
	a := New(t)
	b := New(t)
	if a.Name == b.Name || a.HostIP == b.HostIP || a.InnerIP == b.InnerIP || a.hostLink == b.hostLink {
		t.Fatalf("two namespaces share a slot: %+v and %+v", a, b)
	}
	if out, err := exec.Command(ipPath(), "-n", b.Name, "addr", "show").CombinedOutput(); err != nil || !strings.Contains(string(out), b.InnerIP+"/30") {
		t.Fatalf("namespace %s lacks its address %s: %v\n%s", b.Name, b.InnerIP, err, out)
	}
}
