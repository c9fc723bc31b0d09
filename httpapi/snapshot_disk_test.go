package httpapi_test

import (
	"context"
	"io/fs"
	"net/http"
	"strings"
	"syscall"
	"testing"
)

// TestSnapshotOnAFullDisk: a snapshot whose file could not be written (the
// disk is full: ENOSPC) is 503 UNAVAILABLE with Retry-After and a detail
// naming the error, not 500 INTERNAL (a bug); the SKU goes on selling, and
// the next snapshot on a disk with room succeeds.
func TestSnapshotOnAFullDisk(t *testing.T) {
	t.Parallel()
	faults := &faultEngine{}
	ts := startServer(t, serverOptions{faults: faults})
	ts.define(campaign("full", "15m", map[string]int{"s": 5}))
	full := &fs.PathError{Op: "write", Path: "snapshot.tmp", Err: syscall.ENOSPC}
	faults.setHooks(hooks{before: func(ctx context.Context, c engineCall) error {
		if c.kind == kindSnapshot {
			return full
		}
		return nil
	}})
	r := ts.admin(http.MethodPost, "/admin/campaigns/full/skus/s/snapshot", nil)
	want(t, r, http.StatusServiceUnavailable, "UNAVAILABLE")
	if !strings.Contains(r.str("detail"), "no space left on device") || r.header.Get("Retry-After") != "1" {
		t.Fatalf("snapshot on a full disk: %v (Retry-After %q), want a detail naming the error and Retry-After 1", r, r.header.Get("Retry-After"))
	}
	want(t, ts.reserve("full", "s", "r1", "u1"), http.StatusAccepted, "")
	faults.setHooks(hooks{})
	want(t, ts.admin(http.MethodPost, "/admin/campaigns/full/skus/s/snapshot", nil), http.StatusOK, "")
}
