package httpapi_test

import (
	"bytes"
	"encoding/hex"
	"net/http"
	"testing"

	"github.com/seckill/seckill/cmd/seckilld/seckilldtest"
)

// The real binary with entry passes from its environment: a pass issued by
// its route reserves once; after a cancel, a kill -9 and a restart, the same
// pass still gets the first answer (the closed reservation), from 64
// goroutines at once, and no second reservation exists.
func TestEntryPassAcrossKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the seckilld binary")
	}
	t.Parallel()
	bin := seckilldtest.Build(t, raceEnabled)
	dir := t.TempDir()
	env := []string{"SECKILL_ADMIN_TOKEN=" + testToken, "SECKILL_ENTRY_PASS_KEYS=" + testPassKeys,
		"SECKILL_ENTRY_PASS_SUBJECT_SECRET=" + hex.EncodeToString(testSubjectSecret),
		"SECKILL_ENTRY_PASS_ISSUER_TOKEN=" + testIssuerToken}
	d := seckilldtest.Start(t, bin, dir, env)
	issued := call(t, http.MethodPost, d.Base+"/v1/campaigns/demo/skus/sku-1/entry-passes",
		map[string]any{"user_id": "kim", "subjects": map[string]string{"device": "d-1"}},
		map[string]string{"Authorization": "Bearer " + testIssuerToken})
	want(t, issued, http.StatusOK, "")
	body := map[string]string{"user_id": "kim", "entry_pass": issued.str("entry_pass")}
	reserveURL := d.Base + "/v1/campaigns/demo/skus/sku-1/reservations"
	first := call(t, http.MethodPost, reserveURL, body, nil)
	want(t, first, http.StatusAccepted, "")
	want(t, call(t, http.MethodPost, d.Base+"/v1/reservations/"+first.str("reservation_id")+"/cancel", nil, nil), http.StatusOK, "")
	if err := d.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-d.Exited; !isKilled(err) {
		t.Fatalf("exit after SIGKILL: %v", err)
	}

	d = seckilldtest.Start(t, bin, dir, env)
	reserveURL = d.Base + "/v1/campaigns/demo/skus/sku-1/reservations"
	out := make([]response, 64)
	errs := make([]error, 64)
	parallel(64, func(i int) { out[i], errs[i] = try(http.MethodPost, reserveURL, body, nil) })
	for i, r := range out {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !bytes.Equal(r.raw, first.raw) {
			t.Fatalf("answer %d after the kill: %v, first %v", i, r, first)
		}
	}
	g := call(t, http.MethodGet, d.Base+"/v1/reservations/"+first.str("reservation_id"), nil, nil)
	if g.str("state") != "CLOSED" {
		t.Fatalf("reservation after the kill: %v", g)
	}
	a := call(t, http.MethodGet, d.Base+"/admin/campaigns/demo/skus/sku-1/audit", nil, map[string]string{"Authorization": "Bearer " + testToken})
	if n := num(a, "reservations"); a.body["invariant_ok"] != true || n != 1 {
		t.Fatalf("audit: %v", a)
	}
}
