package replica

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// A router's table follows the leader key and the member keys: the
// primary's addresses while it leads, nothing once its lease ended, the
// next primary's after the failover; ReadSet sees the same.
func TestPrimariesFollowTheLeaderKey(t *testing.T) {
	c := startEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := NewPrimaries("/test")
	select {
	case <-p.Loaded():
		t.Fatal("Loaded before any read")
	default:
	}
	go p.Follow(ctx, c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	select {
	case <-p.Loaded():
	case <-ctx.Done():
		t.Fatal("Follow's first read never ended Loaded")
	}
	coords := map[string]*Etcd{}
	for _, name := range []string{"a", "b"} {
		e, err := NewEtcd(c, "/test", "rs1", name, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		if _, err := e.Register(ctx, Member{HTTP: "http://" + name, Replication: name + ":1"}); err != nil {
			t.Fatal(err)
		}
		coords[name] = e
	}
	waitPrimary := func(want string) {
		t.Helper()
		for {
			name, m := p.Primary("rs1")
			if name == want && (want == "" || m.HTTP == "http://"+want) {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("primary %q (%+v), want %q", name, m, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitPrimary("")
	v, _ := coords["a"].Read(ctx)
	ha, err := coords["a"].Acquire(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	waitPrimary("a")
	if _, err := coords["a"].SetSync(ctx, ha, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	coords["a"].Close() // a's lease ends: its leader and member keys go
	waitPrimary("")
	v, ms, err := ReadSet(ctx, c, "/test", "rs1")
	if err != nil || v.Leader != "" || len(ms) != 1 || ms["b"].HTTP != "http://b" {
		t.Fatalf("ReadSet: %+v %+v %v", v, ms, err)
	}
	if _, err := coords["b"].Acquire(ctx, v); err != nil {
		t.Fatal(err)
	}
	waitPrimary("b")
}
