package compare

import (
	"context"
	"errors"
	"time"

	"github.com/seckill/seckill/bench"
)

// ErrUnavailable marks a target that cannot run here (program missing,
// adapter not plugged in); the harness skips it and says why.
var ErrUnavailable = errors.New("target unavailable")

// SKURef names one SKU of one campaign and its sale limit.
type SKURef struct {
	// CampaignID names the campaign; each cell of the comparison gets a new one.
	CampaignID string
	// SKUID names the SKU.
	SKUID string
	// SaleLimit is the number of units to sell.
	SaleLimit int64
}

// Audit is a target's own account of one SKU after a cell, read from its
// state (not from what the clients were told).
type Audit struct {
	// Checked is false when the target keeps no state to audit (the null server).
	Checked bool
	// Sold is the number of units held by reservations.
	Sold int64
	// Available is the number of units left.
	Available int64
	// DuplicateUsers counts users holding more than one reservation.
	DuplicateUsers int64
	// Consistent is true when the target's counters agree with its records
	// (stock left + reservations = sale limit, one reservation per user, ...).
	Consistent bool
	// Detail explains an inconsistency in a few words.
	Detail string
}

// Target is one way of selling a SKU, driven by the comparison.
type Target interface {
	// Name is the short name in the tables.
	Name() string
	// Start launches the target's server, if any. An error wrapping
	// ErrUnavailable skips the target.
	Start(ctx context.Context) error
	// Prepare defines a new SKU and returns the Reserver that sells it.
	Prepare(ctx context.Context, sku SKURef) (bench.Reserver, error)
	// Audit reads the target's state of the SKU.
	Audit(ctx context.Context, sku SKURef) (Audit, error)
	// ServerCPU returns the CPU time the server processes used so far;
	// false when the server runs inside this process or has no process.
	ServerCPU() (time.Duration, bool)
	// Close stops the server and removes its files.
	Close() error
}
