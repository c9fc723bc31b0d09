package bench

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/httpapi"
)

// startSeckilld serves the real engine (fsync on, a temp data dir) and the
// real HTTP API on a loopback port, so the tool's expectations are checked
// against the service itself and not only against fakeapi.
func startSeckilld(t *testing.T, adminToken, paymentSecret string) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	log := slog.New(slog.DiscardHandler)
	eng, err := actors.Open(actors.Config{DataDir: t.TempDir(), Logger: log, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: eng, AdminToken: adminToken, PaymentSecret: []byte(paymentSecret), Logger: log, Registry: reg})
	if err != nil {
		eng.Close()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		eng.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-served
		if err := eng.Close(); err != nil {
			t.Errorf("engine close: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func TestSeedAndPayflowAgainstSeckilld(t *testing.T) {
	target := startSeckilld(t, "admin", "pay-secret")
	status, result, output := runMain(t, "--target", target, "--admin-token", "admin", "--scenario", "seed",
		"--stock", "100", "--requests", "3000", "--concurrency", "32")
	if status != ExitPass {
		t.Fatalf("seed: exit %d\n%s", status, output)
	}
	if number(t, result, "accepted") != 100 || number(t, result, "oversold") != 0 || number(t, result, "duplicate_winners") != 0 {
		t.Errorf("seed result %v", result)
	}
	audit, _ := result["audit"].(map[string]any)
	if audit["ok"] != true || audit["reserved"] != 100.0 || audit["available"] != 0.0 {
		t.Errorf("seed audit %v", audit)
	}

	status, result, output = runMain(t, "--target", target, "--admin-token", "admin", "--scenario", "payflow",
		"--requests", "200", "--concurrency", "16", "--payment-window", "1s", "--payment-secret", "pay-secret")
	if status != ExitPass {
		t.Fatalf("payflow: exit %d\n%s", status, output)
	}
	payflow, _ := result["payflow"].(map[string]any)
	if payflow["paid"] == 0.0 || payflow["closed"] == 0.0 || payflow["refund_required"] == 0.0 || payflow["mismatches"] != 0.0 {
		t.Errorf("payflow %v", payflow)
	}
}
