package compare

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/seckill/seckill/bench"
)

// SeckilldOptions configures the seckilld target.
type SeckilldOptions struct {
	// Binary is the server program (default ./bin/seckilld, built by
	// go build -o bin/seckilld ./cmd/seckilld).
	Binary string
	// WorkDir holds the server's temporary data directory.
	WorkDir string
	// MaxConns bounds the client's connections (at least the concurrency).
	MaxConns int
	// Timeout bounds one request.
	Timeout time.Duration
	// PaymentWindow is the campaigns' payment window.
	PaymentWindow time.Duration
	// EntryPassKeys, when set, starts the server with --entry-pass-keys
	// (kid:hex,...), so that campaigns may require passes.
	EntryPassKeys string
	// CPUProfile, when set, starts the server with --cpuprofile: a CPU
	// profile of the whole run, written at Close.
	CPUProfile string
}

// SeckilldTarget is ./bin/seckilld over HTTP with --fsync always.
type SeckilldTarget struct {
	options SeckilldOptions
	token   string
	serverHome
	client *bench.Client
}

// NewSeckilldTarget returns the target; Start launches the server.
func NewSeckilldTarget(options SeckilldOptions) *SeckilldTarget {
	if options.Binary == "" {
		options.Binary = "./bin/seckilld"
	}
	if options.PaymentWindow <= 0 {
		options.PaymentWindow = 15 * time.Minute
	}
	return &SeckilldTarget{options: options, token: "compare-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
}

// Name returns "seckilld".
func (t *SeckilldTarget) Name() string { return "seckilld" }

// Start launches the server with its data in a new directory.
func (t *SeckilldTarget) Start(ctx context.Context) error {
	if !isExecutable(t.options.Binary) {
		return unavailable("%s not found: build it with go build -o bin/seckilld ./cmd/seckilld", t.options.Binary)
	}
	dir, err := os.MkdirTemp(t.options.WorkDir, "seckill-compare-seckilld-")
	if err != nil {
		return err
	}
	t.dir = dir
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	dataDir := filepath.Join(dir, "data")
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		return err
	}
	argv := []string{t.options.Binary, "--addr", addr, "--data-dir", dataDir, "--admin-token", t.token, "--fsync", "always"}
	if t.options.EntryPassKeys != "" {
		argv = append(argv, "--entry-pass-keys", t.options.EntryPassKeys)
	}
	if t.options.CPUProfile != "" {
		argv = append(argv, "--cpuprofile", t.options.CPUProfile)
	}
	t.process, err = startProcess("seckilld", filepath.Join(dir, "seckilld.log"), nil, argv...)
	if err != nil {
		return err
	}
	if err := t.process.waitReady(ctx, dialProbe(addr)); err != nil {
		return err
	}
	t.base = "http://" + addr
	t.client, err = bench.NewClient(bench.ClientOptions{
		Target: "http://" + addr, AdminToken: t.token, MaxConns: t.options.MaxConns, Timeout: t.options.Timeout,
	})
	return err
}

// Prepare defines a campaign with the SKU through the admin API.
func (t *SeckilldTarget) Prepare(ctx context.Context, sku SKURef) (bench.Reserver, error) {
	return prepareHTTP(ctx, t.client, sku, t.options.PaymentWindow, nil)
}

// prepareHTTP defines a campaign of one SKU, open now, over the admin API,
// with the entry_pass object entryPass (nil: none), and returns client's
// Reserver of the SKU.
func prepareHTTP(ctx context.Context, client *bench.Client, sku SKURef, window time.Duration, entryPass *bench.EntryPassSpec) (bench.Reserver, error) {
	now := time.Now()
	err := client.PutCampaign(ctx, bench.CampaignSpec{
		CampaignID:     sku.CampaignID,
		StartAt:        bench.FormatTime(now.Add(-2 * time.Second).Truncate(time.Second)),
		EndAt:          bench.FormatTime(now.Add(24 * time.Hour).Truncate(time.Second)),
		PaymentWindow:  window.String(),
		ReleaseOnClose: true,
		SKUs:           []bench.SKUSpec{{SKUID: sku.SKUID, SaleLimit: sku.SaleLimit}},
		EntryPass:      entryPass,
	})
	if err != nil {
		return nil, err
	}
	return client.SKU(sku.CampaignID, sku.SKUID), nil
}

// Audit reads the admin audit endpoint.
func (t *SeckilldTarget) Audit(ctx context.Context, sku SKURef) (Audit, error) {
	report, err := t.client.Audit(ctx, sku.CampaignID, sku.SKUID)
	if err != nil {
		return Audit{}, err
	}
	return auditFromReport(sku, report), nil
}

// auditFromReport turns the server's audit into the comparison's.
func auditFromReport(sku SKURef, report bench.AuditReport) Audit {
	audit := Audit{Checked: true, Sold: report.Reserved + report.Confirmed, Available: report.Available}
	switch {
	case !report.InvariantOK || len(report.Violations) > 0:
		audit.Detail = "server reports invariant violations"
	case report.Available < 0:
		audit.Detail = "available < 0"
	case report.Available+report.Reserved+report.Confirmed != sku.SaleLimit:
		audit.Detail = "available + reserved + confirmed != sale_limit"
	default:
		audit.Consistent = true
	}
	return audit
}

// Close stops the server and removes its directory.
func (t *SeckilldTarget) Close() error {
	if t.client != nil {
		t.client.CloseIdle()
	}
	return t.shutdown(syscall.SIGTERM)
}
