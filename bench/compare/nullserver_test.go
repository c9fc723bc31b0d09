package compare

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/seckill/seckill/bench"
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

func TestNullFsyncServerAnswersOnlyWhatItSynced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "null.wal")
	durable, err := openGroupSync(path)
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
				// Answered only after its group was written: the file holds it.
				if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), `"`+id+`"`) {
					t.Errorf("%s answered 202 but not in the file (err %v)", id, err)
					return
				}
			}
		}()
	}
	wait.Wait()
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if err := durable.close(); err != nil {
		t.Fatal(err)
	}
}

func TestGroupSyncReportsFailuresAndClose(t *testing.T) {
	durable, err := openGroupSync(filepath.Join(t.TempDir(), "null.wal"))
	if err != nil {
		t.Fatal(err)
	}
	group := durable.append([]byte("one"))
	if <-group.done; group.err != nil {
		t.Fatalf("first append: %v", group.err)
	}
	durable.file.Close() // the next write fails
	group = durable.append([]byte("two"))
	<-group.done
	if group.err == nil {
		t.Fatal("a failed write was reported durable")
	}
	if err := durable.close(); err == nil {
		t.Error("closing an already closed file reported no error")
	}
	group = durable.append([]byte("three"))
	<-group.done
	if !errors.Is(group.err, os.ErrClosed) {
		t.Fatalf("append after close: %v, want os.ErrClosed", group.err)
	}
}
