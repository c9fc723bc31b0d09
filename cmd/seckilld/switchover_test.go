package main

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A switchover whose target does not acknowledge every record within
// switchoverCatchUp is aborted, and the primary serves on: its engine,
// closed for the handover, opens again in the same tenure (and registry),
// and the API, /healthz and the engine's metrics answer as before. The
// engine's metrics registered a second time in the tenure's registry made
// the reopening panic, and the runner, stopping, waited for a server that
// never served: the process kept the leader key and answered nothing.
func TestAbortedSwitchoverServesOn(t *testing.T) {
	_, l := startLedger(t)
	c := newCopyNet()
	dir := t.TempDir()
	a := startTestReplica(t, c, l, "a", filepath.Join(dir, "a"))
	waitRole(t, a, "primary")
	b := startTestReplica(t, c, l, "b", filepath.Join(dir, "b"))
	waitRole(t, b, "standby")
	waitPublished(t, a, "b")
	for deadline := time.Now().Add(time.Minute); getJSON(t, a.url+"/v1/campaigns/demo/skus/sku-1", "", nil) != http.StatusOK; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the primary never served the demo SKU's status")
		}
	}

	// b stays connected and caught up but one record behind: the
	// switchover begins, and b never acknowledges everything.
	c.mu.Lock()
	c.lag = map[string]uint64{"b": 1}
	c.mu.Unlock()
	client := &http.Client{Timeout: 10 * time.Second}
	ask := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, a.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	if code, body := ask("POST", replicaSwitchoverPath+"?to=b", ""); code != http.StatusAccepted {
		t.Fatalf("switchover: %d %s", code, body)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		code, body := ask("GET", replicaStatusPath, "")
		var st haState
		json.Unmarshal([]byte(body), &st)
		if code == http.StatusOK && strings.HasPrefix(st.Switchover, "aborted") && st.Role == "primary" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the switchover never said it aborted: %d %s", code, body)
		}
	}
	// The primary serves on: the API, and the engine's metrics of the
	// engine opened again.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		code, body := ask("POST", "/v1/campaigns/demo/skus/sku-1/reservations", `{"request_id":"after-abort","user_id":"u1"}`)
		if code == http.StatusAccepted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a reserve after the aborted switchover: %d %s", code, body)
		}
	}
	if code, body := ask("GET", "/healthz", ""); code != http.StatusOK || !strings.Contains(body, `"role":"primary"`) {
		t.Fatalf("/healthz after the aborted switchover: %d %s", code, body)
	}
	code, body := ask("GET", "/metrics", "")
	if code != http.StatusOK || !strings.Contains(body, "seckill_wal_fsync_seconds") || !strings.Contains(body, `seckill_replica_role{replica="a",replica_set="rs1",role="primary"} 1`) {
		t.Fatalf("/metrics after the aborted switchover: %d\n%s", code, body)
	}
}
