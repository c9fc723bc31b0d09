package compare

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/wal"
)

func TestNullServerAnswers202(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ServeNull(ctx, listener, nil) }()
	client, err := bench.NewClient(bench.ClientOptions{Target: "http://" + listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := client.SKU("c", "s").Reserve(ctx, "r1", "u1")
	if err != nil || reply.Outcome != bench.OutcomeAccepted || reply.ReservationID != "null" {
		t.Fatalf("reply %+v, err %v", reply, err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

func TestNullFsyncServerLogsWhatItAnswered(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	durable, err := OpenNullLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ServeNull(ctx, listener, durable) }()
	client, err := bench.NewClient(bench.ClientOptions{Target: "http://" + listener.Addr().String(), MaxConns: 16})
	if err != nil {
		t.Fatal(err)
	}
	const callers, each = 16, 50
	var wait sync.WaitGroup
	answered := make(chan string, callers*each)
	for c := range callers {
		wait.Add(1)
		go func() {
			defer wait.Done()
			for i := range each {
				id := fmt.Sprintf("r-%d-%d", c, i)
				reply, err := client.SKU("c", "s").Reserve(ctx, id, "u"+id)
				if err != nil || reply.Outcome != bench.OutcomeAccepted {
					t.Errorf("%s: reply %+v, err %v", id, reply, err)
					return
				}
				answered <- id
			}
		}()
	}
	wait.Wait()
	close(answered)
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if err := durable.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopened, the log holds every request that was answered 202.
	reopened, err := wal.Open(dir, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	var logged strings.Builder
	if err := reopened.Replay(0, func(index uint64, typ byte, payload []byte) error {
		logged.Write(payload)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	count := 0
	for id := range answered {
		count++
		if !strings.Contains(logged.String(), `"`+id+`"`) {
			t.Errorf("%s answered 202 but not in the log", id)
		}
	}
	if count != callers*each {
		t.Errorf("%d answered, want %d", count, callers*each)
	}
}

func TestNullFsyncServerAnswers500WhenTheLogFails(t *testing.T) {
	durable, err := OpenNullLog(filepath.Join(t.TempDir(), "wal"))
	if err != nil {
		t.Fatal(err)
	}
	if err := durable.Append([]byte("one")); err != nil {
		t.Fatalf("first append: %v", err)
	}
	if err := durable.Close(); err != nil {
		t.Fatal(err)
	}
	if err := durable.Append([]byte("two")); !errors.Is(err, wal.ErrClosed) {
		t.Fatalf("append after close: %v, want wal.ErrClosed", err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- ServeNull(ctx, listener, durable) }()
	client, err := bench.NewClient(bench.ClientOptions{Target: "http://" + listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	if reply, err := client.SKU("c", "s").Reserve(ctx, "r1", "u1"); err != nil || reply.Outcome == bench.OutcomeAccepted {
		t.Errorf("a request the log refused was answered %+v (err %v)", reply, err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
