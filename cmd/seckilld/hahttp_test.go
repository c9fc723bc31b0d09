package main

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplicaAdminRoutesRefuseQueriesAndBodies: a replica's own admin
// routes follow the API's rules: a query parameter other than the
// route's (switchover: to; status: none) or one given twice, and a body
// with anything in it, are 400 and ask nothing. A repeated ?to= is
// refused: which one was meant cannot be told.
func TestReplicaAdminRoutesRefuseQueriesAndBodies(t *testing.T) {
	_, l := startLedger(t)
	a := startTestReplica(t, newCopyNet(), l, "a", filepath.Join(t.TempDir(), "a"))
	waitRole(t, a, "primary")
	send := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, a.url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out map[string]any
		json.Unmarshal(b, &out)
		return resp.StatusCode, out
	}
	for _, c := range []struct{ method, path, body, reason, detail string }{
		{"POST", replicaSwitchoverPath + "?to=b&to=c", "", "BAD_REQUEST", `query parameter "to" repeated`},
		{"POST", replicaSwitchoverPath + "?to=b&x=1", "", "BAD_REQUEST", `query parameter "x" is not accepted here (accepted: to)`},
		{"POST", replicaSwitchoverPath + "?to=b", `{"x":1}`, "BAD_REQUEST", `unknown field "x"`},
		{"POST", replicaSwitchoverPath + "?to=b", `to=b`, "INVALID_JSON", ""},
		{"GET", replicaStatusPath + "?x=1", "", "BAD_REQUEST", `query parameter "x" is not accepted here`},
	} {
		if status, out := send(c.method, c.path, c.body); status != http.StatusBadRequest || out["error"] != c.reason ||
			!strings.Contains(out["detail"].(string), c.detail) {
			t.Errorf("%s %s %s: %d %v, want 400 %s (%s)", c.method, c.path, c.body, status, out, c.reason, c.detail)
		}
	}
	if status, out := send("GET", replicaStatusPath, ""); status != http.StatusOK || out["switchover"] != nil || out["role"] != "primary" {
		t.Fatalf("/admin/replica after the refused switchovers: %d %v", status, out)
	}
}
