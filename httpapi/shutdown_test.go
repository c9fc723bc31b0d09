package httpapi_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
)

// A Serve that starts after Shutdown (a replica promoted and stopped in
// the same instant) returns at once instead of accepting for ever, and so
// does one racing it; the listener is closed either way.
func TestShutdownEndsAServeStartedAfterIt(t *testing.T) {
	for _, order := range []string{"shutdown first", "together"} {
		t.Run(order, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			eng, err := actors.Open(actors.Config{DataDir: t.TempDir(), Logger: testLogger(t), Registerer: reg})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			srv, err := httpapi.New(httpapi.Config{Engine: eng, AdminToken: testToken, Logger: testLogger(t), Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			if order == "shutdown first" {
				if err := srv.Shutdown(context.Background()); err != nil {
					t.Fatalf("Shutdown: %v", err)
				}
				go func() { served <- srv.Serve(ln) }()
			} else {
				go func() { served <- srv.Serve(ln) }()
				if err := srv.Shutdown(context.Background()); err != nil {
					t.Fatalf("Shutdown: %v", err)
				}
			}
			select {
			case err := <-served:
				if err != nil {
					t.Fatalf("Serve after Shutdown: %v, want nil", err)
				}
			case <-time.After(time.Minute): // a bound for the hang this test looks for
				t.Fatal("Serve still accepting a minute after Shutdown")
			}
			if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("the listener after Shutdown: Accept = %v, want net.ErrClosed", err)
			}
		})
	}
}
