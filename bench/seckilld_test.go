package bench

import (
	"context"
	"log/slog"
	"net"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/actors"
	"github.com/seckill/seckill/feed"
	"github.com/seckill/seckill/httpapi"
)

// serverOptions shape the in-process seckilld of a test.
type serverOptions struct {
	adminToken    string
	paymentSecret string
	// addr is the loopback address to listen on (default 127.0.0.1:0).
	addr string
	// wrap, when set, puts a misbehaving engine between httpapi and the
	// real one (misbehaving_test.go).
	wrap func(*actors.Engine) httpapi.Engine
	// config, when set, changes the HTTP API's settings.
	config func(*httpapi.Config)
}

// startSeckilld serves the real engine (fsync on, a temp data dir) and the
// real HTTP API on a loopback port, stopped with the test, and returns its
// base URL: the tool is tested against the service itself.
func startSeckilld(t *testing.T, options serverOptions) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	log := slog.New(slog.DiscardHandler)
	eng, err := actors.Open(actors.Config{DataDir: t.TempDir(), Logger: log, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	var engine httpapi.Engine = eng
	if options.wrap != nil {
		engine = options.wrap(eng)
	}
	config := httpapi.Config{Engine: engine, Feed: feed.New(eng), Lotteries: eng, AdminToken: options.adminToken,
		PaymentSecret: []byte(options.paymentSecret), Logger: log, Registry: reg}
	if config.AdminToken == "" {
		config.AdminToken = "admin"
	}
	if options.config != nil {
		options.config(&config)
	}
	srv, err := httpapi.New(config)
	if err != nil {
		eng.Close()
		t.Fatal(err)
	}
	addr := options.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		eng.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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

// apiTime is the API's format of times (timefmt.Layout).
var apiTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// The client's calls are the API's: a campaign it defines is accepted, its
// signed payment and its cancel are applied, and the times the server
// writes are read back (the server's own checks of bad bodies are
// httpapi's tests).
func TestClientCallsAgainstSeckilld(t *testing.T) {
	target := startSeckilld(t, serverOptions{adminToken: "admin", paymentSecret: "pay-secret"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound for a hung server
	defer cancel()
	client, err := NewClient(ClientOptions{Target: target, AdminToken: "admin", PaymentSecret: "pay-secret"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := client.PutCampaign(ctx, CampaignSpec{CampaignID: "calls", StartAt: FormatTime(now.Add(-time.Second)),
		EndAt: FormatTime(now.Add(time.Hour)), PaymentWindow: "15m", ReleaseOnClose: true,
		SKUs: []SKUSpec{{SKUID: "s", SaleLimit: 5}}}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, user := range []string{"u1", "u2"} {
		reply, err := client.SKU("calls", "s").Reserve(ctx, "r-"+user, user)
		if err != nil || reply.Outcome != OutcomeAccepted || reply.ReservationID == "" || reply.ExpireAt.Before(now) {
			t.Fatalf("reserve for %s: %+v %v", user, reply, err)
		}
		ids = append(ids, reply.ReservationID)
	}
	answer, status, err := client.Pay(ctx, ids[0], PaymentRequest{PaymentID: "p-1", Amount: 100, ReservationID: ids[0]})
	if err != nil || status != 200 || answer.State != "PAID" {
		t.Fatalf("signed payment: %d %+v %v", status, answer, err)
	}
	read, status, err := client.Reservation(ctx, ids[0])
	if err != nil || status != 200 || !apiTime.MatchString(read.ExpireAt) || !apiTime.MatchString(read.PaidAt) {
		t.Errorf("reservation's times: %d %+v %v", status, read, err)
	}
	answer, status, err = client.Cancel(ctx, ids[1])
	if err != nil || status != 200 || answer.State != "CLOSED" {
		t.Fatalf("cancel: %d %+v %v", status, answer, err)
	}
	answer, status, err = client.Cancel(ctx, ids[0])
	if err != nil || status != 409 || answer.Error != "NOT_CLOSABLE" {
		t.Errorf("cancel of a paid reservation: %d %+v %v", status, answer, err)
	}
}
