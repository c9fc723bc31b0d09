package compare

import (
	"context"
	"net"
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
	go func() { served <- ServeNull(ctx, listener) }()
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
